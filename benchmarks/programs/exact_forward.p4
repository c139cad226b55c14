// Benchmark (a): L2 forwarding by one exact-match table on the destination MAC.
// exact_forward.json is its BMv2 JSON, written by hand in p4c's shape.
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
    action forward(bit<9> port) { smeta.egress_spec = port; }
    action drop() { mark_to_drop(smeta); }
    table dmac {
        key = { hdr.eth.dst : exact; }
        actions = { forward; drop; }
        default_action = drop();
        size = 4096;
    }
    apply { dmac.apply(); }
}

control EgressImpl(inout headers_t hdr, inout meta_t meta,
                   inout standard_metadata_t smeta) { apply { } }
control ComputeImpl(inout headers_t hdr, inout meta_t meta) { apply { } }
control DeparserImpl(packet_out pkt, in headers_t hdr) { apply { pkt.emit(hdr.eth); } }

V1Switch(ParserImpl(), VerifyImpl(), IngressImpl(), EgressImpl(),
         ComputeImpl(), DeparserImpl()) main;
