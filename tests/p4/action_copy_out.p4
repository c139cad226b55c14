// Copy-in/copy-out of actions' directional parameters (P4_16 6.8), where binding them by name
// would differ: an `in` argument given in a table's actions list whose source the action writes
// before reading the parameter (it reads the value copied in), copy-outs that an `exit` must
// still make (12.5; seen in egress, which still runs), for an action called directly and for
// one a table runs, and arguments in an actions list that call a function changing a header
// field (p4c's issue2321): each call runs when the action does, in order; and a constant
// entry's action data after its bound arguments.
#include <core.p4>
#include <v1model.p4>

header eth_t { bit<48> dst; bit<48> src; bit<16> type; }
header op_t { bit<8> op; bit<16> seen; bit<16> counter; }
struct headers_t { eth_t eth; op_t op; }
struct meta_t { bit<16> m; }

bit<16> bump(inout bit<16> x) { x = x | 7; return x >> 1; }

parser P(packet_in pkt, out headers_t hdr, inout meta_t meta, inout standard_metadata_t sm) {
    state start { pkt.extract(hdr.eth); pkt.extract(hdr.op); transition accept; }
}
control V(inout headers_t hdr, inout meta_t meta) { apply {} }
control I(inout headers_t hdr, inout meta_t meta, inout standard_metadata_t sm) {
    action read_late(in bit<16> y, inout bit<16> z) {
        hdr.eth.type = 0x0005;
        hdr.op.seen = y;            // the type copied in, not 5
        z = z + 1;
        if (y == 0x1234) { exit; }  // z is still copied out
        z = z + 0x10;
    }
    action sum_of(in bit<16> a, in bit<16> b) { hdr.op.seen = a + b; }
    action tag(in bit<16> base, bit<16> plus) { hdr.op.seen = base + plus; }
    table by_op {
        key = { hdr.op.op : exact; }
        actions = { read_late(hdr.eth.type, meta.m); sum_of(bump(hdr.eth.type), bump(hdr.eth.type));
                    tag(16w0x4000); NoAction; }
        const entries = {
            1 : read_late(hdr.eth.type, meta.m);
            2 : sum_of(bump(hdr.eth.type), bump(hdr.eth.type));
            4 : tag(16w0x4000, 16w2);   // the data is 2; 0x4000 is the bound base
        }
        const default_action = NoAction();
    }
    apply {
        sm.egress_spec = 1;
        meta.m = 7;
        if (hdr.op.op == 3) {
            read_late(hdr.eth.type, meta.m);
        } else {
            by_op.apply();
        }
        hdr.op.counter = 0xEEEE;    // not reached after an exit
    }
}
control E(inout headers_t hdr, inout meta_t meta, inout standard_metadata_t sm) {
    apply { hdr.eth.dst[15:0] = meta.m; }
}
control C(inout headers_t hdr, inout meta_t meta) { apply {} }
control D(packet_out pkt, in headers_t hdr) { apply { pkt.emit(hdr.eth); pkt.emit(hdr.op); } }
V1Switch(P(), V(), I(), E(), C(), D()) main;
