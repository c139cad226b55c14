// entry_priorities: initial entries with some, all or no priorities (P4_16 §14.2.1.4), with
// largest_priority_wins and priority_delta. Each table writes its action's argument into one byte.
#include <core.p4>
#include <v1model.p4>

header ethernet_t { bit<48> dst; bit<48> src; bit<16> ether_type; }
header v_t { bit<8> k; bit<8> r1; bit<8> r2; bit<8> r3; bit<8> r4; bit<8> r5; }
struct headers_t { ethernet_t eth; v_t v; }
struct meta_t { }

parser P(packet_in pkt, out headers_t hdr, inout meta_t meta, inout standard_metadata_t sm) {
    state start {
        pkt.extract(hdr.eth);
        transition select(hdr.eth.ether_type) { 0x88B5: parse_v; default: accept; }
    }
    state parse_v { pkt.extract(hdr.v); transition accept; }
}

control VC(inout headers_t hdr, inout meta_t meta) { apply { } }

control Ing(inout headers_t hdr, inout meta_t meta, inout standard_metadata_t sm) {
    action w1(bit<8> v) { hdr.v.r1 = v; }
    action w2(bit<8> v) { hdr.v.r2 = v; }
    action w3(bit<8> v) { hdr.v.r3 = v; }
    action w4(bit<8> v) { hdr.v.r4 = v; }
    action w5(bit<8> v) { hdr.v.r5 = v; }
    // largest wins, delta 10: priorities 50, 40, 100, 90, 80
    table t1 {
        key = { hdr.v.k : ternary; }
        actions = { w1; }
        priority_delta = 10;
        @noWarn("entries_out_of_priority_order")
        const entries = {
            priority = 50: 0x01 &&& 0x0F : w1(1);
            0x02 &&& 0x0F : w1(2);
            priority = 100: 0x10 &&& 0x10 : w1(3);
            0x20 &&& 0x20 : w1(4);
            0x00 &&& 0x00 : w1(5);
        }
    }
    // smallest wins: 30, 31, 5, 6
    table t2 {
        key = { hdr.v.k : ternary; }
        actions = { w2; }
        largest_priority_wins = false;
        @noWarn("entries_out_of_priority_order")
        const entries = {
            priority = 30: 0x01 &&& 0x0F : w2(1);
            0x02 &&& 0x0F : w2(2);
            priority = 5: 0x10 &&& 0x10 : w2(3);
            0x20 &&& 0x20 : w2(4);
        }
    }
    // no priorities: the first entry wins, whatever the convention
    table t3 {
        key = { hdr.v.k : ternary; }
        actions = { w3; }
        largest_priority_wins = false;
        priority_delta = 3;
        const entries = {
            0x01 &&& 0x0F : w3(1);
            0x10 &&& 0x10 : w3(2);
            _ : w3(3);
        }
    }
    // p4c's @priority annotation: a BMv2 priority (the smaller wins); unannotated entries are
    // numbered by position: ranks 1, 5, 0, 3
    table t4 {
        key = { hdr.v.k : ternary; }
        actions = { w4; }
        const entries = {
            0x01 &&& 0x0F : w4(1);
            0x02 &&& 0x02 : w4(2) @priority(5);
            0x10 &&& 0x10 : w4(3) @priority(0);
            _ : w4(4) @priority(3);
        }
    }
    // non-const entries (P4_16 1.2.4): the second gets 50 - 10
    table t5 {
        key = { hdr.v.k : ternary; }
        actions = { w5; NoAction; }
        priority_delta = 10;
        entries = {
            priority = 50: 0x01 &&& 0x01 : w5(1);
            0x02 &&& 0x02 : w5(2);
        }
    }
    apply {
        if (!hdr.v.isValid()) { mark_to_drop(sm); return; }
        t1.apply(); t2.apply(); t3.apply(); t4.apply(); t5.apply();
        sm.egress_spec = 1;
    }
}

control Eg(inout headers_t hdr, inout meta_t meta, inout standard_metadata_t sm) { apply { } }
control CC(inout headers_t hdr, inout meta_t meta) { apply { } }
control Dep(packet_out pkt, in headers_t hdr) { apply { pkt.emit(hdr.eth); pkt.emit(hdr.v); } }
V1Switch(P(), VC(), Ing(), Eg(), CC(), Dep()) main;
