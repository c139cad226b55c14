// Parameters with default values (P4_16 6.8.2): an action, a control and a parser called or
// applied with fewer arguments take the defaults (p4c's issue1937 samples); with every argument
// they take the given ones.
#include <core.p4>
#include <v1model.p4>

header ethernet_t { bit<48> dst; bit<48> src; bit<16> ether_type; }
header vals_t { bit<8> a; bit<8> b; bit<8> c; bit<8> d; bit<8> e; bit<8> f; bit<8> g; }
struct pair_t { bit<8> lo; bit<8> hi; }
struct headers_t { ethernet_t eth; vals_t v; }
struct meta_t { }

action quarter(out bit<8> x, in bit<8> y = 20) { x = y >> 2; }
control Add(inout bit<8> x, in bit<8> y = 3) { apply { x = x + y; } }
control Mix(inout bit<8> x, in pair_t p = { 1, 2 }) { apply { x = x + p.lo + p.hi; } }   // (p4c's issue2303)
parser Read(packet_in pkt, out vals_t v, in bit<8> bias = 7) {
    state start { pkt.extract(v); v.f = v.f + bias; transition accept; }
}

parser P(packet_in pkt, out headers_t hdr, inout meta_t meta, inout standard_metadata_t sm) {
    state start {
        pkt.extract(hdr.eth);
        transition select(hdr.eth.ether_type) { 0x88B5: vals; 0x88B6: vals_bias; default: accept; }
    }
    state vals { Read.apply(pkt, hdr.v); transition accept; }
    state vals_bias { Read.apply(pkt, hdr.v, 8w1); transition accept; }
}
control VC(inout headers_t hdr, inout meta_t meta) { apply { } }
control I(inout headers_t hdr, inout meta_t meta, inout standard_metadata_t sm) {
    apply {
        sm.egress_spec = 1;
        quarter(hdr.v.a, hdr.v.a);      // a / 4
        quarter(hdr.v.b);               // 20 / 4 = 5
        Add.apply(hdr.v.c);             // c + 3
        Add.apply(hdr.v.d, hdr.v.e);    // d + e
        Mix.apply(hdr.v.g);             // g + 1 + 2, a struct's default
    }
}
control E(inout headers_t hdr, inout meta_t meta, inout standard_metadata_t sm) { apply { } }
control CC(inout headers_t hdr, inout meta_t meta) { apply { } }
control D(packet_out pkt, in headers_t hdr) { apply { pkt.emit(hdr.eth); pkt.emit(hdr.v); } }
V1Switch(P(), VC(), I(), E(), CC(), D()) main;
