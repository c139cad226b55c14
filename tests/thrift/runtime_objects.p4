// Every kind of object BMv2's Thrift runtime reaches: tables of each match kind (exact, lpm,
// ternary, range), an indirect table and one with a selector, direct and indexed counters, an
// indexed meter, a direct meter, registers, a multicast group and a clone session, so that
// simple_switch_CLI's
// commands can be compared on real simple_switch and on inaemu.
#include <core.p4>
#include <v1model.p4>

header ethernet_t {
    bit<48> dst;
    bit<48> src;
    bit<16> type;
}

header probe_t {
    bit<8>  op;
    bit<8>  lo;
    bit<16> arg;
    bit<32> result;
}

struct headers_t { ethernet_t eth; probe_t probe; }
struct meta_t { bit<8> color; }

parser P(packet_in pkt, out headers_t hdr, inout meta_t meta, inout standard_metadata_t sm) {
    state start {
        pkt.extract(hdr.eth);
        transition select(hdr.eth.type) { 0x88b5: probe; default: accept; }
    }
    state probe { pkt.extract(hdr.probe); transition accept; }
}

control VC(inout headers_t hdr, inout meta_t meta) { apply { } }

control I(inout headers_t hdr, inout meta_t meta, inout standard_metadata_t sm) {
    direct_counter(CounterType.packets_and_bytes) by_dst;
    counter(8, CounterType.packets_and_bytes) per_op;
    meter(4, MeterType.packets) limiter;
    register<bit<32>>(16) cells;
    register<bit<8>>(4) small;
    action_selector(HashAlgorithm.crc16, 16, 14) pick;
    direct_meter<bit<8>>(MeterType.packets) per_src;

    action to_port(bit<9> port) { sm.egress_spec = port; }
    action to_port_counted(bit<9> port) { sm.egress_spec = port; by_dst.count(); }
    action tag(bit<32> value, bit<9> port) { hdr.probe.result = value; sm.egress_spec = port; }
    action to_group(bit<16> mgid) { sm.mcast_grp = mgid; }
    action drop() { mark_to_drop(sm); }
    action clone_to(bit<32> session) { clone(CloneType.I2E, session); sm.egress_spec = 1; }

    table dmac {
        key = { hdr.eth.dst : exact; }
        actions = { to_port_counted; to_group; drop; }
        counters = by_dst;
        default_action = drop();
        size = 4;
    }
    table by_prefix {
        key = { hdr.eth.src : lpm; }
        actions = { to_port; tag; NoAction; }
        default_action = NoAction();
    }
    table classify {
        key = { hdr.probe.arg : ternary; hdr.probe.lo : range; hdr.probe.isValid() : exact; }
        actions = { tag; clone_to; NoAction; }
        default_action = NoAction();
    }
    table members {
        key = { hdr.probe.op : exact; }
        actions = { to_port; tag; }
        @name("I.member_profile") implementation = action_profile(8);
    }
    table balanced {
        key = { hdr.probe.lo : exact; hdr.eth.src : selector; }
        actions = { to_port; }
        implementation = pick;
    }
    action metered_to(bit<9> port) { per_src.read(meta.color); sm.egress_spec = port; }
    table metered {
        key = { hdr.eth.src : exact; }
        actions = { metered_to; NoAction; }
        meters = per_src;
        default_action = NoAction();
        size = 8;
    }
    table fixed_default {
        key = { hdr.eth.type : exact; }
        actions = { to_port; drop; }
        const default_action = drop();
    }

    apply {
        dmac.apply();
        if (hdr.probe.isValid()) {
            per_op.count((bit<32>)hdr.probe.op & 7);
            limiter.execute_meter((bit<32>)hdr.probe.op & 3, meta.color);
            bit<32> old;
            cells.read(old, (bit<32>)hdr.probe.lo & 15);
            cells.write((bit<32>)hdr.probe.lo & 15, old + 1);
            small.write((bit<32>)hdr.probe.op & 3, meta.color);
            by_prefix.apply();
            classify.apply();
            if (hdr.probe.op == 1) { members.apply(); }
            if (hdr.probe.op == 2) { balanced.apply(); }
            if (hdr.probe.op == 3) { fixed_default.apply(); }
            if (hdr.probe.op == 4) { metered.apply(); }
        }
    }
}

control E(inout headers_t hdr, inout meta_t meta, inout standard_metadata_t sm) { apply { } }
control CC(inout headers_t hdr, inout meta_t meta) { apply { } }
control D(packet_out pkt, in headers_t hdr) {
    apply { pkt.emit(hdr.eth); pkt.emit(hdr.probe); }
}

V1Switch(P(), VC(), I(), E(), CC(), D()) main;
