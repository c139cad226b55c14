// An exit inside a sub-control whose `hdr` argument aliases another inout argument (the type
// field), so the headers are copied in: their copy-out, and the type's, still happen after the
// exit (P4_16 12.5), from the apply block and from its table's action. p4c 1.2.5's JSON skips
// them (difftest finding F26): its output keeps the packet's src and type.
#include <core.p4>
#include <v1model.p4>
header eth_t { bit<48> dst; bit<48> src; bit<16> type; }
struct headers_t { eth_t eth; }
struct meta_t { bit<16> m; }
parser P(packet_in pkt, out headers_t hdr, inout meta_t meta, inout standard_metadata_t sm) {
    state start { pkt.extract(hdr.eth); transition accept; }
}
control V(inout headers_t hdr, inout meta_t meta) { apply {} }
control Sub(inout headers_t hdr, inout bit<16> b) {
    action bye() { exit; }
    table t { key = { hdr.eth.dst : exact; } actions = { bye; NoAction; } const default_action = bye(); }
    apply {
        hdr.eth.src[15:0] = 0xBEEF;
        b = b + 1;
        if (hdr.eth.dst[7:0] == 1) { exit; }
        if (hdr.eth.dst[7:0] == 2) { t.apply(); }
    }
}
control I(inout headers_t hdr, inout meta_t meta, inout standard_metadata_t sm) {
    Sub() sub;
    apply { sm.egress_spec = 1; sub.apply(hdr, hdr.eth.type); hdr.eth.dst[47:40] = 0xAA; }
}
control E(inout headers_t hdr, inout meta_t meta, inout standard_metadata_t sm) { apply {} }
control C(inout headers_t hdr, inout meta_t meta) { apply {} }
control D(packet_out pkt, in headers_t hdr) { apply { pkt.emit(hdr.eth); } }
V1Switch(P(), V(), I(), E(), C(), D()) main;
