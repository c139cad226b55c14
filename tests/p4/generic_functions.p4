// Generic functions over generic headers (P4_16 1.2.2): `T first_of<T>(in pair_t<T, bit<16>>
// p)` called with two specializations of pair_t (T bound from the argument's type, the result
// of type T), and `void bump<T>(inout pair_t<T, bit<16>> p)` writing through an inout one.
#include <core.p4>
#include <v1model.p4>

header eth_t { bit<48> dst; bit<48> src; bit<16> type; }
header pair_t<A, B> { A first; B second; }
struct headers_t { eth_t eth; pair_t<bit<8>, bit<16>> a; pair_t<bit<32>, bit<16>> b; }
struct meta_t { bit<8> m; }

T first_of<T>(in pair_t<T, bit<16>> p) { return p.first; }
bit<16> second_of<T>(in pair_t<T, bit<16>> p) { return p.second; }
void bump<T>(inout pair_t<T, bit<16>> p) { p.second = p.second + 1; }

parser P(packet_in pkt, out headers_t hdr, inout meta_t meta, inout standard_metadata_t sm) {
    state start { pkt.extract(hdr.eth); pkt.extract(hdr.a); pkt.extract(hdr.b); transition accept; }
}
control V(inout headers_t hdr, inout meta_t meta) { apply {} }
control I(inout headers_t hdr, inout meta_t meta, inout standard_metadata_t sm) {
    apply {
        sm.egress_spec = 1;
        bit<8> x = first_of(hdr.a);
        bit<32> y = first_of(hdr.b);
        bump(hdr.a);
        bump(hdr.b);
        hdr.eth.type = second_of(hdr.a) + second_of(hdr.b);
        hdr.eth.dst[7:0] = x;
        hdr.eth.src[31:0] = y;
    }
}
control E(inout headers_t hdr, inout meta_t meta, inout standard_metadata_t sm) { apply {} }
control C(inout headers_t hdr, inout meta_t meta) { apply {} }
control D(packet_out pkt, in headers_t hdr) { apply { pkt.emit(hdr.eth); pkt.emit(hdr.a); pkt.emit(hdr.b); } }
V1Switch(P(), V(), I(), E(), C(), D()) main;
