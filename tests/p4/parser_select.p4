// parser_select: every form of select label. The ether type is matched against an exact value,
// a parser value set (filled by the control plane; empty here), a mask and a range, in order,
// with a default; a probe header is then matched on a tuple with exact, don't-care, masked and
// ranged components. One state peeks at the next byte with lookahead before extracting, and one
// hands the rest to a sub-parser. The path taken is reported in an inserted header.
#include <core.p4>
#include <v1model.p4>

header ethernet_t { bit<48> dst; bit<48> src; bit<16> ether_type; }
header probe_t    { bit<8> kind; bit<8> flag; }
header sub_t      { bit<8> v; }
header report_t   { bit<8> path; bit<8> peek; bit<8> sub_v; }

struct headers {
    ethernet_t eth;
    report_t   report;
    probe_t    probe;
    sub_t      sub;
}
struct metadata {
    bit<8> path;
    bit<8> peek;
}

// Extracts one byte into the header it is given.
parser SubParser(packet_in pkt, out sub_t s) {
    state start {
        pkt.extract(s);
        transition accept;
    }
}

parser MyParser(packet_in pkt, out headers hdr, inout metadata meta,
                inout standard_metadata_t smeta) {
    value_set<bit<16>>(4) custom_types;
    SubParser() sub_parser;

    state start {
        meta.path = 0;
        meta.peek = 0;
        pkt.extract(hdr.eth);
        transition select(hdr.eth.ether_type) {
            0x88B5: parse_probe;               // exact (also inside the mask below)
            custom_types: parse_custom;        // value set
            0x8800 &&& 0xFF00: parse_masked;   // any 0x88xx
            0x9000 .. 0x90FF: parse_ranged;    // range
            default: accept;
        }
    }
    state parse_custom { meta.path = 8; transition accept; }
    state parse_masked { meta.path = 6; transition accept; }
    state parse_ranged { meta.path = 7; transition accept; }

    state parse_probe {
        meta.path = 1;
        meta.peek = pkt.lookahead<bit<8>>();
        pkt.extract(hdr.probe);
        transition select(hdr.probe.kind, hdr.probe.flag) {
            (1, 0): parse_sub;
            (1, _): kind1_any;
            (2, 0x0F &&& 0x0F): kind2_low_nibble_set;
            (3 .. 5, _): kind3_to_5;
            default: accept;
        }
    }
    state parse_sub {
        meta.path = 2;
        sub_parser.apply(pkt, hdr.sub);
        transition accept;
    }
    state kind1_any { meta.path = 3; transition accept; }
    state kind2_low_nibble_set { meta.path = 4; transition accept; }
    state kind3_to_5 { meta.path = 5; transition accept; }
}

control MyVerifyChecksum(inout headers hdr, inout metadata meta) { apply { } }

control MyIngress(inout headers hdr, inout metadata meta, inout standard_metadata_t smeta) {
    apply {
        hdr.report.setValid();
        hdr.report.path = meta.path;
        hdr.report.peek = meta.peek;
        hdr.report.sub_v = hdr.sub.isValid() ? hdr.sub.v : 8w0xFF;
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
        pkt.emit(hdr.probe);
        pkt.emit(hdr.sub);
    }
}

V1Switch(MyParser(), MyVerifyChecksum(), MyIngress(), MyEgress(), MyComputeChecksum(),
         MyDeparser()) main;
