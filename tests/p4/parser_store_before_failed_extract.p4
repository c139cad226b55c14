// A parser assignment made before an extract that fails stays made: the packet reaches
// ingress with parser_error set and the metadata as the parser left it (F39: p4c merges the
// two states and drops the first store, taking it for dead since the second overwrites it).
#include <core.p4>
#include <v1model.p4>

header eth_t { bit<48> dst; bit<48> src; bit<16> type; }
header big_t { bit<32> a; bit<32> b; }
header out_t { bit<16> m0; bit<8> too_short; }
struct headers_t { eth_t eth; out_t res; big_t big; }
struct meta_t { bit<16> m0; }

parser P(packet_in pkt, out headers_t hdr, inout meta_t meta, inout standard_metadata_t sm) {
    state start {
        pkt.extract(hdr.eth);
        meta.m0 = 0x5c5b;
        transition parse_big;
    }
    state parse_big {
        pkt.extract(hdr.big);     // fails on a packet with fewer than 8 bytes after eth
        meta.m0 = 0x00b8;
        transition accept;
    }
}

control VC(inout headers_t hdr, inout meta_t meta) { apply { } }

control I(inout headers_t hdr, inout meta_t meta, inout standard_metadata_t sm) {
    apply {
        hdr.res.setValid();
        hdr.res.m0 = meta.m0;
        hdr.res.too_short = (sm.parser_error == error.PacketTooShort) ? 8w1 : 8w0;
        sm.egress_spec = 1;
    }
}

control E(inout headers_t hdr, inout meta_t meta, inout standard_metadata_t sm) { apply { } }
control CC(inout headers_t hdr, inout meta_t meta) { apply { } }

control D(packet_out pkt, in headers_t hdr) {
    apply {
        pkt.emit(hdr.eth);
        pkt.emit(hdr.res);
        pkt.emit(hdr.big);
    }
}

V1Switch(P(), VC(), I(), E(), CC(), D()) main;
