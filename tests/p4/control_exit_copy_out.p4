// An `exit` inside an inlined sub-control whose parameters are copied in and out (its `in`
// argument is a field the control writes before reading the parameter, so the arguments need
// temporaries): the copy-outs of its `inout` parameters still happen (P4_16 12.5), whether
// the exit is a statement of its apply block, in an action it calls, or in the action its
// table runs (one with a directional parameter of its own too). Egress, which still runs, shows what was copied out.
#include <core.p4>
#include <v1model.p4>

header eth_t { bit<48> dst; bit<48> src; bit<16> type; }
struct headers_t { eth_t eth; }
struct meta_t { bit<16> m; }

parser P(packet_in pkt, out headers_t hdr, inout meta_t meta, inout standard_metadata_t sm) {
    state start { pkt.extract(hdr.eth); transition accept; }
}
control V(inout headers_t hdr, inout meta_t meta) { apply {} }
control Sub(inout headers_t hdr, in bit<16> y, inout bit<16> z) {
    action bye() { exit; }
    action bye_with(inout bit<16> w) { w = w + 0x100; exit; }
    table t {
        key = { hdr.eth.dst : exact; }
        actions = { bye; NoAction; }
        const default_action = bye();
    }
    table t2 {
        key = { hdr.eth.dst : exact; }
        actions = { bye_with(z); NoAction; }
        const default_action = bye_with(z);
    }
    apply {
        hdr.eth.type = 5;
        hdr.eth.src[15:0] = y;          // the type copied in
        z = z + 1;
        if (y == 0x1111) {
            exit;
        } else if (y == 0x2222) {
            bye();
        } else if (y == 0x3333) {
            t.apply();
        } else if (y == 0x5555) {
            t2.apply();
        }
        z = z + 10;
    }
}
control I(inout headers_t hdr, inout meta_t meta, inout standard_metadata_t sm) {
    Sub() sub;
    apply {
        sm.egress_spec = 1;
        meta.m = 7;
        sub.apply(hdr, hdr.eth.type, meta.m);
        hdr.eth.dst[47:40] = 0xAA;      // not reached after an exit
    }
}
control E(inout headers_t hdr, inout meta_t meta, inout standard_metadata_t sm) {
    apply { hdr.eth.dst[15:0] = meta.m; }
}
control C(inout headers_t hdr, inout meta_t meta) { apply {} }
control D(packet_out pkt, in headers_t hdr) { apply { pkt.emit(hdr.eth); } }
V1Switch(P(), V(), I(), E(), C(), D()) main;
