// For the --use-files tests: every packet is stamped with the order in which the switch ran it
// (a register counter into the source MAC) and the port it arrived on (into the EtherType), so
// output pcaps show the processing order across ports. The destination MAC's last byte is the
// egress port; 0xff drops. Needs no table entries.
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
    register<bit<32>>(1) order;
    apply {
        bit<32> n;
        order.read(n, 0);
        order.write(0, n + 1);
        hdr.eth.src = (bit<48>)n;
        hdr.eth.ether_type = (bit<16>)smeta.ingress_port;
        if (hdr.eth.dst[7:0] == 0xff) {
            mark_to_drop(smeta);
        } else {
            smeta.egress_spec = (bit<9>)hdr.eth.dst[7:0];
        }
    }
}

control EgressImpl(inout headers_t hdr, inout meta_t meta,
                   inout standard_metadata_t smeta) { apply { } }
control ComputeImpl(inout headers_t hdr, inout meta_t meta) { apply { } }
control DeparserImpl(packet_out pkt, in headers_t hdr) { apply { pkt.emit(hdr.eth); } }

V1Switch(ParserImpl(), VerifyImpl(), IngressImpl(), EgressImpl(),
         ComputeImpl(), DeparserImpl()) main;
