// parser_advance: packet_in.advance skips bytes. Skipped bytes are consumed by the parser but
// belong to no header, so the deparser never emits them: they vanish from the packet. The skip
// length is either constant or read from the packet; skipping past the end is PacketTooShort
// (the packet still reaches ingress, with the unskipped bytes as payload).
#include <core.p4>
#include <v1model.p4>

header ethernet_t { bit<48> dst; bit<48> src; bit<16> ether_type; }
header len_t    { bit<8> n; }
header tail_t   { bit<16> marker; }
header report_t { bit<8> code; bit<8> tail_valid; }

struct headers {
    ethernet_t eth;
    report_t   report;
    len_t      len;
    tail_t     tail;
}
struct metadata { }

parser MyParser(packet_in pkt, out headers hdr, inout metadata meta,
                inout standard_metadata_t smeta) {
    state start {
        pkt.extract(hdr.eth);
        transition select(hdr.eth.ether_type) {
            0x88B5: parse_len;
            0x88B6: skip_fixed;
            default: accept;
        }
    }
    state parse_len {
        pkt.extract(hdr.len);
        pkt.advance((bit<32>)hdr.len.n * 8);
        pkt.extract(hdr.tail);
        transition accept;
    }
    state skip_fixed {
        pkt.advance(16);
        pkt.extract(hdr.tail);
        transition accept;
    }
}

control MyVerifyChecksum(inout headers hdr, inout metadata meta) { apply { } }

control MyIngress(inout headers hdr, inout metadata meta, inout standard_metadata_t smeta) {
    apply {
        hdr.report.setValid();
        hdr.report.code = smeta.parser_error == error.PacketTooShort ? 8w1 : 8w0;
        hdr.report.tail_valid = hdr.tail.isValid() ? 8w1 : 8w0;
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
        pkt.emit(hdr.report);
        pkt.emit(hdr.len);
        pkt.emit(hdr.tail);
    }
}

V1Switch(MyParser(), MyVerifyChecksum(), MyIngress(), MyEgress(), MyComputeChecksum(),
         MyDeparser()) main;
