// A lookahead in a select (or an if in a parser state) on a packet too short for it:
// PacketTooShort (P4_16 12.8.3), the state's select is not taken. The lookahead is read into a
// temporary first, as p4c does; a lookahead transition key would read zeros instead.
#include <core.p4>
#include <v1model.p4>

header h_t { bit<8> op; bit<8> err; }
header x_t { bit<8> x; }
struct pair_t { bit<8> a; bit<16> b; }
struct headers_t { h_t h; x_t x; }
struct meta_t { }

parser P(packet_in pkt, out headers_t hdr, inout meta_t meta, inout standard_metadata_t sm) {
    state start {
        pkt.extract(hdr.h);
        transition select(hdr.h.op) {
            1: by_bits;
            2: by_struct;
            3: by_if;
            default: accept;
        }
    }
    state by_bits {
        transition select(pkt.lookahead<bit<16>>()) {
            0x0000: take;          // a zero-padded short packet must not get here
            0xABCD: take;
            default: accept;
        }
    }
    state by_struct {
        transition select(pkt.lookahead<pair_t>().a) {   // the whole pair_t must be there
            0x00: take;
            0xAB: take;
            default: accept;
        }
    }
    state by_if {
        if (pkt.lookahead<bit<16>>() == 0) {
            hdr.h.err = 0xEE;
        }
        transition accept;
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
