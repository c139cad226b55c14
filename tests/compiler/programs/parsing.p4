// Parser features end to end: a header stack filled in a loop, select on a stack's last
// element, a tuple select with a range, a mask and a don't-care, lookahead, verify with a
// user error seen by ingress, a parser-local counter in metadata, and pop_front in ingress.
#include <core.p4>
#include <v1model.p4>

error { BadVersion }

header ethernet_t { bit<48> dst; bit<48> src; bit<16> ether_type; }
header vlan_t { bit<3> pcp; bit<1> cfi; bit<12> vid; bit<16> ether_type; }
header ver_t { bit<4> version; bit<4> kind; bit<8> len; }
header item_t { bit<8> v; }
struct headers_t { ethernet_t eth; vlan_t[2] vlans; ver_t ver; item_t[4] items; }
struct meta_t { bit<8> count; }

parser P(packet_in pkt, out headers_t hdr, inout meta_t meta, inout standard_metadata_t sm) {
    state start {
        pkt.extract(hdr.eth);
        transition select(hdr.eth.ether_type) {
            0x8100: parse_vlan;
            0x9001: parse_ver;
            default: accept;
        }
    }
    state parse_vlan {
        pkt.extract(hdr.vlans.next);
        transition select(hdr.vlans.last.ether_type) {
            0x8100: parse_vlan;
            0x9001: parse_ver;
            default: accept;
        }
    }
    state parse_ver {
        pkt.extract(hdr.ver);
        verify(hdr.ver.version == 1, error.BadVersion);
        transition select(hdr.ver.kind, hdr.ver.len) {
            (0x1, 0 .. 2): items;
            (0x2 &&& 0xE, _): items;
            (_, 0xF0 &&& 0xF0): accept;
            default: accept;
        }
    }
    state items {
        transition select(pkt.lookahead<bit<8>>()) {
            0: accept;
            default: one_item;
        }
    }
    state one_item {
        pkt.extract(hdr.items.next);
        meta.count = meta.count + 1;
        transition select(meta.count) {
            4: accept;
            default: items;
        }
    }
}

control VC(inout headers_t hdr, inout meta_t meta) { apply { } }

control Ing(inout headers_t hdr, inout meta_t meta, inout standard_metadata_t sm) {
    apply {
        sm.egress_spec = 1;
        if (sm.parser_error == error.BadVersion) {
            hdr.eth.src = 0xBAD;
            sm.egress_spec = 2;
            exit;
        }
        if (hdr.ver.isValid()) {
            hdr.ver.len = meta.count;
        }
        if (hdr.vlans[1].isValid()) {
            hdr.vlans.pop_front(1);
            sm.egress_spec = 3;
        }
    }
}

control Eg(inout headers_t hdr, inout meta_t meta, inout standard_metadata_t sm) { apply { } }
control CC(inout headers_t hdr, inout meta_t meta) { apply { } }
control Dep(packet_out pkt, in headers_t hdr) {
    apply { pkt.emit(hdr.eth); pkt.emit(hdr.vlans); pkt.emit(hdr.ver); pkt.emit(hdr.items); }
}

V1Switch(P(), VC(), Ing(), Eg(), CC(), Dep()) main;
