// subparser_out: a sub-parser's `out` header parameter starts invalid (P4_16: out parameters are
// uninitialized), so a sub-parser that does not extract it leaves the caller's header invalid
// even though the caller had extracted it before the call.
// Expectations checked by running p4c's JSON on real simple_switch.
#include <core.p4>
#include <v1model.p4>

header h_t { bit<8> a; }
header g_t { bit<8> x; }
struct headers { h_t h; g_t g; }
struct metadata { }

parser Opt(packet_in pkt, out g_t g, in bit<8> sel) {
    state start {
        transition select(sel) {
            1: take;
            default: accept;
        }
    }
    state take {
        pkt.extract(g);
        transition accept;
    }
}

parser MyParser(packet_in pkt, out headers hdr, inout metadata meta,
                inout standard_metadata_t smeta) {
    Opt() opt;
    state start {
        pkt.extract(hdr.h);
        pkt.extract(hdr.g);
        opt.apply(pkt, hdr.g, hdr.h.a);
        transition accept;
    }
}

control MyVerifyChecksum(inout headers hdr, inout metadata meta) { apply { } }

control MyIngress(inout headers hdr, inout metadata meta, inout standard_metadata_t smeta) {
    apply { smeta.egress_spec = 1; }
}

control MyEgress(inout headers hdr, inout metadata meta, inout standard_metadata_t smeta) {
    apply { }
}

control MyComputeChecksum(inout headers hdr, inout metadata meta) { apply { } }

control MyDeparser(packet_out pkt, in headers hdr) {
    apply {
        pkt.emit(hdr.h);
        pkt.emit(hdr.g);
    }
}

V1Switch(MyParser(), MyVerifyChecksum(), MyIngress(), MyEgress(), MyComputeChecksum(),
         MyDeparser()) main;
