// struct_returns: functions that return a struct (`swap`, a list expression) or a header (`mk`,
// a local header made valid), assigned directly and used inside a larger struct expression
// (`hdr = { mk(0x40) }`); also a switch on a plain enum and a cast to a serializable enum.
// Expectations checked by running p4c's JSON on real simple_switch.
#include <core.p4>
#include <v1model.p4>

header h_t { bit<8> a; bit<8> b; bit<8> c; }
struct pair_t { bit<8> x; bit<8> y; }
enum bit<8> Col { RED = 1, BLUE = 2 }
enum Mode { FAST, SLOW }
struct headers { h_t h; }
struct metadata { Mode m; pair_t p; }

pair_t swap(in pair_t q) {
    return { q.y, q.x };
}

h_t mk(in bit<8> v) {
    h_t r;
    r.setValid();
    r.a = v;
    r.b = v + 1;
    r.c = v + 2;
    return r;
}

parser MyParser(packet_in pkt, out headers hdr, inout metadata meta,
                inout standard_metadata_t smeta) {
    state start {
        pkt.extract(hdr.h);
        transition accept;
    }
}

control MyVerifyChecksum(inout headers hdr, inout metadata meta) { apply { } }

control MyIngress(inout headers hdr, inout metadata meta, inout standard_metadata_t smeta) {
    apply {
        smeta.egress_spec = 1;
        meta.m = hdr.h.a == 1 ? Mode.FAST : Mode.SLOW;
        meta.p = { hdr.h.b, hdr.h.c };
        meta.p = swap(meta.p);
        switch (meta.m) {
            Mode.FAST: {
                hdr.h.b = meta.p.x;
                hdr.h.c = meta.p.y;
            }
            Mode.SLOW: {
                if ((Col)hdr.h.b == Col.BLUE) {
                    hdr = { mk(0x40) };
                }
            }
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
