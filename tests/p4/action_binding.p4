// action_binding: a table action with a directional parameter, bound in the table's actions list
// (`add_to(hdr.v.a)`), so the control plane supplies only the directionless data; the same
// action bound to another field in a second table; a default action giving both the bound
// argument and data; and a switch on action_run with two labels sharing one body and a default.
#include <core.p4>
#include <v1model.p4>

header ethernet_t { bit<48> dst; bit<48> src; bit<16> ether_type; }
header v_t {
    bit<8> k;
    bit<8> a;
    bit<8> b;
    bit<8> kind;   // written: 1 when add_to or sub_from ran on a, 2 for anything else
}

struct headers {
    ethernet_t eth;
    v_t        v;
}
struct metadata { }

parser MyParser(packet_in pkt, out headers hdr, inout metadata meta,
                inout standard_metadata_t smeta) {
    state start {
        pkt.extract(hdr.eth);
        pkt.extract(hdr.v);
        transition accept;
    }
}

control MyVerifyChecksum(inout headers hdr, inout metadata meta) { apply { } }

control MyIngress(inout headers hdr, inout metadata meta, inout standard_metadata_t smeta) {
    action add_to(inout bit<8> target, bit<8> amount) {
        target = target + amount;
    }
    action sub_from(inout bit<8> target, bit<8> amount) {
        target = target - amount;
    }
    action clear(inout bit<8> target) {
        target = 0;
    }

    table on_a {
        key = { hdr.v.k : exact; }
        actions = { add_to(hdr.v.a); sub_from(hdr.v.a); clear(hdr.v.a); }
        default_action = add_to(hdr.v.a, 0x40);
    }
    table on_b {
        key = { hdr.v.k : exact; }
        actions = { add_to(hdr.v.b); NoAction; }
        default_action = NoAction();
    }

    apply {
        switch (on_a.apply().action_run) {
            add_to:
            sub_from: {
                hdr.v.kind = 1;
            }
            default: {
                hdr.v.kind = 2;
            }
        }
        on_b.apply();
        smeta.egress_spec = 1;
    }
}

control MyEgress(inout headers hdr, inout metadata meta, inout standard_metadata_t smeta) {
    apply { }
}

control MyComputeChecksum(inout headers hdr, inout metadata meta) { apply { } }

control MyDeparser(packet_out pkt, in headers hdr) {
    apply {
        pkt.emit(hdr.eth);
        pkt.emit(hdr.v);
    }
}

V1Switch(MyParser(), MyVerifyChecksum(), MyIngress(), MyEgress(), MyComputeChecksum(),
         MyDeparser()) main;
