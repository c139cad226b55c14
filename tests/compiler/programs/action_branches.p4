// Branches inside an action (BMv2 _jump_if_zero/_jump): an if around an extern call, an early
// return, and an if/else, in an action run as a table's default action with action data; and a
// chain of if/else if/else inside an action (a switch is not allowed in an action: P4_16 §12).
#include <core.p4>
#include <v1model.p4>

header ethernet_t { bit<48> dst; bit<48> src; bit<16> ether_type; }
header req_t { bit<8> a; bit<8> b; bit<8> flags; }
struct headers_t { ethernet_t eth; req_t req; }
struct meta_t { }

parser P(packet_in pkt, out headers_t hdr, inout meta_t meta, inout standard_metadata_t sm) {
    state start { pkt.extract(hdr.eth); pkt.extract(hdr.req); transition accept; }
}
control VC(inout headers_t hdr, inout meta_t meta) { apply { } }
control Ing(inout headers_t hdr, inout meta_t meta, inout standard_metadata_t sm) {
    action classify(bit<8> limit) {
        if (hdr.req.a > limit) {
            mark_to_drop(sm);
            return;
        }
        if (hdr.req.b == 0) {
            hdr.req.flags = 2;
        } else {
            hdr.req.flags = 1;
        }
        sm.egress_spec = 1;
    }
    table t {
        key = { hdr.eth.dst : exact; }
        actions = { classify; }
        default_action = classify(0x80);
    }
    action pick() {
        if (hdr.req.b == 1) {
            hdr.req.flags = hdr.req.flags | 0x10;
        } else if (hdr.req.b == 2 || hdr.req.b == 3) {
            hdr.req.flags = hdr.req.flags | 0x20;
        } else {
            hdr.req.flags = hdr.req.flags | 0x40;
        }
    }
    table t2 {
        key = { hdr.eth.dst : exact; }
        actions = { pick; }
        default_action = pick();
    }
    apply { t.apply(); t2.apply(); }
}
control Eg(inout headers_t hdr, inout meta_t meta, inout standard_metadata_t sm) { apply { } }
control CC(inout headers_t hdr, inout meta_t meta) { apply { } }
control Dep(packet_out pkt, in headers_t hdr) { apply { pkt.emit(hdr.eth); pkt.emit(hdr.req); } }
V1Switch(P(), VC(), Ing(), Eg(), CC(), Dep()) main;
