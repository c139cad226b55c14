// Calls end to end: copy-in/copy-out when arguments alias (a sub-control whose `in` and `inout`
// parameters get the same field), an action with two inout parameters, P4's evaluation order
// (a function with effects under || and ?: runs only when reached), a table apply inside a
// larger condition, and a table keyed on a slice that BMv2 cannot match directly.
#include <core.p4>
#include <v1model.p4>

header ethernet_t { bit<48> dst; bit<48> src; bit<16> ether_type; }
header c_t { bit<8> a; bit<8> b; bit<8> r1; bit<8> r2; bit<8> r3; bit<8> r4; }
struct headers_t { ethernet_t eth; c_t c; }
struct meta_t { bit<8> n; }

bit<8> inc(inout bit<8> x) {
    x = x + 1;
    return x;
}

control AddTwice(in bit<8> v, inout bit<8> acc) {
    apply {
        acc = acc + v;
        acc = acc + v;
    }
}

parser P(packet_in pkt, out headers_t hdr, inout meta_t meta, inout standard_metadata_t sm) {
    state start { pkt.extract(hdr.eth); pkt.extract(hdr.c); transition accept; }
}

control VC(inout headers_t hdr, inout meta_t meta) { apply { } }

control Ing(inout headers_t hdr, inout meta_t meta, inout standard_metadata_t sm) {
    AddTwice() add_twice;
    action swap(inout bit<8> p, inout bit<8> q) {
        bit<8> t = p;
        p = q;
        q = t;
    }
    action found() { }
    table k {
        key = { hdr.c.a[7:4] : exact @name("a_hi"); }
        actions = { found; NoAction; }
        default_action = NoAction();
        const entries = { 4w0xA : found(); }
    }
    apply {
        meta.n = hdr.c.r1;
        bool t = (hdr.c.a == 0) || (inc(meta.n) == 1);
        hdr.c.r1 = meta.n;
        hdr.c.r2 = hdr.c.b > 0x80 ? 8w0xFF : inc(meta.n);
        add_twice.apply(hdr.c.b, hdr.c.b);
        hdr.c.r3 = 1;
        hdr.c.r4 = 2;
        swap(hdr.c.r3, hdr.c.r4);
        if (k.apply().hit && t) {
            sm.egress_spec = 2;
        } else {
            sm.egress_spec = 1;
        }
    }
}

control Eg(inout headers_t hdr, inout meta_t meta, inout standard_metadata_t sm) { apply { } }
control CC(inout headers_t hdr, inout meta_t meta) { apply { } }
control Dep(packet_out pkt, in headers_t hdr) { apply { pkt.emit(hdr.eth); pkt.emit(hdr.c); } }

V1Switch(P(), VC(), Ing(), Eg(), CC(), Dep()) main;
