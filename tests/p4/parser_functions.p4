// parser_functions: functions called in parser states are inlined there: their assignments
// become parser `set` operations (`meta.z = dbl(a)`, a local initialised from a call, an inout
// argument updated by a void function); a function whose only return is its last statement
// needs no jump (BMv2 has no jumps in parser states); a call in verify()'s condition.
// Expectations checked by running p4c's JSON on real simple_switch.
#include <core.p4>
#include <v1model.p4>

header h_t { bit<8> a; bit<8> b; bit<8> c; bit<8> d; }
struct headers { h_t h; }
struct metadata { bit<8> z; bit<8> n; }

bit<8> dbl(in bit<8> v) {
    return v + v;
}

void count_up(inout bit<8> n, in bit<8> by) {
    n = n + by;
}

parser MyParser(packet_in pkt, out headers hdr, inout metadata meta,
                inout standard_metadata_t smeta) {
    state start {
        pkt.extract(hdr.h);
        meta.z = dbl(hdr.h.a);
        bit<8> t = dbl(hdr.h.b) + 1;
        meta.n = t;
        count_up(meta.n, hdr.h.c);
        verify(dbl(hdr.h.d) != 0x20, error.NoMatch);
        transition select(meta.z) {
            0x10: eight;
            default: accept;
        }
    }
    state eight {
        meta.n = dbl(meta.n);
        transition accept;
    }
}

control MyVerifyChecksum(inout headers hdr, inout metadata meta) { apply { } }

control MyIngress(inout headers hdr, inout metadata meta, inout standard_metadata_t smeta) {
    apply {
        smeta.egress_spec = 1;
        hdr.h.c = meta.z;
        hdr.h.d = meta.n;
        if (smeta.parser_error == error.NoMatch) {
            hdr.h.a = 0xEE;
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
