// union_copy: copying a whole header_union (`hdr.v = hdr.u`) copies each member's validity and
// fields. It is lowered member by member (assign_header), as p4c does: with BMv2's
// assign_union primitive simple_switch copied the member's validity but stale field values
// (a union argument does not make BMv2 keep its members' field values up to date). Also: a
// union member copied into a stack element, setValid() on the other member of a union.
// Expectations checked by running p4c's JSON on real simple_switch.
#include <core.p4>
#include <v1model.p4>

header h_t { bit<8> a; bit<8> b; }
header x_t { bit<8> x; }
header y_t { bit<16> y; }
header_union u_t { x_t x; y_t y; }

struct headers { h_t h; u_t u; u_t v; x_t[2] xs; }
struct metadata { }

parser MyParser(packet_in pkt, out headers hdr, inout metadata meta,
                inout standard_metadata_t smeta) {
    state start {
        pkt.extract(hdr.h);
        transition select(hdr.h.a) {
            1: parse_x;
            2: parse_y;
            default: accept;
        }
    }
    state parse_x {
        pkt.extract(hdr.u.x);
        transition accept;
    }
    state parse_y {
        pkt.extract(hdr.u.y);
        transition accept;
    }
}

control MyVerifyChecksum(inout headers hdr, inout metadata meta) { apply { } }

control MyIngress(inout headers hdr, inout metadata meta, inout standard_metadata_t smeta) {
    apply {
        smeta.egress_spec = 1;
        hdr.v = hdr.u;
        if (hdr.u.x.isValid()) {
            hdr.xs[0] = hdr.u.x;
            hdr.xs[1].setValid();
            hdr.xs[1].x = hdr.u.x.x + 1;
        }
        if (hdr.v.isValid()) {
            hdr.h.b = 0xAA;
        }
        if (hdr.u.y.isValid()) {
            hdr.u.x.setValid();
            hdr.u.x.x = 7;
        }
    }
}

control MyEgress(inout headers hdr, inout metadata meta, inout standard_metadata_t smeta) {
    apply { }
}

control MyComputeChecksum(inout headers hdr, inout metadata meta) { apply { } }

control MyDeparser(packet_out pkt, in headers hdr) {
    apply {
        pkt.emit(hdr.h);
        pkt.emit(hdr.u);
        pkt.emit(hdr.v);
        pkt.emit(hdr.xs);
    }
}

V1Switch(MyParser(), MyVerifyChecksum(), MyIngress(), MyEgress(), MyComputeChecksum(),
         MyDeparser()) main;
