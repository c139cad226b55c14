// control_flow: functions (with early returns), sub-controls (one with an early return), an
// action with in, inout and out parameters called directly, action data from a table, and exit
// (in the apply block, and inside a table's action).
// exit ends ingress at once but not the packet: egress still runs, and egress_spec as set
// before the exit still decides the port.
#include <core.p4>
#include <v1model.p4>

header ethernet_t { bit<48> dst; bit<48> src; bit<16> ether_type; }
header cf_t {
    bit<8> mode;
    bit<8> a;
    bit<8> b;
    bit<8> out1;
    bit<8> out2;
    bit<8> trail;
}

struct headers {
    ethernet_t eth;
    cf_t       cf;
}
struct metadata { }

bit<8> max8(in bit<8> x, in bit<8> y) {
    return x > y ? x : y;
}

bit<8> clamp_add(in bit<8> x, in bit<8> y) {
    bit<16> sum = (bit<16>)x + (bit<16>)y;
    if (sum > 255) {
        return 255;
    }
    return sum[7:0];
}

control Swap(inout bit<8> x, inout bit<8> y) {
    apply {
        bit<8> tmp = x;
        x = y;
        y = tmp;
    }
}

control Guard(inout cf_t cf) {
    apply {
        if (cf.a == 0) {
            cf.out1 = 0xEE;
            return;
        }
        cf.out1 = 0x11;
    }
}

parser MyParser(packet_in pkt, out headers hdr, inout metadata meta,
                inout standard_metadata_t smeta) {
    state start {
        pkt.extract(hdr.eth);
        transition select(hdr.eth.ether_type) {
            0x88B5: parse_cf;
            default: accept;
        }
    }
    state parse_cf {
        pkt.extract(hdr.cf);
        transition accept;
    }
}

control MyVerifyChecksum(inout headers hdr, inout metadata meta) { apply { } }

control MyIngress(inout headers hdr, inout metadata meta, inout standard_metadata_t smeta) {
    Swap() swap_inst;
    Guard() guard;

    action compute(inout bit<8> acc, in bit<8> v, out bit<8> complement) {
        acc = acc + v;
        complement = acc ^ 0xFF;
    }
    action set_trail(bit<8> t) {
        hdr.cf.trail = t;
    }
    action stop_here() {
        hdr.cf.trail = 0x99;
        exit;
    }
    table trail_table {
        key = { hdr.cf.mode : exact; }
        actions = { set_trail; stop_here; NoAction; }
        default_action = NoAction();
    }

    apply {
        if (!hdr.cf.isValid()) {
            mark_to_drop(smeta);
            exit;
        }
        smeta.egress_spec = 1;
        hdr.cf.out1 = max8(hdr.cf.a, hdr.cf.b);
        hdr.cf.out2 = clamp_add(hdr.cf.a, hdr.cf.b);
        if (hdr.cf.mode == 1) {
            swap_inst.apply(hdr.cf.a, hdr.cf.b);
        } else if (hdr.cf.mode == 2) {
            compute(hdr.cf.out1, hdr.cf.b, hdr.cf.out2);
        } else if (hdr.cf.mode == 3) {
            smeta.egress_spec = 2;
            exit;
        } else if (hdr.cf.mode == 4) {
            guard.apply(hdr.cf);
        }
        trail_table.apply();
        if (hdr.cf.mode == 6) {
            hdr.cf.out1 = 0xBD;     // never runs: mode 6's action exits
        }
    }
}

control MyEgress(inout headers hdr, inout metadata meta, inout standard_metadata_t smeta) {
    apply {
        hdr.cf.trail = hdr.cf.trail + 1;
    }
}

control MyComputeChecksum(inout headers hdr, inout metadata meta) { apply { } }

control MyDeparser(packet_out pkt, in headers hdr) {
    apply {
        pkt.emit(hdr.eth);
        pkt.emit(hdr.cf);
    }
}

V1Switch(MyParser(), MyVerifyChecksum(), MyIngress(), MyEgress(), MyComputeChecksum(),
         MyDeparser()) main;
