// dead_apply: a table whose only apply comes after `exit` is unreachable, but p4c keeps it in
// the JSON (and P4Info), so the control plane can still write entries to it (after `return`
// p4c drops it, and so does inaemu); the packet leaves on port 0 (exit ends ingress before
// egress_spec is set), b = 99 when a = 9.
// Expectations checked by running p4c's JSON on real simple_switch.
#include <core.p4>
#include <v1model.p4>

header h_t { bit<8> a; bit<8> b; }
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
    action set_b(bit<8> v) { hdr.h.b = v; }
    table t {
        key = { hdr.h.a : exact; }
        actions = { set_b; NoAction; }
        default_action = NoAction();
    }
    table u {
        key = { hdr.h.a : exact; }
        actions = { set_b; NoAction; }
        default_action = NoAction();
    }
    apply {
        if (hdr.h.a == 9) {
            hdr.h.b = 0x99;
            exit;
            u.apply();
        }
        exit;
        t.apply();
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
