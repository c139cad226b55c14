// call_order: P4_16's calling convention (copy-in/copy-out) inside expressions. Operands and
// arguments are evaluated left to right, so a value read before a call keeps what it was even
// when the call's copy-out changes it (`a + inc(a)`, `add(e, inc(e))`), and an inout argument
// is copied in before a later argument's call (`twice(m, inc(m))`); a function's return value
// is assigned after its inout arguments are copied out (`b = clobber(b)` ends with the return
// value); an inout slice argument is copied back into its slice (`set_low(c[0:0])`, and a
// sub-control's `nib.apply(n[7:4])`); `switch (t.apply().action_run)` on a table that lists
// NoAction (and has no default_action) runs the NoAction branch, not `default`, on a miss; a
// switch on a call's value runs the call once; `return x + inc(x)` reads x before inc.
// Every expected byte was checked by running p4c's JSON on real simple_switch.
#include <core.p4>
#include <v1model.p4>

header d_t {
    bit<8> a;    // a + inc(a): a read before inc copies a + 1 out
    bit<8> r1;
    bit<8> b;    // b = clobber(b): clobber writes 0x55 into b, returns 0x77
    bit<8> c;    // set_low(c[0:0]) sets bit 0 of c
    bit<8> e;    // e = add(e, inc(e))
    bit<8> k;    // key of t
    bit<8> sw;   // which switch branch ran
    bit<8> m;    // twice(m, inc(m)): m copied in before inc changes it
    bit<8> n;    // nib.apply(n[7:4]): a sub-control's inout slice is copied back
    bit<8> s;    // switch (inc(s)): inc runs once
    bit<8> q;    // which case ran
    bit<8> u;    // u = plus_inc(u): return u + inc(u)
}

struct headers { d_t d; }
struct metadata { }

bit<8> inc(inout bit<8> x) {
    x = x + 1;
    return x;
}

bit<8> clobber(inout bit<8> x) {
    x = 0x55;
    return 0x77;
}

bit<8> add(in bit<8> x, in bit<8> y) {
    return x + y;
}

bit<8> plus_inc(inout bit<8> x) {
    return x + inc(x);
}

void twice(inout bit<8> x, in bit<8> y) {
    x = x + x + y;
}

parser MyParser(packet_in pkt, out headers hdr, inout metadata meta,
                inout standard_metadata_t smeta) {
    state start {
        pkt.extract(hdr.d);
        transition accept;
    }
}

control MyVerifyChecksum(inout headers hdr, inout metadata meta) { apply { } }

control Nibble(inout bit<4> n) {
    apply { n = n + 1; }
}

control MyIngress(inout headers hdr, inout metadata meta, inout standard_metadata_t smeta) {
    Nibble() nib;
    action set_low(inout bit<1> bit0) { bit0 = 1; }
    action mark(bit<8> v) { hdr.d.sw = v; }
    table t {
        key = { hdr.d.k : exact; }
        actions = { mark; NoAction; }
    }
    apply {
        smeta.egress_spec = 1;
        hdr.d.r1 = hdr.d.a + inc(hdr.d.a);
        hdr.d.b = clobber(hdr.d.b);
        set_low(hdr.d.c[0:0]);
        hdr.d.e = add(hdr.d.e, inc(hdr.d.e));
        twice(hdr.d.m, inc(hdr.d.m));
        nib.apply(hdr.d.n[7:4]);
        switch (inc(hdr.d.s)) {
            3: { hdr.d.q = 0x33; }
            4: { hdr.d.q = 0x44; }
            default: { hdr.d.q = 0xDD; }
        }
        hdr.d.u = plus_inc(hdr.d.u);
        switch (t.apply().action_run) {
            mark: { hdr.d.sw = hdr.d.sw + 1; }
            NoAction: { hdr.d.sw = 0xA1; }
            default: { hdr.d.sw = 0xD0; }
        }
    }
}

control MyEgress(inout headers hdr, inout metadata meta, inout standard_metadata_t smeta) {
    apply { }
}

control MyComputeChecksum(inout headers hdr, inout metadata meta) { apply { } }

control MyDeparser(packet_out pkt, in headers hdr) {
    apply { pkt.emit(hdr.d); }
}

V1Switch(MyParser(), MyVerifyChecksum(), MyIngress(), MyEgress(), MyComputeChecksum(),
         MyDeparser()) main;
