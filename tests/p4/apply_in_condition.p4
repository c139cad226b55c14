// apply_in_condition: a table applied inside a condition runs only when P4's left-to-right,
// short-circuit evaluation reaches it: in `h.a == 1 && t.apply().hit` t is not applied (its
// default action does not run) when a != 1; in `h.a == 2 || (u.apply().hit && h.c == 5)` u is
// not applied when a == 2; in `h.a == 3 ? w.apply().hit : false` w only when a == 3.
// Expectations checked by running p4c's JSON on real simple_switch.
#include <core.p4>
#include <v1model.p4>

header h_t { bit<8> a; bit<8> b; bit<8> c; bit<8> d; bit<8> e; }
struct headers { h_t h; }
struct metadata { }

parser MyParser(packet_in pkt, out headers hdr, inout metadata meta,
                inout standard_metadata_t smeta) {
    state start {
        pkt.extract(hdr.h);
        transition accept;
    }
}

control MyVerifyChecksum(inout headers hdr, inout metadata meta) { apply { } }

control MyIngress(inout headers hdr, inout metadata meta, inout standard_metadata_t smeta) {
    action mark_t() { hdr.h.b = 0xBB; }
    action mark_u() { hdr.h.d = 0xDD; }
    action mark_w() { hdr.h.d = hdr.h.d + 1; }
    table t {
        key = { hdr.h.c : exact; }
        actions = { mark_t; NoAction; }
        default_action = mark_t();
    }
    table u {
        key = { hdr.h.c : exact; }
        actions = { mark_u; NoAction; }
        default_action = mark_u();
    }
    table w {
        key = { hdr.h.c : exact; }
        actions = { mark_w; NoAction; }
        default_action = NoAction();
    }
    apply {
        smeta.egress_spec = 1;
        if (hdr.h.a == 1 && t.apply().hit) {
            hdr.h.e = hdr.h.e | 0x01;
        }
        if (hdr.h.a == 2 || (u.apply().hit && hdr.h.c == 5)) {
            hdr.h.e = hdr.h.e | 0x10;
        }
        if (hdr.h.a == 3 ? w.apply().hit : false) {
            hdr.h.e = hdr.h.e | 0x20;
        }
    }
}

control MyEgress(inout headers hdr, inout metadata meta, inout standard_metadata_t smeta) {
    apply { }
}

control MyComputeChecksum(inout headers hdr, inout metadata meta) { apply { } }

control MyDeparser(packet_out pkt, in headers hdr) {
    apply { pkt.emit(hdr.h); }
}

V1Switch(MyParser(), MyVerifyChecksum(), MyIngress(), MyEgress(), MyComputeChecksum(),
         MyDeparser()) main;
