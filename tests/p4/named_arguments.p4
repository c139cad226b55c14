// named_arguments: arguments given by name bind to their parameters whatever their order:
// a function call, a direct action call, a table's default action and a const entry's action;
// a parameter with a default value may be left out (`add(x = d)`, `add(e)`).
// Expectations checked by running p4c's JSON on real simple_switch.
#include <core.p4>
#include <v1model.p4>

header h_t { bit<8> a; bit<8> b; bit<8> c; bit<8> d; bit<8> e; }
struct headers { h_t h; }
struct metadata { }

bit<8> sub8(in bit<8> x, in bit<8> y) {
    return x - y;
}

bit<8> add(in bit<8> x, in bit<8> y = 3) {
    return x + y;
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
    action set_c(bit<8> p, bit<8> q) { hdr.h.c = p - q; }
    action set_b(bit<8> p, bit<8> q) { hdr.h.b = p - q; }
    table t {
        key = { hdr.h.a : exact; }
        actions = { set_b; NoAction; }
        default_action = set_b(q = 1, p = 9);
        const entries = {
            0x0D : set_b(q = 2, p = 7);
        }
    }
    apply {
        smeta.egress_spec = 1;
        hdr.h.a = sub8(y = hdr.h.b, x = hdr.h.a);
        set_c(q = 1, p = 5);
        hdr.h.d = add(x = hdr.h.d);
        hdr.h.e = add(hdr.h.e);
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
