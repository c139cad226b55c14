// table_match: one table per match kind, each writing what it decided into an inserted report
// header. Exact with hit detection and a size; LPM with a default action that carries data and
// miss detection; ternary with run-time priorities and a switch on action_run; range and
// optional with const entries, where the earlier entry wins; a table whose default is const.
#include <core.p4>
#include <v1model.p4>

header ethernet_t { bit<48> dst; bit<48> src; bit<16> ether_type; }

header query_t {
    bit<8>  k8;
    bit<16> k16;
    bit<32> k32;
    bit<8>  tag;
}

header report_t {
    bit<8> exact_r;
    bit<8> lpm_r;
    bit<8> tern_r;
    bit<8> range_r;
    bit<8> opt_r;
    bit<8> flags;   // 1: exact hit, 2: lpm miss, 4: ternary ran set_tern, 8: ternary ran NoAction
}

struct headers {
    ethernet_t eth;
    query_t    q;
    report_t   r;
}
struct metadata { }

parser MyParser(packet_in pkt, out headers hdr, inout metadata meta,
                inout standard_metadata_t smeta) {
    state start {
        pkt.extract(hdr.eth);
        transition select(hdr.eth.ether_type) {
            0x88B5: parse_q;
            default: accept;
        }
    }
    state parse_q {
        pkt.extract(hdr.q);
        transition accept;
    }
}

control MyVerifyChecksum(inout headers hdr, inout metadata meta) { apply { } }

control MyIngress(inout headers hdr, inout metadata meta, inout standard_metadata_t smeta) {
    action set_exact(bit<8> v) { hdr.r.exact_r = v; }
    action set_lpm(bit<8> v)   { hdr.r.lpm_r = v; }
    action set_tern(bit<8> v)  { hdr.r.tern_r = v; }
    action set_range(bit<8> v) { hdr.r.range_r = v; }
    action set_opt(bit<8> v)   { hdr.r.opt_r = v; }

    table t_exact {
        key = { hdr.q.k8 : exact; }
        actions = { set_exact; NoAction; }
        size = 16;
        default_action = NoAction();
    }
    table t_lpm {
        key = { hdr.q.k32 : lpm; }
        actions = { set_lpm; }
        default_action = set_lpm(0xEE);
    }
    table t_tern {
        key = { hdr.q.k16 : ternary; }
        actions = { set_tern; NoAction; }
        default_action = NoAction();
    }
    table t_range {
        key = { hdr.q.k16 : range; }
        actions = { set_range; }
        const entries = {
            16w0x0000 .. 16w0x00FF : set_range(1);
            16w0x0100 .. 16w0x0FFF : set_range(2);
            16w0x0080 .. 16w0x0180 : set_range(3);   // overlaps both; never wins
        }
        const default_action = set_range(0xFF);
    }
    table t_opt {
        key = {
            hdr.q.k8  : optional;
            hdr.q.tag : exact;
        }
        actions = { set_opt; NoAction; }
        const entries = {
            (5, 1) : set_opt(0x51);
            (_, 1) : set_opt(0x01);
            (_, 2) : set_opt(0x02);
        }
        default_action = NoAction();
    }

    apply {
        if (!hdr.q.isValid()) {
            mark_to_drop(smeta);
            return;
        }
        hdr.r.setValid();
        hdr.r.exact_r = 0;
        hdr.r.lpm_r = 0;
        hdr.r.tern_r = 0;
        hdr.r.range_r = 0;
        hdr.r.opt_r = 0;
        hdr.r.flags = 0;

        if (t_exact.apply().hit) {
            hdr.r.flags = hdr.r.flags | 1;
        }
        if (t_lpm.apply().miss) {
            hdr.r.flags = hdr.r.flags | 2;
        }
        switch (t_tern.apply().action_run) {
            set_tern: { hdr.r.flags = hdr.r.flags | 4; }
            NoAction: { hdr.r.flags = hdr.r.flags | 8; }
        }
        t_range.apply();
        t_opt.apply();
        smeta.egress_spec = 1;
    }
}

control MyEgress(inout headers hdr, inout metadata meta, inout standard_metadata_t smeta) {
    apply { }
}

control MyComputeChecksum(inout headers hdr, inout metadata meta) { apply { } }

control MyDeparser(packet_out pkt, in headers hdr) {
    apply {
        pkt.emit(hdr.eth);
        pkt.emit(hdr.q);
        pkt.emit(hdr.r);
    }
}

V1Switch(MyParser(), MyVerifyChecksum(), MyIngress(), MyEgress(), MyComputeChecksum(),
         MyDeparser()) main;
