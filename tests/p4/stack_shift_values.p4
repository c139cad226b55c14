// stack_shift_values: what an element that push_front or pop_front made invalid holds, as
// simple_switch leaves it. It swaps elements rather than copying them, so such an element
// holds the values of one shifted out (the P4 spec leaves them unspecified; simple_switch reads
// them as they are, and its setValid() would zero them). On [A, B, C]: push_front(1) leaves
// [C*, A, B], pop_front(2) [C, B*, A*], push_front(2) [C*, B*, A] (* invalid); the low bytes
// of eth.dst take the three elements' values, valid or not.
#include <core.p4>
#include <v1model.p4>

header ethernet_t { bit<48> dst; bit<48> src; bit<16> ether_type; }
header s_t { bit<8> x; }
struct headers { ethernet_t eth; s_t[3] s; }
struct metadata { }

parser MyParser(packet_in pkt, out headers hdr, inout metadata meta,
                inout standard_metadata_t smeta) {
    state start {
        pkt.extract(hdr.eth);
        pkt.extract(hdr.s.next);
        pkt.extract(hdr.s.next);
        pkt.extract(hdr.s.next);
        transition accept;
    }
}

control MyVerifyChecksum(inout headers hdr, inout metadata meta) { apply { } }

control MyIngress(inout headers hdr, inout metadata meta, inout standard_metadata_t smeta) {
    apply {
        if (hdr.eth.ether_type == 0x88B5) {
            hdr.s.push_front(1);
        } else if (hdr.eth.ether_type == 0x88B6) {
            hdr.s.pop_front(2);
        } else {
            hdr.s.push_front(2);
        }
        hdr.eth.dst[23:0] = hdr.s[2].x ++ hdr.s[1].x ++ hdr.s[0].x;
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
        pkt.emit(hdr.s);
    }
}

V1Switch(MyParser(), MyVerifyChecksum(), MyIngress(), MyEgress(), MyComputeChecksum(),
         MyDeparser()) main;
