// action_data_forms: action data and booleans in every place BMv2 takes a value, in the form
// it takes there (action data is `runtime_data` as a primitive argument but `local` inside an
// expression; a boolean passed to a primitive is `b2d`; hash inputs and field lists hold only
// fields, so other values go through temporaries; an extern's out argument may be a slice).
// Arithmetic, ?:, slices and ++, a parameter in a ?: condition and an if on action data;
// register write/read indexed by computed action data, counter index, identity hash over
// action data, random with lo == hi, hash into a slice, log_msg and assert with action data.
// Every expected byte was checked by running p4c's JSON on real simple_switch.
#include <core.p4>
#include <v1model.p4>

header in_t {
    bit<8> op;   // key of t
    bit<8> a;
}
header out_t {
    bit<8>  r1;  // p + q
    bit<8>  r2;  // max(p, q) with ?:
    bit<8>  r3;  // p[3:0] ++ q[3:0]
    bit<8>  r4;  // flag ? 1 : 2
    bit<8>  r5;  // p == 0x10 ? AA : BB, by an if in the action
    bit<8>  r6;  // register r[idx] after writing v + 1
    bit<16> w;   // identity hash of {idx, a}
    bit<8>  r7;  // random(v, v)
    bit<8>  r8;  // high nibble kept, low nibble = identity hash of v mod 16
}

struct headers { in_t i; out_t o; }
struct metadata { }

parser MyParser(packet_in pkt, out headers hdr, inout metadata meta,
                inout standard_metadata_t smeta) {
    state start {
        pkt.extract(hdr.i);
        pkt.extract(hdr.o);
        transition accept;
    }
}

control MyVerifyChecksum(inout headers hdr, inout metadata meta) { apply { } }

control MyIngress(inout headers hdr, inout metadata meta, inout standard_metadata_t smeta) {
    register<bit<8>>(16) r;
    counter(16, CounterType.packets) c;

    action compute(bit<8> p, bit<8> q, bit<1> flag) {
        hdr.o.r1 = p + q;
        hdr.o.r2 = p > q ? p : q;
        hdr.o.r3 = p[3:0] ++ q[3:0];
        hdr.o.r4 = flag == 1 ? 8w1 : 8w2;
        if (p == 0x10) {
            hdr.o.r5 = 0xAA;
        } else {
            hdr.o.r5 = 0xBB;
        }
        assert(p != 0xEE || flag == 1);
    }
    action externs(bit<8> idx, bit<8> v) {
        r.write((bit<32>)idx, v + 1);
        r.read(hdr.o.r6, (bit<32>)(idx + 1) - 1);
        c.count((bit<32>)idx);
        hash(hdr.o.w, HashAlgorithm.identity, 16w0, { idx, hdr.i.a }, 32w65536);
        random(hdr.o.r7, v, v);
        hash(hdr.o.r8[3:0], HashAlgorithm.identity, 4w0, { v }, 8w16);
        log_msg("idx {} v {}", { idx, v });
    }
    table t {
        key = { hdr.i.op : exact; }
        actions = { compute; externs; NoAction; }
        default_action = NoAction();
    }
    apply {
        smeta.egress_spec = 1;
        t.apply();
    }
}

control MyEgress(inout headers hdr, inout metadata meta, inout standard_metadata_t smeta) {
    apply { }
}

control MyComputeChecksum(inout headers hdr, inout metadata meta) { apply { } }

control MyDeparser(packet_out pkt, in headers hdr) {
    apply {
        pkt.emit(hdr.i);
        pkt.emit(hdr.o);
    }
}

V1Switch(MyParser(), MyVerifyChecksum(), MyIngress(), MyEgress(), MyComputeChecksum(),
         MyDeparser()) main;
