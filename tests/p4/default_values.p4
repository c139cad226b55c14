// Default values (P4_16 1.2.3, `...`) and the invalid header `{#}` (1.2.2): `...` for a whole
// value and as the rest of list and structure-valued expressions (a header given so is valid),
// `{#}` assigned, compared and in a struct default, casts that type both. ingress ORs a bit into
// h.c per check: 0x80 opt invalid, 0x40 opt valid, 0x20 the struct local, 0x10 the tuple and enum.
#include <core.p4>
#include <v1model.p4>

header eth_t { bit<48> dst; bit<48> src; bit<16> type; }
header h_t { bit<8> op; bit<16> b; bit<8> c; }
header opt_t { bit<8> x; bit<8> y; }
header_union u_t { opt_t o1; h_t o2; }
enum bit<8> Color { Red = 3, Green = 5 }
enum Plain { First, Second }
struct inner_t { bit<8> p; bool q; opt_t oh; }
struct headers_t { eth_t eth; h_t h; opt_t opt; opt_t extra; }
struct meta_t { bit<8> m; bool flag; Color col; inner_t inner; }

parser P(packet_in pkt, out headers_t hdr, inout meta_t meta, inout standard_metadata_t sm) {
    state start {
        pkt.extract(hdr.eth);
        pkt.extract(hdr.h);
        transition select(hdr.h.c) { 1: with_opt; default: accept; }
    }
    state with_opt { pkt.extract(hdr.opt); transition accept; }
}

control V(inout headers_t hdr, inout meta_t meta) { apply {} }

control I(inout headers_t hdr, inout meta_t meta, inout standard_metadata_t sm) {
    apply {
        sm.egress_spec = 1;
        inner_t loc = { p = 9, ... };
        tuple<bit<8>, bool> tup = { 4, ... };
        Plain pl = ...;
        if (hdr.h.op == 1) {
            hdr.opt = {#};                       // invalid now
        } else if (hdr.h.op == 2) {
            hdr.extra = { y = 0x22, ... };       // valid, x = 0
        } else if (hdr.h.op == 3) {
            hdr.extra = { ... };                 // valid, all zero
        } else if (hdr.h.op == 4) {
            opt_t t = ...;                       // invalid
            hdr.opt = t;
        } else if (hdr.h.op == 5) {
            meta.inner = ...;
            hdr.h.b = meta.inner.p ++ 8w1;
            if (meta.inner.oh.isValid()) { hdr.h.b = 0xBAD; }
        } else if (hdr.h.op == 6) {
            hdr.extra = (opt_t){ x = 0x11, ... };
        }
        if (hdr.opt == {#}) {
            hdr.h.c = hdr.h.c | 0x80;
        }
        if (hdr.opt != {#}) {
            hdr.h.c = hdr.h.c | 0x40;
        }
        if (!loc.q && loc.p == 9 && !loc.oh.isValid()) {
            hdr.h.c = hdr.h.c | 0x20;
        }
        if (tup[0] == 4 && !tup[1] && pl == Plain.First) {
            hdr.h.c = hdr.h.c | 0x10;
        }
    }
}

control E(inout headers_t hdr, inout meta_t meta, inout standard_metadata_t sm) { apply {} }
control C(inout headers_t hdr, inout meta_t meta) { apply {} }
control D(packet_out pkt, in headers_t hdr) {
    apply { pkt.emit(hdr.eth); pkt.emit(hdr.h); pkt.emit(hdr.opt); pkt.emit(hdr.extra); }
}

V1Switch(P(), V(), I(), E(), C(), D()) main;
