// control_locals: control-level declarations in any order, initialised control-level variables
// (set afresh on every apply, also in a sub-control applied twice), and table keys that are
// slices not starting at bit 0 (computed into a temporary key, so entries give the slice value).
#include <core.p4>
#include <v1model.p4>

header ethernet_t { bit<48> dst; bit<48> src; bit<16> ether_type; }
header v_t { bit<16> f; bit<8> a; bit<8> b; bit<8> c; bit<8> d; bit<8> e; }
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

// `acc` starts at 5 on every apply: applied twice, v becomes 5 + (5 + v)
control AddFive(inout bit<8> v) {
    bit<8> acc = 5;
    apply { acc = acc + v; v = acc; }
}

control Ing(inout headers_t hdr, inout meta_t meta, inout standard_metadata_t sm) {
    const bit<8> K = 7;
    bit<8> x = K + 1;                  // 8 on every packet
    counter(4, CounterType.packets) seen;
    action bump() { x = x + 1; seen.count(0); }
    bit<8> y = x + 2;                  // initialised after x: 10
    const bit<8> K2 = K * 2;           // 14
    AddFive() add_five;
    action set_a(bit<8> v) { hdr.v.a = v; }
    table hi {
        key = { hdr.v.f[15:8] : exact @name("f_hi"); }
        actions = { set_a; NoAction; }
        default_action = NoAction();
    }
    action set_b(bit<8> v) { hdr.v.b = v; }
    bit<4> low_nibble = hdr.v.f[3:0];  // an initialiser may read the headers
    table mid {
        key = { hdr.v.f[11:4] : ternary @name("f_mid"); low_nibble : exact; }
        actions = { set_b; NoAction; }
        default_action = NoAction();
    }
    apply {
        if (!hdr.v.isValid()) { mark_to_drop(sm); return; }
        if (hdr.v.c == 1) { bump(); }
        hdr.v.c = x;
        hdr.v.d = y + K2;
        add_five.apply(hdr.v.e);
        add_five.apply(hdr.v.e);
        hi.apply();
        mid.apply();
        sm.egress_spec = 1;
    }
}

control Eg(inout headers_t hdr, inout meta_t meta, inout standard_metadata_t sm) { apply { } }
control CC(inout headers_t hdr, inout meta_t meta) { apply { } }
control Dep(packet_out pkt, in headers_t hdr) { apply { pkt.emit(hdr.eth); pkt.emit(hdr.v); } }
V1Switch(P(), VC(), Ing(), Eg(), CC(), Dep()) main;
