// eval_order: evaluation rules a compiler must keep. || does not evaluate its right operand when
// the left one is true, and ?: evaluates only the chosen branch (both checked through a function
// with a side effect on a counter); assigning a header copies its validity (an invalid source
// makes the destination invalid); a table's .hit inside a compound condition, where an exit in
// the table's action ends the control before the condition is finished; typed literals (-8s1,
// 8w0xEE).
#include <core.p4>
#include <v1model.p4>

header ethernet_t { bit<48> dst; bit<48> src; bit<16> ether_type; }
header e_t {
    bit<8> mode;   // 1: an `a` header follows; the t_stop entries are keyed on it
    bit<8> x;
    bit<8> r1;     // (x == 0) || (bump(c) == 2)
    bit<8> r2;     // x > 10 ? bump(c) + 100 : 0xEE
    bit<8> r3;     // 33 if t_stop hit and mode == 2, else 44; 99 if the stop action ran
    bit<8> cnt;    // the counter after r1 and r2
}
header a_t { bit<8> v; }

struct headers {
    ethernet_t eth;
    e_t        e;
    a_t        a;
    a_t        b;   // b = a
}
struct metadata {
    bit<8> c;
}

bit<8> bump(inout bit<8> counter) {
    counter = counter + 1;
    return counter;
}

parser MyParser(packet_in pkt, out headers hdr, inout metadata meta,
                inout standard_metadata_t smeta) {
    state start {
        pkt.extract(hdr.eth);
        pkt.extract(hdr.e);
        transition select(hdr.e.mode) {
            1: parse_a;
            default: accept;
        }
    }
    state parse_a {
        pkt.extract(hdr.a);
        transition accept;
    }
}

control MyVerifyChecksum(inout headers hdr, inout metadata meta) { apply { } }

control MyIngress(inout headers hdr, inout metadata meta, inout standard_metadata_t smeta) {
    action stop() {
        smeta.egress_spec = 3;
        hdr.e.r3 = 0x99;
        exit;
    }
    action go() { }
    table t_stop {
        key = { hdr.e.mode : exact; }
        actions = { stop; go; NoAction; }
        default_action = NoAction();
    }

    apply {
        smeta.egress_spec = 1;
        meta.c = 0;
        bool t = (hdr.e.x == 0) || (bump(meta.c) == 2);
        hdr.e.r1 = t ? 8w1 : 8w0;
        hdr.e.r2 = hdr.e.x > 10 ? bump(meta.c) + 100 : 8w0xEE;
        hdr.e.cnt = meta.c;
        hdr.b = hdr.a;
        if (t_stop.apply().hit && hdr.e.mode == 2) {
            hdr.e.r3 = 0x33;
        } else {
            hdr.e.r3 = (bit<8>)(-8s1) & 0x44;
        }
    }
}

control MyEgress(inout headers hdr, inout metadata meta, inout standard_metadata_t smeta) {
    apply { }
}

control MyComputeChecksum(inout headers hdr, inout metadata meta) { apply { } }

control MyDeparser(packet_out pkt, in headers hdr) {
    apply {
        pkt.emit(hdr.eth);
        pkt.emit(hdr.e);
        pkt.emit(hdr.a);
        pkt.emit(hdr.b);
    }
}

V1Switch(MyParser(), MyVerifyChecksum(), MyIngress(), MyEgress(), MyComputeChecksum(),
         MyDeparser()) main;
