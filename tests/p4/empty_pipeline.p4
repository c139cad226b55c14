// empty_pipeline: a program with no tables and no actions (p4c writes `"actions": []`), which a
// switch must still load. Nothing sets egress_spec, so every frame leaves on port 0 as it came;
// a frame too short for Ethernet is not dropped either (PacketTooShort only ends parsing).
#include <core.p4>
#include <v1model.p4>

header ethernet_t { bit<48> dst; bit<48> src; bit<16> ether_type; }
struct headers { ethernet_t eth; }
struct metadata { }

parser MyParser(packet_in pkt, out headers hdr, inout metadata meta,
                inout standard_metadata_t smeta) {
    state start { pkt.extract(hdr.eth); transition accept; }
}

control MyVerifyChecksum(inout headers hdr, inout metadata meta) { apply { } }
control MyIngress(inout headers hdr, inout metadata meta, inout standard_metadata_t smeta) {
    apply { }
}
control MyEgress(inout headers hdr, inout metadata meta, inout standard_metadata_t smeta) {
    apply { }
}
control MyComputeChecksum(inout headers hdr, inout metadata meta) { apply { } }
control MyDeparser(packet_out pkt, in headers hdr) { apply { pkt.emit(hdr.eth); } }

V1Switch(MyParser(), MyVerifyChecksum(), MyIngress(), MyEgress(), MyComputeChecksum(),
         MyDeparser()) main;
