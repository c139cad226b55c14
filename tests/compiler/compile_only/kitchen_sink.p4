// Compile-only coverage: one program using most of the language and the v1model externs. The
// test checks it compiles, loads into the runtime, and that the lowered JSON says what it should.
#include <core.p4>
#include <v1model.p4>

typedef bit<48> mac_t;
type bit<32> ip_t;
enum Color { RED, GREEN, BLUE }
header ethernet_t { mac_t dst; mac_t src; bit<16> ether_type; }
header a_t { bit<8> x; }
header b_t { bit<16> y; }
header_union ab_t { a_t a; b_t b; }
header opt_t { varbit<64> data; }
header item_t { bit<8> v; }
struct pair_t { bit<8> first; bit<8> second; }
struct learn_t { mac_t src; bit<9> port; }
struct headers_t { ethernet_t eth; ab_t ab; opt_t opt; item_t[3] items; a_t copy; }
struct meta_t {
    bool flag;
    Color color;
    pair_t pair;
    int<16> s;
    @field_list(1, 2) bit<8> keep;
    bit<2> mcolor;
    bit<8> len;
}

parser P(packet_in pkt, out headers_t hdr, inout meta_t meta, inout standard_metadata_t sm) {
    value_set<bit<16>>(4) vs;
    state start {
        pkt.extract(hdr.eth);
        transition select(hdr.eth.ether_type) {
            vs: parse_a;
            0x0B00: parse_b;
            0x0C00: parse_opt;
            default: accept;
        }
    }
    state parse_a { pkt.extract(hdr.ab.a); transition accept; }
    state parse_b { pkt.extract(hdr.ab.b); verify(hdr.ab.b.y != 0, error.NoMatch); transition accept; }
    state parse_opt {
        meta.len = pkt.lookahead<bit<8>>();
        pkt.advance(8);
        pkt.extract(hdr.opt, (bit<32>)meta.len * 8);
        transition accept;
    }
}

control VC(inout headers_t hdr, inout meta_t meta) { apply { } }

bit<8> twice(in bit<8> v) { return v + v; }

control Inner(inout headers_t hdr, inout meta_t meta) {
    action mark(bit<8> v) { meta.keep = v; }
    table inner_t { key = { hdr.eth.ether_type : exact; } actions = { mark; NoAction; } default_action = NoAction; }
    apply { inner_t.apply(); }
}

control Ing(inout headers_t hdr, inout meta_t meta, inout standard_metadata_t sm) {
    Inner() inner;
    meter(4, MeterType.packets) m;
    direct_meter<bit<2>>(MeterType.bytes) dm;
    action_selector(HashAlgorithm.crc16, 32, 10) sel;
    action fwd(bit<9> p) { sm.egress_spec = p; dm.read(meta.mcolor); }
    action stop() { exit; }
    table ecmp {
        key = { hdr.eth.dst : exact; hdr.eth.src : selector; hdr.eth.ether_type : selector; }
        actions = { fwd; }
        implementation = sel;
    }
    @name("metered_tbl") table metered {
        key = { hdr.ab.a.isValid() : exact; hdr.eth.dst : lpm; }
        actions = { fwd; stop; }
        meters = dm;
        const entries = {
            (true, 48w0x0A0000000000 &&& 48w0xFF0000000000) : fwd(1);
            (false, _) : stop();
        }
    }
    apply {
        meta.flag = hdr.ab.a.isValid();
        meta.color = Color.GREEN;
        meta.pair = {1, 2};
        meta.s = -5;
        meta.s = meta.s * 3;
        if (meta.flag && meta.color == Color.GREEN) {
            hdr.copy = hdr.ab.a;
            hdr.copy.setValid();
        }
        if (twice(meta.pair.second) == 4) {
            sm.egress_spec = (bit<9>)(bit<1>)meta.flag;
        }
        switch (hdr.eth.ether_type) {
            0x0A00: { sm.egress_spec = 10; }
            0x0B00:
            0x0C00: { sm.egress_spec = 11; }
            default: { }
        }
        hdr.items.push_front(1);
        hdr.items[0].setValid();
        hdr.items[0].v = (bit<8>)(hdr.eth.ether_type >> meta.pair.first);
        m.execute_meter(2, meta.mcolor);
        random(meta.len, 0, 100);
        inner.apply(hdr, meta);
        if (!ecmp.apply().hit) { metered.apply(); }
        digest<learn_t>(1, {hdr.eth.src, sm.ingress_port});
        log_msg("src={}, keep={}", {hdr.eth.src, meta.keep});
        assert(sm.egress_spec != 511 || true);
        if (meta.keep == 7) { resubmit_preserving_field_list(1); }
        if (meta.keep == 8) { truncate(64); }
    }
}

control Eg(inout headers_t hdr, inout meta_t meta, inout standard_metadata_t sm) {
    apply {
        if (meta.keep == 9) { recirculate_preserving_field_list(2); }
        if (meta.keep == 10) { clone_preserving_field_list(CloneType.E2E, 3, 1); }
    }
}
control CC(inout headers_t hdr, inout meta_t meta) {
    apply {
        update_checksum_with_payload(hdr.ab.b.isValid(), { hdr.ab.b.y }, hdr.ab.b.y, HashAlgorithm.csum16);
    }
}
control Dep(packet_out pkt, in headers_t hdr) {
    apply { pkt.emit(hdr.eth); pkt.emit(hdr.ab); pkt.emit(hdr.opt); pkt.emit(hdr.items); pkt.emit(hdr.copy); }
}
V1Switch(P(), VC(), Ing(), Eg(), CC(), Dep()) main;
