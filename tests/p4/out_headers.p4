// out_headers: an `out` parameter starts uninitialized, and a header in it starts invalid
// (P4_16), whatever the argument held before the call: a function that only writes a field
// of its out header leaves the caller's header invalid (not emitted); one that calls
// setValid() first returns a valid header; likewise for a sub-control's out header parameter
// and an action's out header parameter.
// Expectations checked by running p4c's JSON on real simple_switch.
#include <core.p4>
#include <v1model.p4>

header h_t { bit<8> a; bit<8> b; }
header g_t { bit<8> x; }
struct headers { h_t h; g_t g; g_t k; }
struct metadata { }

void only_field(out g_t g) {
    g.x = 0x11;
}

void made_valid(out g_t g) {
    g.setValid();
    g.x = 0x22;
}

control Sub(out g_t g) {
    apply { g.x = 0x33; }
}

parser MyParser(packet_in pkt, out headers hdr, inout metadata meta,
                inout standard_metadata_t smeta) {
    state start {
        pkt.extract(hdr.h);
        pkt.extract(hdr.g);
        pkt.extract(hdr.k);
        transition accept;
    }
}

control MyVerifyChecksum(inout headers hdr, inout metadata meta) { apply { } }

control MyIngress(inout headers hdr, inout metadata meta, inout standard_metadata_t smeta) {
    Sub() sub;
    action fill(out g_t g) {
        g.setValid();
        g.x = 0x44;
    }
    apply {
        smeta.egress_spec = 1;
        if (hdr.h.a == 1) {
            only_field(hdr.g);
        } else if (hdr.h.a == 2) {
            made_valid(hdr.g);
        } else if (hdr.h.a == 3) {
            sub.apply(hdr.k);
        } else {
            fill(hdr.k);
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
        pkt.emit(hdr.g);
        pkt.emit(hdr.k);
    }
}

V1Switch(MyParser(), MyVerifyChecksum(), MyIngress(), MyEgress(), MyComputeChecksum(),
         MyDeparser()) main;
