// desugared_forms: forms inaemu's front end rewrites into simpler ones (P4_16 semantics kept):
// `==`/`!=` on whole headers (both invalid, or both valid with equal fields), structs and header
// unions; a nested slice as an lvalue; a call inside a header-stack index; `t.apply().hit` inside
// `?:` and as a function argument; the don't-care argument `_`; a union's isValid() as a table
// key; `lookahead<T>()` inside an expression and as a statement (a statement that reads past
// the end of the packet is a PacketTooShort error); a table applied under `&&` outside an `if`
// runs only when the left operand is true.
#include <core.p4>
#include <v1model.p4>

header ethernet_t { bit<48> dst; bit<48> src; bit<16> ether_type; }
header p_t { bit<8> x; bit<8> y; }
header q_t { bit<16> z; }
header_union u_t { p_t p; q_t q; }
header r_t {
    bit<8> peek;    // the byte after r, read by lookahead<bit<8>>() + 1
    bit<8> hdr_eq;  // 1: a == b, 2: a != b (a, b: p_t, b invalid when sel has bit 0 set)
    bit<8> st_eq;   // 1: meta.m1 == meta.m2 (structs)
    bit<8> un_eq;   // 1: u1 == u2 (unions; both hold p with the same bytes)
    bit<16> w;      // w[11:0][7:4] = 0xA
    bit<8> idx;     // stack element chosen by a call: s[one()].v = 0x77; one() counts calls
    bit<8> hit;     // t.apply().hit ? 0x11 : 0x22
    bit<8> arg;     // twice(t2.apply().miss): 0x30 or 0x31
    bit<8> dc;      // written by a call whose out argument is `_`
    bit<8> ukey;    // 0xAA when the union key table (u1.isValid()) hits
    bit<8> sel;
    bit<8> sc;      // (sel == 2 && t3.apply().hit) ? 1 : 0
    bit<8> ran;     // 0x33 when t3's action ran: t3 is applied only when sel == 2
}
header s_t { bit<8> v; }
struct pair_t { bit<8> a; bit<8> b; }

struct headers {
    ethernet_t eth; r_t r; p_t a; p_t b; u_t u1; u_t u2; s_t[2] s;
}
struct metadata { pair_t m1; pair_t m2; bit<8> calls; }

bit<1> one(inout bit<8> calls) { calls = calls + 1; return 1; }
bit<8> twice(in bool miss) { return miss ? 8w0x31 : 8w0x30; }
void fill(out bit<8> ignored, out bit<8> kept) { ignored = 0x99; kept = 0x5A; }

parser MyParser(packet_in pkt, out headers hdr, inout metadata meta,
                inout standard_metadata_t smeta) {
    state start {
        pkt.extract(hdr.eth);
        pkt.extract(hdr.r);
        hdr.r.peek = pkt.lookahead<bit<8>>() + 1;
        pkt.extract(hdr.a);
        transition select(hdr.r.sel[0:0]) {
            1: unions;
            default: second;
        }
    }
    state second {
        pkt.extract(hdr.b);
        transition unions;
    }
    state unions {
        pkt.extract(hdr.u1.p);
        pkt.extract(hdr.u2.p);
        pkt.extract(hdr.s.next);
        pkt.extract(hdr.s.next);
        pkt.lookahead<bit<16>>();
        transition accept;
    }
}

control MyVerify(inout headers hdr, inout metadata meta) { apply { } }

control MyIngress(inout headers hdr, inout metadata meta, inout standard_metadata_t smeta) {
    action nop() { }
    action mark() { hdr.r.ukey = 0xAA; }
    action ran3() { hdr.r.ran = 0x33; }
    table t3 {
        key = { hdr.r.sel : exact; }
        actions = { ran3; nop; }
        const entries = { 0x02 : ran3(); 0x05 : ran3(); }
        default_action = nop();
    }
    table t {
        key = { hdr.r.sel : exact; }
        actions = { nop; }
        const entries = { 0x02 : nop(); }
    }
    table t2 {
        key = { hdr.r.sel : exact; }
        actions = { nop; }
        const entries = { 0x04 : nop(); }
    }
    table by_union {
        key = { hdr.u1.isValid() : exact; }
        actions = { mark; nop; }
        const entries = { true : mark(); }
        default_action = nop();
    }
    apply {
        smeta.egress_spec = 1;
        hdr.r.hdr_eq = 0;
        if (hdr.a == hdr.b) { hdr.r.hdr_eq = 1; }
        if (hdr.a != hdr.b) { hdr.r.hdr_eq = hdr.r.hdr_eq + 2; }
        meta.m1 = { hdr.a.x, 1 };
        meta.m2 = { hdr.a.y, 1 };
        hdr.r.st_eq = meta.m1 == meta.m2 ? 8w1 : 8w0;
        hdr.r.un_eq = hdr.u1 == hdr.u2 ? 8w1 : 8w0;
        hdr.r.w[11:0][7:4] = 0xA;
        hdr.s[one(meta.calls)].v = 0x77;
        hdr.r.idx = meta.calls;
        hdr.r.hit = t.apply().hit ? 8w0x11 : 8w0x22;
        hdr.r.arg = twice(t2.apply().miss);
        fill(_, hdr.r.dc);
        by_union.apply();
        hdr.r.sc = hdr.r.sel == 0x02 && t3.apply().hit ? 8w1 : 8w0;
    }
}

control MyEgress(inout headers hdr, inout metadata meta, inout standard_metadata_t smeta) {
    apply { }
}

control MyCompute(inout headers hdr, inout metadata meta) { apply { } }

control MyDeparser(packet_out pkt, in headers hdr) {
    apply {
        pkt.emit(hdr.eth);
        pkt.emit(hdr.r);
        pkt.emit(hdr.a);
        pkt.emit(hdr.b);
        pkt.emit(hdr.u1);
        pkt.emit(hdr.u2);
        pkt.emit(hdr.s);
    }
}

V1Switch(MyParser(), MyVerify(), MyIngress(), MyEgress(), MyCompute(), MyDeparser()) main;
