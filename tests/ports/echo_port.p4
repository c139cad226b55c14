// The packet-in tests' program: every frame goes back out of the port it came in on (port 511,
// the drop port, drops it), with that port number in the low bits of its source MAC, so a test
// sees which ingress port the switch gave it.
#include <core.p4>
#include <v1model.p4>

header ethernet_h { bit<48> dst; bit<48> src; bit<16> ether_type; }
struct headers_t { ethernet_h eth; }
struct meta_t { }

parser ParserImpl(packet_in pkt, out headers_t hdr, inout meta_t meta,
                  inout standard_metadata_t smeta) {
    state start { pkt.extract(hdr.eth); transition accept; }
}

control VerifyImpl(inout headers_t hdr, inout meta_t meta) { apply { } }

control IngressImpl(inout headers_t hdr, inout meta_t meta,
                    inout standard_metadata_t smeta) {
    apply {
        smeta.egress_spec = smeta.ingress_port;
        hdr.eth.src = (bit<48>)smeta.ingress_port;
    }
}

control EgressImpl(inout headers_t hdr, inout meta_t meta,
                   inout standard_metadata_t smeta) { apply { } }
control ComputeImpl(inout headers_t hdr, inout meta_t meta) { apply { } }
control DeparserImpl(packet_out pkt, in headers_t hdr) { apply { pkt.emit(hdr.eth); } }

V1Switch(ParserImpl(), VerifyImpl(), IngressImpl(), EgressImpl(),
         ComputeImpl(), DeparserImpl()) main;
