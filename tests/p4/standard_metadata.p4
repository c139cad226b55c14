// standard_metadata: what simple_switch fills in. Ingress sees the ingress port and the length
// of the frame as received; egress sees the port the packet is leaving on, the same ingress
// port and length, instance type 0 and replica id 0 for a plain unicast packet. The output
// port is taken from the packet itself.
#include <core.p4>
#include <v1model.p4>

header ethernet_t { bit<48> dst; bit<48> src; bit<16> ether_type; }
header sm_t {
    bit<16> out_port;        // input: where to send the packet
    bit<16> in_port_ing;     // ingress: ingress_port
    bit<32> len_ing;         // ingress: packet_length
    bit<16> in_port_egr;     // egress: ingress_port
    bit<16> egress_port;     // egress: egress_port
    bit<32> len_egr;         // egress: packet_length
    bit<8>  itype;           // egress: instance_type
    bit<16> rid;             // egress: egress_rid
}

struct headers {
    ethernet_t eth;
    sm_t       sm;
}
struct metadata { }

parser MyParser(packet_in pkt, out headers hdr, inout metadata meta,
                inout standard_metadata_t smeta) {
    state start {
        pkt.extract(hdr.eth);
        pkt.extract(hdr.sm);
        transition accept;
    }
}

control MyVerifyChecksum(inout headers hdr, inout metadata meta) { apply { } }

control MyIngress(inout headers hdr, inout metadata meta, inout standard_metadata_t smeta) {
    apply {
        hdr.sm.in_port_ing = (bit<16>)smeta.ingress_port;
        hdr.sm.len_ing = smeta.packet_length;
        smeta.egress_spec = (bit<9>)hdr.sm.out_port;
    }
}

control MyEgress(inout headers hdr, inout metadata meta, inout standard_metadata_t smeta) {
    apply {
        hdr.sm.in_port_egr = (bit<16>)smeta.ingress_port;
        hdr.sm.egress_port = (bit<16>)smeta.egress_port;
        hdr.sm.len_egr = smeta.packet_length;
        hdr.sm.itype = (bit<8>)smeta.instance_type;
        hdr.sm.rid = smeta.egress_rid;
    }
}

control MyComputeChecksum(inout headers hdr, inout metadata meta) { apply { } }

control MyDeparser(packet_out pkt, in headers hdr) {
    apply {
        pkt.emit(hdr.eth);
        pkt.emit(hdr.sm);
    }
}

V1Switch(MyParser(), MyVerifyChecksum(), MyIngress(), MyEgress(), MyComputeChecksum(),
         MyDeparser()) main;
