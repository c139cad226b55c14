// A value switch with a case that exits, then a sub-control whose headers are copied in (its
// arguments alias): when the case is not taken, the sub-control runs and its copy-outs
// happen (P4_16). p4c 1.2.5's JSON loses the headers then (the packet goes out empty):
// difftest finding F27.
#include <core.p4>
#include <v1model.p4>
header h_t { bit<8> a; bit<8> b; }
struct headers_t { h_t h; }
struct meta_t { bit<8> m; }
parser P(packet_in pkt, out headers_t hdr, inout meta_t meta, inout standard_metadata_t sm) {
    state start { pkt.extract(hdr.h); transition accept; }
}
control VC(inout headers_t hdr, inout meta_t meta) { apply { } }
control Sub(inout headers_t hdr, inout bit<8> x) {
    apply { hdr.h.b = 0x55; x = x + 1; }
}
control I(inout headers_t hdr, inout meta_t meta, inout standard_metadata_t sm) {
    Sub() sub;
    apply {
        sm.egress_spec = 1;
        switch (hdr.h.a) {
            3: { exit; }
        }
        sub.apply(hdr, hdr.h.a);
    }
}
control E(inout headers_t hdr, inout meta_t meta, inout standard_metadata_t sm) { apply { } }
control CC(inout headers_t hdr, inout meta_t meta) { apply { } }
control D(packet_out pkt, in headers_t hdr) { apply { pkt.emit(hdr.h); } }
V1Switch(P(), VC(), I(), E(), CC(), D()) main;
