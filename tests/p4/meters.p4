// meters: two-rate three-colour meters (RFC 2698) counted in packets and in bytes. The STF
// configures index 0 of each with tiny rates, so within a test only the burst sizes matter and
// the colours follow from the buckets draining: green, then yellow once the committed bucket
// is empty, then red once the peak bucket is. Index 1 is never configured: always green.
#include <core.p4>
#include <v1model.p4>

header ethernet_t { bit<48> dst; bit<48> src; bit<16> ether_type; }
header m_t {
    bit<8> idx;
    bit<8> pcolor;   // written: colour from the packet meter
    bit<8> bcolor;   // written: colour from the byte meter
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
    meter(2, MeterType.packets) pkt_meter;
    meter(2, MeterType.bytes) byte_meter;

    apply {
        bit<2> pcolor;
        bit<2> bcolor;
        pkt_meter.execute_meter((bit<32>)hdr.m.idx, pcolor);
        byte_meter.execute_meter((bit<32>)hdr.m.idx, bcolor);
        hdr.m.pcolor = (bit<8>)pcolor;
        hdr.m.bcolor = (bit<8>)bcolor;
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
        pkt.emit(hdr.m);
    }
}

V1Switch(MyParser(), MyVerifyChecksum(), MyIngress(), MyEgress(), MyComputeChecksum(),
         MyDeparser()) main;
