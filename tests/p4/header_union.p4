// header_union: a one-byte kind selects which member of a header union the parser extracts.
// Ingress reports which member is valid and whether the union as a whole is, then converts the
// value to the other member: making one member valid invalidates the other, so the deparser
// (which emits the union's valid member) sends the converted form only.
#include <core.p4>
#include <v1model.p4>

header ethernet_t { bit<48> dst; bit<48> src; bit<16> ether_type; }
header kind_t   { bit<8> k; }
header small_t  { bit<16> x; }
header big_t    { bit<32> y; }
header report_t { bit<8> which; bit<8> union_valid; }

header_union value_u {
    small_t small;
    big_t   big;
}

struct headers {
    ethernet_t eth;
    report_t   report;
    kind_t     kind;
    value_u    value;
}
struct metadata { }

parser MyParser(packet_in pkt, out headers hdr, inout metadata meta,
                inout standard_metadata_t smeta) {
    state start {
        pkt.extract(hdr.eth);
        pkt.extract(hdr.kind);
        transition select(hdr.kind.k) {
            1: parse_small;
            2: parse_big;
            default: accept;
        }
    }
    state parse_small {
        pkt.extract(hdr.value.small);
        transition accept;
    }
    state parse_big {
        pkt.extract(hdr.value.big);
        transition accept;
    }
}

control MyVerifyChecksum(inout headers hdr, inout metadata meta) { apply { } }

control MyIngress(inout headers hdr, inout metadata meta, inout standard_metadata_t smeta) {
    apply {
        hdr.report.setValid();
        hdr.report.union_valid = hdr.value.isValid() ? 8w1 : 8w0;
        if (hdr.value.small.isValid()) {
            hdr.report.which = 1;
            bit<16> x = hdr.value.small.x;
            hdr.value.big.setValid();            // small becomes invalid
            hdr.value.big.y = ((bit<32>)x) << 8;
            hdr.kind.k = 2;
        } else if (hdr.value.big.isValid()) {
            hdr.report.which = 2;
            bit<32> y = hdr.value.big.y;
            hdr.value.small.setValid();          // big becomes invalid
            hdr.value.small.x = y[15:0];
            hdr.kind.k = 1;
        } else {
            hdr.report.which = 0;
        }
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
        pkt.emit(hdr.kind);
        pkt.emit(hdr.value);
    }
}

V1Switch(MyParser(), MyVerifyChecksum(), MyIngress(), MyEgress(), MyComputeChecksum(),
         MyDeparser()) main;
