// A select case that matches everything (`_`, a tuple of `_`, `default`) before other cases:
// every packet takes it, the later cases are unreachable. (BMv2 takes a `default` transition
// only when no other transition matches, so the case must not become a mid-list `default`.)
#include <core.p4>
#include <v1model.p4>

header h0_t { bit<8> f0; bit<8> f1; }
header h1_t { bit<8> f0; }
header h2_t { bit<8> f0; }
struct headers_t { h0_t h0; h1_t h1; h2_t h2; }
struct meta_t { }

parser P(packet_in pkt, out headers_t hdr, inout meta_t meta, inout standard_metadata_t sm) {
    state start {
        pkt.extract(hdr.h0);
        transition select(hdr.h0.f0) {
            0x01: by_tuple;
            0x02: by_default;
            _: parse_h1;          // every other f0, 0x3e included
            0x3e: accept;
            default: parse_h2;
        }
    }
    state by_tuple {
        transition select(hdr.h0.f0, hdr.h0.f1) {
            (0x01, 0x07): accept;
            (_, _): parse_h2;     // everything else, 0x09 included
            (0x01, 0x09): parse_h1;
        }
    }
    state by_default {
        transition select(hdr.h0.f1) {
            default: parse_h1;
            0x09: parse_h2;
        }
    }
    state parse_h1 { pkt.extract(hdr.h1); transition parse_h2; }
    state parse_h2 { pkt.extract(hdr.h2); transition accept; }
}
control VC(inout headers_t hdr, inout meta_t meta) { apply { } }
control I(inout headers_t hdr, inout meta_t meta, inout standard_metadata_t sm) {
    apply {
        sm.egress_spec = 1;
        if (hdr.h1.isValid()) { hdr.h1.f0 = 0xAA; }
        if (hdr.h2.isValid()) { hdr.h2.f0 = 0xBB; }
    }
}
control E(inout headers_t hdr, inout meta_t meta, inout standard_metadata_t sm) { apply { } }
control CC(inout headers_t hdr, inout meta_t meta) { apply { } }
control D(packet_out pkt, in headers_t hdr) {
    apply { pkt.emit(hdr.h0); pkt.emit(hdr.h1); pkt.emit(hdr.h2); }
}
V1Switch(P(), VC(), I(), E(), CC(), D()) main;
