// P4_16 1.2.4's expression forms: a header stack expression `(H[3]){...}` (assigned and
// declared), a cast of a value to its own type (a header, a bit<8>), and `==`/`!=` between a
// tuple and a list. ingress writes what it found into hdr.r.
#include <core.p4>
#include <v1model.p4>

header eth_t { bit<48> dst; bit<48> src; bit<16> type; }
header e_t { bit<8> v; bit<8> w; }
header r_t { bit<8> flags; }
struct headers_t { eth_t eth; e_t e; e_t[3] s; r_t r; }
struct meta_t { bit<8> m; }

parser P(packet_in pkt, out headers_t hdr, inout meta_t meta, inout standard_metadata_t sm) {
    state start { pkt.extract(hdr.eth); pkt.extract(hdr.e); transition accept; }
}
control V(inout headers_t hdr, inout meta_t meta) { apply {} }
control I(inout headers_t hdr, inout meta_t meta, inout standard_metadata_t sm) {
    apply {
        sm.egress_spec = 1;
        hdr.r.setValid();
        hdr.r.flags = 0;
        if (hdr.e.v == 1) {
            hdr.s = (e_t[3]){ {1, 2}, (e_t){#}, {5, 6} };
        } else {
            e_t[3] t = (e_t[3]){ (e_t){#}, {3, 4}, ... };
            hdr.s = t;
        }
        hdr.e = (e_t)hdr.e;
        hdr.e.w = (bit<8>)hdr.e.w + 1;
        tuple<bit<8>, bit<8>> pair = { hdr.e.v, hdr.e.w };
        if (pair == { 1, 3 }) { hdr.r.flags = hdr.r.flags | 1; }
        if (pair != { 1, 3 }) { hdr.r.flags = hdr.r.flags | 2; }
    }
}
control E(inout headers_t hdr, inout meta_t meta, inout standard_metadata_t sm) { apply {} }
control C(inout headers_t hdr, inout meta_t meta) { apply {} }
control D(packet_out pkt, in headers_t hdr) {
    apply { pkt.emit(hdr.eth); pkt.emit(hdr.e); pkt.emit(hdr.s); pkt.emit(hdr.r); }
}
V1Switch(P(), V(), I(), E(), C(), D()) main;
