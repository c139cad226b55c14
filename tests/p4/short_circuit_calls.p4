// short_circuit_calls: calls inside a header-stack index and `f(x).field` where `&&`, `||` or
// `?:` may skip them (inaemu computes them in statements of their own, so it computes such a
// condition or value with ifs, in evaluation order). Each call counts itself in meta.calls;
// the count is reported, so a call that runs when it should not is seen.
#include <core.p4>
#include <v1model.p4>

header ethernet_t { bit<48> dst; bit<48> src; bit<16> ether_type; }
header r_t {
    bit<8> k;
    bit<8> a;      // 1 when k == 1 && s[one()].v == 2
    bit<8> b;      // k == 2 && s[one()].v == 3 ? 0xB1 : 0xB0
    bit<8> c;      // k == 3 ? s[one()].v : 0xC0
    bit<8> d;      // k != 4 || pair(k).hi == 4 ? 0xD1 : 0xD0
    bit<8> calls;  // how many times one() and pair() ran
}
header s_t { bit<8> v; }
struct pair_t { bit<8> lo; bit<8> hi; }

struct headers { ethernet_t eth; r_t r; s_t[2] s; }
struct metadata { bit<8> calls; }

bit<1> one(inout bit<8> calls) { calls = calls + 1; return 1; }
pair_t pair(in bit<8> x, inout bit<8> calls) { calls = calls + 1; return { x, x }; }

parser MyParser(packet_in pkt, out headers hdr, inout metadata meta,
                inout standard_metadata_t smeta) {
    state start {
        pkt.extract(hdr.eth);
        pkt.extract(hdr.r);
        pkt.extract(hdr.s.next);
        pkt.extract(hdr.s.next);
        transition accept;
    }
}

control MyVerify(inout headers hdr, inout metadata meta) { apply { } }

control MyIngress(inout headers hdr, inout metadata meta, inout standard_metadata_t smeta) {
    apply {
        smeta.egress_spec = 1;
        meta.calls = 0;
        if (hdr.r.k == 1 && hdr.s[one(meta.calls)].v == 2) {
            hdr.r.a = 1;
        }
        hdr.r.b = hdr.r.k == 2 && hdr.s[one(meta.calls)].v == 3 ? 8w0xB1 : 8w0xB0;
        hdr.r.c = hdr.r.k == 3 ? hdr.s[one(meta.calls)].v : 8w0xC0;
        hdr.r.d = hdr.r.k != 4 || pair(hdr.r.k, meta.calls).hi == 4 ? 8w0xD1 : 8w0xD0;
        hdr.r.calls = meta.calls;
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
        pkt.emit(hdr.s);
    }
}

V1Switch(MyParser(), MyVerify(), MyIngress(), MyEgress(), MyCompute(), MyDeparser()) main;
