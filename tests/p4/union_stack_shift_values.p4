// union_stack_shift_values: push_front on a header union stack (the JSON's `push` of a
// `header_union_stack`): on [a=A, b=BBBB, a=C], push_front(1) leaves [-, a=A, b=BBBB], and
// the front union's `a` made valid and set shows in front. (What the front union holds before
// is left alone: simple_switch does not make a union invalid there, against the P4 spec, F37.)
#include <core.p4>
#include <v1model.p4>

header ethernet_t { bit<48> dst; bit<48> src; bit<16> ether_type; }
header a_t { bit<8> x; }
header b_t { bit<16> y; }
header_union u_t { a_t a; b_t b; }
struct headers { ethernet_t eth; u_t[3] us; }
struct metadata { }

parser MyParser(packet_in pkt, out headers hdr, inout metadata meta,
                inout standard_metadata_t smeta) {
    state start {
        pkt.extract(hdr.eth);
        pkt.extract(hdr.us[0].a);
        pkt.extract(hdr.us[1].b);
        pkt.extract(hdr.us[2].a);
        transition accept;
    }
}

control MyVerifyChecksum(inout headers hdr, inout metadata meta) { apply { } }

control MyIngress(inout headers hdr, inout metadata meta, inout standard_metadata_t smeta) {
    apply {
        hdr.us.push_front(1);
        hdr.us[0].a.setValid();
        hdr.us[0].a.x = 0x55;
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
        pkt.emit(hdr.us);
    }
}

V1Switch(MyParser(), MyVerifyChecksum(), MyIngress(), MyEgress(), MyComputeChecksum(),
         MyDeparser()) main;
