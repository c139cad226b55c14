// copy_semantics: P4's copy-in/copy-out calling convention and left-to-right evaluation, where
// a compiler that simply substitutes arguments would go wrong. The same field is passed to an
// `in` and an `inout` parameter of a sub-control and of a function (the `in` copy must not see
// the writes to the `inout` one); an action writes a field directly and through an `inout`
// parameter bound to that field (copy-out wins); and one expression calls a function with side
// effects twice (left operand first).
#include <core.p4>
#include <v1model.p4>

header ethernet_t { bit<48> dst; bit<48> src; bit<16> ether_type; }
header c_t {
    bit<8> x;   // Twice(x, x): x = 2 * x + 1
    bit<8> y;   // f(z, z): y = 2 * z + 1
    bit<8> z;   // f(z, z): z = z + 1
    bit<8> v;   // bump(c) * 16 + bump(c), c starting at v
    bit<8> u;   // c after both bumps: v + 2
    bit<8> w;   // alias_act(w): w + 1 (the direct write of 55 is overwritten at copy-out)
}

struct headers {
    ethernet_t eth;
    c_t        c;
}
struct metadata {
    bit<8> c;
}

control Twice(in bit<8> a, inout bit<8> b) {
    apply {
        b = a + 1;
        b = b + a;
    }
}

bit<8> f(inout bit<8> a, in bit<8> b) {
    a = a + 1;
    return a + b;
}

bit<8> bump(inout bit<8> counter) {
    counter = counter + 1;
    return counter;
}

parser MyParser(packet_in pkt, out headers hdr, inout metadata meta,
                inout standard_metadata_t smeta) {
    state start {
        pkt.extract(hdr.eth);
        pkt.extract(hdr.c);
        transition accept;
    }
}

control MyVerifyChecksum(inout headers hdr, inout metadata meta) { apply { } }

control MyIngress(inout headers hdr, inout metadata meta, inout standard_metadata_t smeta) {
    Twice() twice;

    action alias_act(inout bit<8> p) {
        hdr.c.w = 0x55;
        p = p + 1;
    }

    apply {
        twice.apply(hdr.c.x, hdr.c.x);
        hdr.c.y = f(hdr.c.z, hdr.c.z);
        meta.c = hdr.c.v;
        hdr.c.v = bump(meta.c) * 16 + bump(meta.c);
        hdr.c.u = meta.c;
        alias_act(hdr.c.w);
        smeta.egress_spec = 1;
    }
}

control MyEgress(inout headers hdr, inout metadata meta, inout standard_metadata_t smeta) {
    apply { }
}

control MyComputeChecksum(inout headers hdr, inout metadata meta) { apply { } }

control MyDeparser(packet_out pkt, in headers hdr) {
    apply {
        pkt.emit(hdr.eth);
        pkt.emit(hdr.c);
    }
}

V1Switch(MyParser(), MyVerifyChecksum(), MyIngress(), MyEgress(), MyComputeChecksum(),
         MyDeparser()) main;
