// A table applied in both branches of an `if`, each branch going on to the same code: BMv2
// holds a table once, so both applies are one node that both branches reach (as p4c joins
// them). `u`'s key is computed (k + 1): its keyless table that computes it is shared too.
#include <core.p4>
#include <v1model.p4>

header ethernet_t { bit<48> dst; bit<48> src; bit<16> ether_type; }
header v_t { bit<8> a; bit<8> k; bit<8> b; bit<8> c; }
struct headers_t { ethernet_t eth; v_t v; }
struct meta_t { }

parser P(packet_in pkt, out headers_t hdr, inout meta_t meta, inout standard_metadata_t sm) {
    state start { pkt.extract(hdr.eth); pkt.extract(hdr.v); transition accept; }
}
control VC(inout headers_t hdr, inout meta_t meta) { apply { } }
control I(inout headers_t hdr, inout meta_t meta, inout standard_metadata_t sm) {
    action set_b(bit<8> x) { hdr.v.b = x; }
    action add_c(bit<8> x) { hdr.v.c = hdr.v.c + x; }
    table t {
        key = { hdr.v.k : exact; }
        actions = { set_b; NoAction; }
        default_action = NoAction();
    }
    table u {
        key = { hdr.v.k + 1 : exact @name("k1"); }
        actions = { add_c; NoAction; }
        default_action = NoAction();
    }
    apply {
        if (hdr.v.a == 0) {
            hdr.v.k = hdr.v.k + 1;
            t.apply();
        } else {
            t.apply();
        }
        if (hdr.v.a == 1) {
            u.apply();
        } else {
            hdr.v.c = 9;
            u.apply();
        }
        sm.egress_spec = 1;
    }
}
control E(inout headers_t hdr, inout meta_t meta, inout standard_metadata_t sm) { apply { } }
control CC(inout headers_t hdr, inout meta_t meta) { apply { } }
control D(packet_out pkt, in headers_t hdr) { apply { pkt.emit(hdr.eth); pkt.emit(hdr.v); } }
V1Switch(P(), VC(), I(), E(), CC(), D()) main;
