// Methods and indexes on what a function returns (p4c's issue3001 samples): `f().isValid()`
// on a returned header, `g().h.isValid()` on a returned union's member, `s()[1].isValid()`
// and `s()[0].v` on a returned stack. Each call runs once, into a local, before the
// statement. ingress writes what it found into hdr.r.
#include <core.p4>
#include <v1model.p4>

header eth_t { bit<48> dst; bit<48> src; bit<16> type; }
header e_t { bit<8> v; }
header_union u_t { e_t h; eth_t other; }
header r_t { bit<8> flags; bit<8> v; }
struct headers_t { eth_t eth; e_t e; r_t r; }
struct meta_t { bit<8> calls; }

e_t copy_of(in e_t x) { return x; }
u_t union_of(in e_t x) { u_t u; if (x.v > 5) { u.h = x; } return u; }
e_t[2] stack_of(in e_t x, inout bit<8> calls) {
    e_t[2] s;
    s[0] = { x.v + 1 };
    if (x.v == 9) { s[1] = x; }
    calls = calls + 1;
    return s;
}

parser P(packet_in pkt, out headers_t hdr, inout meta_t meta, inout standard_metadata_t sm) {
    state start {
        pkt.extract(hdr.eth);
        transition select(hdr.eth.type) { 0x88B5: with_e; default: accept; }
    }
    state with_e { pkt.extract(hdr.e); transition accept; }
}
control V(inout headers_t hdr, inout meta_t meta) { apply {} }
control I(inout headers_t hdr, inout meta_t meta, inout standard_metadata_t sm) {
    apply {
        sm.egress_spec = 1;
        meta.calls = 0;
        hdr.r.setValid();
        hdr.r.flags = 0;
        if (copy_of(hdr.e).isValid()) { hdr.r.flags = hdr.r.flags | 1; }
        if (union_of(hdr.e).h.isValid()) { hdr.r.flags = hdr.r.flags | 2; }
        if (stack_of(hdr.e, meta.calls)[1].isValid()) { hdr.r.flags = hdr.r.flags | 4; }
        hdr.r.v = 0;
        if (hdr.e.isValid()) { hdr.r.v = stack_of(hdr.e, meta.calls)[0].v; }
        hdr.r.flags = hdr.r.flags | (meta.calls << 4);
    }
}
control E(inout headers_t hdr, inout meta_t meta, inout standard_metadata_t sm) { apply {} }
control C(inout headers_t hdr, inout meta_t meta) { apply {} }
control D(packet_out pkt, in headers_t hdr) { apply { pkt.emit(hdr.eth); pkt.emit(hdr.e); pkt.emit(hdr.r); } }
V1Switch(P(), V(), I(), E(), C(), D()) main;
