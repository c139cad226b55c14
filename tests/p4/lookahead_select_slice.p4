// A select on part of a lookahead: a slice of it, alone or beside a field (p4c's
// switch_p4_16 selects on `(pkt.lookahead<bit<4>>())[3:0]`). The lookahead is read into a
// temporary at the end of the state, where the select reads the packet; on a packet too short
// for it the state fails with PacketTooShort and its select is not taken.
#include <core.p4>
#include <v1model.p4>

header h_t { bit<8> op; bit<8> err; }
header x_t { bit<8> x; }
struct headers_t { h_t h; x_t x; }
struct meta_t { }

parser P(packet_in pkt, out headers_t hdr, inout meta_t meta, inout standard_metadata_t sm) {
    state start {
        pkt.extract(hdr.h);
        transition select(hdr.h.op) {
            1: by_slice;
            2: by_pair;
            default: accept;
        }
    }
    state by_slice {
        transition select(pkt.lookahead<bit<16>>()[11:4]) {
            0xBC: take;
            default: accept;
        }
    }
    state by_pair {
        transition select((pkt.lookahead<bit<16>>())[15:8], hdr.h.err) {
            (0xAB, 0x07): take;
            default: accept;
        }
    }
    state take { pkt.extract(hdr.x); transition accept; }
}
control VC(inout headers_t hdr, inout meta_t meta) { apply { } }
control I(inout headers_t hdr, inout meta_t meta, inout standard_metadata_t sm) {
    apply {
        sm.egress_spec = 1;
        if (sm.parser_error == error.PacketTooShort) { hdr.h.err = 0xF1; }
        if (hdr.x.isValid()) { hdr.x.x = 0x55; }
    }
}
control E(inout headers_t hdr, inout meta_t meta, inout standard_metadata_t sm) { apply { } }
control CC(inout headers_t hdr, inout meta_t meta) { apply { } }
control D(packet_out pkt, in headers_t hdr) { apply { pkt.emit(hdr.h); pkt.emit(hdr.x); } }
V1Switch(P(), VC(), I(), E(), CC(), D()) main;
