// multicast: the packet replication engine. A group is a list of nodes, each a replica id with a
// set of ports; a port may appear in several nodes of one group, and then receives one copy per
// node, in the order the nodes were associated. Egress writes each copy's replica id, port and
// instance type into the packet, and prunes the copy that would go back out of the ingress port.
// A group that does not exist produces no copies.
#include <core.p4>
#include <v1model.p4>

header ethernet_t { bit<48> dst; bit<48> src; bit<16> ether_type; }
header m_t {
    bit<16> group;   // input: the multicast group
    bit<16> rid;     // written by egress
    bit<16> port;    // written by egress
    bit<8>  itype;   // written by egress
}

struct headers {
    ethernet_t eth;
    m_t        m;
}
struct metadata { }

parser MyParser(packet_in pkt, out headers hdr, inout metadata meta,
                inout standard_metadata_t smeta) {
    state start {
        pkt.extract(hdr.eth);
        pkt.extract(hdr.m);
        transition accept;
    }
}

control MyVerifyChecksum(inout headers hdr, inout metadata meta) { apply { } }

control MyIngress(inout headers hdr, inout metadata meta, inout standard_metadata_t smeta) {
    apply {
        smeta.mcast_grp = hdr.m.group;
    }
}

control MyEgress(inout headers hdr, inout metadata meta, inout standard_metadata_t smeta) {
    apply {
        if (smeta.egress_port == smeta.ingress_port) {
            mark_to_drop(smeta);
        } else {
            hdr.m.rid = smeta.egress_rid;
            hdr.m.port = (bit<16>)smeta.egress_port;
            hdr.m.itype = (bit<8>)smeta.instance_type;
        }
    }
}

control MyComputeChecksum(inout headers hdr, inout metadata meta) { apply { } }

control MyDeparser(packet_out pkt, in headers hdr) {
    apply {
        pkt.emit(hdr.eth);
        pkt.emit(hdr.m);
    }
}

V1Switch(MyParser(), MyVerifyChecksum(), MyIngress(), MyEgress(), MyComputeChecksum(),
         MyDeparser()) main;
