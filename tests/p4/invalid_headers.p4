// `{#}` and `...` for header stacks, header unions and the other types' defaults: a stack
// assigned from a list (an element left out by `...`, one given as `(e_t){#}`), a union made
// invalid and compared with `{#}`, a function returning `{#}`, `(e_t){#}` and `(e_t){v = 1}` as
// arguments, a stack local from `...`, and a struct of an enum with and without an underlying
// type, an error, a typedef'd bit<8>, an int<8> and a stack, all from `...`. ingress writes
// its findings into h.r: 0x1F the struct's defaults, 0x20 and 0x40 the arguments' validity,
// 0x80 the union invalid.
#include <core.p4>
#include <v1model.p4>

header eth_t { bit<48> dst; bit<48> src; bit<16> type; }
header h_t { bit<8> op; bit<8> r; }
header e_t { bit<8> v; }
header f_t { bit<16> w; }
header_union u_t { e_t e; f_t f; }
enum bit<8> Color { Red = 3, Green = 5 }
enum Plain { First, Second }
typedef bit<8> Tag_t;
struct all_t { Color col; Plain pl; error err; Tag_t tag; int<8> i; e_t[2] st; }
struct headers_t { eth_t eth; h_t h; e_t[2] s; u_t u; }
struct meta_t { bit<8> m; }

parser P(packet_in pkt, out headers_t hdr, inout meta_t meta, inout standard_metadata_t sm) {
    state start {
        pkt.extract(hdr.eth);
        pkt.extract(hdr.h);
        pkt.extract(hdr.s.next);
        pkt.extract(hdr.u.e);
        transition accept;
    }
}

control V(inout headers_t hdr, inout meta_t meta) { apply {} }

e_t invalid_e() { return {#}; }
bit<8> count_valid(in e_t x) { return x.isValid() ? 8w1 : 8w0; }

control I(inout headers_t hdr, inout meta_t meta, inout standard_metadata_t sm) {
    apply {
        sm.egress_spec = 1;
        all_t a = ...;
        bit<8> flags = 0;
        if (a.col == (Color)8w0) { flags = flags | 1; }
        if (a.pl == Plain.First) { flags = flags | 2; }
        if (a.err == error.NoError) { flags = flags | 4; }
        if (a.tag == (Tag_t)0 && a.i == 0) { flags = flags | 8; }
        if (!a.st[0].isValid() && !a.st[1].isValid()) { flags = flags | 16; }
        if (hdr.h.op == 1) {
            hdr.s = { {0x44}, ... };            // element 0 valid 0x44, element 1 invalid
        } else if (hdr.h.op == 2) {
            hdr.s = { (e_t){#}, {0x55} };
        } else if (hdr.h.op == 3) {
            hdr.u = {#};
        } else if (hdr.h.op == 4) {
            hdr.s[0] = invalid_e();
        } else if (hdr.h.op == 5) {
            flags = flags | (count_valid((e_t){#}) << 5);
            flags = flags | (count_valid((e_t){v = 1}) << 6);
        } else if (hdr.h.op == 6) {
            e_t[2] t = ...;
            hdr.s = t;
        }
        if (hdr.u == {#}) { flags = flags | 0x80; }
        hdr.h.r = flags;
    }
}

control E(inout headers_t hdr, inout meta_t meta, inout standard_metadata_t sm) { apply {} }
control C(inout headers_t hdr, inout meta_t meta) { apply {} }
control D(packet_out pkt, in headers_t hdr) {
    apply { pkt.emit(hdr.eth); pkt.emit(hdr.h); pkt.emit(hdr.s); pkt.emit(hdr.u); }
}

V1Switch(P(), V(), I(), E(), C(), D()) main;
