// exit_in_action: `exit` inside an action ends the control at once. BMv2's `exit` primitive only
// flags the packet and the action's later primitives would still run, so the JSON jumps to the
// action's end after it (as p4c does): in a table's action (`act`: c stays unset), and in an
// action inlined into straight-line code of a sub-control (`bump` then `h.c = i`).
// Expectations checked by running p4c's JSON on real simple_switch.
#include <core.p4>
#include <v1model.p4>

header h_t { bit<8> a; bit<8> b; bit<8> c; bit<8> d; }
struct headers { h_t h; }
struct metadata { bit<8> i; }

parser MyParser(packet_in pkt, out headers hdr, inout metadata meta,
                inout standard_metadata_t smeta) {
    state start {
        pkt.extract(hdr.h);
        transition accept;
    }
}

control MyVerifyChecksum(inout headers hdr, inout metadata meta) { apply { } }

control Bump(inout bit<8> i, inout h_t h) {
    action bump(inout bit<8> v) {
        v = v + 1;
        if (v == 0x10) {
            exit;
        }
    }
    apply {
        bump(i);
        h.c = i;
    }
}

control MyIngress(inout headers hdr, inout metadata meta, inout standard_metadata_t smeta) {
    Bump() b;
    action act() {
        hdr.h.b = 1;
        if (hdr.h.a == 5) {
            exit;
        }
        hdr.h.c = 2;
    }
    table t {
        key = { hdr.h.a : exact; }
        actions = { act; }
        default_action = act();
    }
    apply {
        smeta.egress_spec = 1;
        if (hdr.h.a == 0xF0) {
            meta.i = hdr.h.d;
            b.apply(meta.i, hdr.h);
        } else {
            t.apply();
        }
        hdr.h.d = 3;
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
