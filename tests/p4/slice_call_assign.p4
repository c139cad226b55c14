// A function's result assigned to a slice (p4c's issue1538 writes `f[15:0] = g(f[15:0])`): the
// call is made into a temporary first, then the slice's bits are written and the others kept.
#include <core.p4>
#include <v1model.p4>

header ethernet_t { bit<48> dst; bit<48> src; bit<16> ether_type; }
struct headers_t { ethernet_t eth; }
struct meta_t { }

bit<16> incr(in bit<16> x) { return x + 1; }
bit<16> twox_plus1(in bit<16> x) { return x + incr(x); }

parser P(packet_in pkt, out headers_t hdr, inout meta_t meta, inout standard_metadata_t sm) {
    state start { pkt.extract(hdr.eth); transition accept; }
}
control VC(inout headers_t hdr, inout meta_t meta) { apply { } }
control I(inout headers_t hdr, inout meta_t meta, inout standard_metadata_t sm) {
    action bump() { hdr.eth.dst[31:16] = incr(hdr.eth.dst[31:16]); }
    table t { actions = { bump; } default_action = bump(); }
    apply {
        sm.egress_spec = 1;
        hdr.eth.src[15:0] = twox_plus1(hdr.eth.src[15:0]);
        t.apply();
    }
}
control E(inout headers_t hdr, inout meta_t meta, inout standard_metadata_t sm) { apply { } }
control CC(inout headers_t hdr, inout meta_t meta) { apply { } }
control D(packet_out pkt, in headers_t hdr) { apply { pkt.emit(hdr.eth); } }
V1Switch(P(), VC(), I(), E(), CC(), D()) main;
