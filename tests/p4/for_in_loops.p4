// for_in_loops: `for (T x in collection)` (P4_16 1.2.4) over a list `{...}`, an inclusive range
// `a .. b`, and a header stack (the variable is a copy of each element in turn), with `break`.
// inaemu unrolls them; p4c 1.2.5's BMv2 back end refuses them ("BMV2 does not support for-in
// loops", and lists: "does not support iteration over this collection").
#include <core.p4>
#include <v1model.p4>

header ethernet_t { bit<48> dst; bit<48> src; bit<16> ether_type; }
header d_t {
    bit<8> lst;   // ^ 3 ^ 5 ^ 9
    bit<8> rng;   // + 1 + 2 + 3 + 4
    bit<8> stk;   // + every stack element's v
    bit<8> stop;  // the stack loop stops at the first element whose v equals it
    bit<8> seen;  // + 1 per element before that
}
header s_t { bit<8> v; }

struct headers { ethernet_t eth; d_t d; s_t[3] s; }
struct metadata { }

parser MyParser(packet_in pkt, out headers hdr, inout metadata meta,
                inout standard_metadata_t smeta) {
    state start {
        pkt.extract(hdr.eth);
        pkt.extract(hdr.d);
        pkt.extract(hdr.s.next);
        pkt.extract(hdr.s.next);
        pkt.extract(hdr.s.next);
        transition accept;
    }
}

control MyVerify(inout headers hdr, inout metadata meta) { apply { } }

control MyIngress(inout headers hdr, inout metadata meta, inout standard_metadata_t smeta) {
    apply {
        smeta.egress_spec = 1;
        for (bit<8> v in {3, 5, 9}) {
            hdr.d.lst = hdr.d.lst ^ v;
        }
        for (bit<8> r in 1 .. 4) {
            hdr.d.rng = hdr.d.rng + r;
        }
        for (s_t e in hdr.s) {
            hdr.d.stk = hdr.d.stk + e.v;
            e.v = 0xFF;  // a copy: the stack keeps its value
        }
        for (s_t e in hdr.s) {
            if (e.v == hdr.d.stop) {
                break;
            }
            hdr.d.seen = hdr.d.seen + 1;
        }
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
