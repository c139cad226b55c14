// subparser_copies: a sub-parser's parameters are copied in when it is entered and copied back
// when it accepts, as p4c lowers them: the counter passed inout is incremented once per
// application. A sub-parser that transitions to reject copies nothing back (p4c: "explicit
// transition to reject not supported on this target"; BMv2 just ends parsing, without a
// parser error), so that application's increment is lost.
// Expectations checked by running p4c's JSON on real simple_switch.
#include <core.p4>
#include <v1model.p4>

header h_t { bit<8> a; bit<8> b; }
header g_t { bit<8> x; }
struct headers { h_t h; g_t g; g_t k; }
struct metadata { bit<8> cnt; }

parser Opt(packet_in pkt, out g_t g, inout bit<8> cnt) {
    state start {
        cnt = cnt + 1;
        transition select(pkt.lookahead<bit<8>>()) {
            0xFF: reject;
            0: skip;
            default: take;
        }
    }
    state take {
        pkt.extract(g);
        transition accept;
    }
    state skip {
        transition accept;
    }
}

parser MyParser(packet_in pkt, out headers hdr, inout metadata meta,
                inout standard_metadata_t smeta) {
    Opt() opt;
    state start {
        pkt.extract(hdr.h);
        opt.apply(pkt, hdr.g, meta.cnt);
        transition select(hdr.h.a) {
            1: second;
            default: accept;
        }
    }
    state second {
        opt.apply(pkt, hdr.k, meta.cnt);
        transition accept;
    }
}

control MyVerifyChecksum(inout headers hdr, inout metadata meta) { apply { } }

control MyIngress(inout headers hdr, inout metadata meta, inout standard_metadata_t smeta) {
    apply {
        smeta.egress_spec = 1;
        hdr.h.b = meta.cnt;
        if (smeta.parser_error != error.NoError) {
            hdr.h.a = 0xEE;
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
