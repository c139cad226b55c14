// compound_assign: every compound assignment of P4_16 (`+=` `-=` `*=` `|=` `&=` `^=` `<<=` `>>=`
// `|+|=` `|-|=`), each `a op= b` meaning `a = a op b` at the lvalue's width (wrap-around,
// saturation); a compound assignment to a stack element whose index calls a function runs the
// call once (the lvalue is evaluated once).
#include <core.p4>
#include <v1model.p4>

header ethernet_t { bit<48> dst; bit<48> src; bit<16> ether_type; }
header d_t {
    bit<8> a; bit<8> b; bit<8> c; bit<8> d; bit<8> e; bit<8> f;
    bit<8> g; bit<8> h; bit<8> i; bit<8> j; bit<8> k; bit<16> w;
}
header s_t { bit<8> v; }

struct headers { ethernet_t eth; d_t d; s_t[2] s; }
struct metadata { bit<8> calls; }

bit<1> pick(inout bit<8> calls) {
    calls = calls + 1;
    return 1;
}

parser MyParser(packet_in pkt, out headers hdr, inout metadata meta,
                inout standard_metadata_t smeta) {
    state start {
        pkt.extract(hdr.eth);
        pkt.extract(hdr.d);
        pkt.extract(hdr.s.next);
        pkt.extract(hdr.s.next);
        transition accept;
    }
}

control MyVerify(inout headers hdr, inout metadata meta) { apply { } }

control MyIngress(inout headers hdr, inout metadata meta, inout standard_metadata_t smeta) {
    apply {
        smeta.egress_spec = 1;
        hdr.d.a += 5;
        hdr.d.b -= 3;
        hdr.d.c *= 3;
        hdr.d.d |= 0xF0;
        hdr.d.e &= 0x0F;
        hdr.d.f ^= 0xFF;
        hdr.d.g <<= 2;
        hdr.d.h >>= 3;
        hdr.d.i |+|= 200;
        hdr.d.j |-|= 10;
        hdr.d.w[11:4] += 1;
        hdr.s[pick(meta.calls)].v += 7;
        hdr.d.k = meta.calls;
    }
}

control MyEgress(inout headers hdr, inout metadata meta, inout standard_metadata_t smeta) {
    apply { }
}

control MyCompute(inout headers hdr, inout metadata meta) { apply { } }

control MyDeparser(packet_out pkt, in headers hdr) {
    apply {
        pkt.emit(hdr.eth);
        pkt.emit(hdr.d);
        pkt.emit(hdr.s);
    }
}

V1Switch(MyParser(), MyVerify(), MyIngress(), MyEgress(), MyCompute(), MyDeparser()) main;
