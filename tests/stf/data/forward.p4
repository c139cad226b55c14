// Forwards by ingress port through an exact table; PORT_OFFSET can be overridden with -D.
#include <core.p4>
#include <v1model.p4>

#ifndef PORT_OFFSET
#define PORT_OFFSET 0
#endif

header ethernet_h { bit<48> dst; bit<48> src; bit<16> ether_type; }
struct headers_t { ethernet_h eth; }
struct meta_t { }

parser ParserImpl(packet_in pkt, out headers_t hdr, inout meta_t meta,
                  inout standard_metadata_t smeta) {
    state start { pkt.extract(hdr.eth); transition accept; }
}

control VerifyImpl(inout headers_t hdr, inout meta_t meta) { apply { } }

control IngressImpl(inout headers_t hdr, inout meta_t meta, inout standard_metadata_t smeta) {
    action forward(bit<9> port) { smeta.egress_spec = port + PORT_OFFSET; }
    action drop() { mark_to_drop(smeta); }
    table port_map {
        key = { smeta.ingress_port : exact; }
        actions = { forward; drop; }
        default_action = drop();
    }
    apply { port_map.apply(); }
}

control EgressImpl(inout headers_t hdr, inout meta_t meta, inout standard_metadata_t smeta) {
    apply { }
}

control ComputeImpl(inout headers_t hdr, inout meta_t meta) { apply { } }

control DeparserImpl(packet_out pkt, in headers_t hdr) { apply { pkt.emit(hdr.eth); } }

V1Switch(ParserImpl(), VerifyImpl(), IngressImpl(), EgressImpl(), ComputeImpl(),
         DeparserImpl()) main;
