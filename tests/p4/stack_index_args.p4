// stack_index_args: an argument `hs[i].f` or `hs[i]` names the element chosen when the call is
// made, even when the callee then changes i: an inout field argument is copied back into that
// element (`set_v`), an in argument reads it (`take`), and likewise for a sub-control's
// arguments (`sub`, which flips i, its inout argument). (A whole-header argument `hs[i]` is in
// tests/compiler/test_bmv2_runs.py: simple_switch refuses p4c's JSON for it.)
// Expectations checked by running p4c's JSON on real simple_switch.
#include <core.p4>
#include <v1model.p4>

header h_t { bit<8> i; bit<8> x; }
header e_t { bit<8> v; }
struct headers { h_t h; e_t[2] s; }
struct metadata { }

parser MyParser(packet_in pkt, out headers hdr, inout metadata meta,
                inout standard_metadata_t smeta) {
    state start {
        pkt.extract(hdr.h);
        pkt.extract(hdr.s.next);
        pkt.extract(hdr.s.next);
        transition accept;
    }
}

control MyVerifyChecksum(inout headers hdr, inout metadata meta) { apply { } }

control Sub(inout bit<8> i, inout bit<8> v, in bit<8> w) {
    apply {
        i = i ^ 1;
        v = v + 0x50 + w;
    }
}

control MyIngress(inout headers hdr, inout metadata meta, inout standard_metadata_t smeta) {
    Sub() sub;
    action set_v(inout bit<8> v) {
        hdr.h.i = hdr.h.i ^ 1;
        v = v + 0x50;
    }
    action take(in bit<8> v) {
        hdr.h.i = hdr.h.i ^ 1;
        hdr.h.x = v;
    }
    apply {
        smeta.egress_spec = 1;
        if (hdr.h.x == 0) {
            set_v(hdr.s[hdr.h.i].v);
        } else if (hdr.h.x == 1) {
            take(hdr.s[hdr.h.i].v);
        } else {
            sub.apply(hdr.h.i, hdr.s[hdr.h.i].v, hdr.s[hdr.h.i].v);
        }
    }
}

control MyEgress(inout headers hdr, inout metadata meta, inout standard_metadata_t smeta) {
    apply { }
}

control MyComputeChecksum(inout headers hdr, inout metadata meta) { apply { } }

control MyDeparser(packet_out pkt, in headers hdr) {
    apply {
        pkt.emit(hdr.h);
        pkt.emit(hdr.s);
    }
}

V1Switch(MyParser(), MyVerifyChecksum(), MyIngress(), MyEgress(), MyComputeChecksum(),
         MyDeparser()) main;
