// varbit: variable-length fields. IPv4 options are extracted into a varbit whose length comes
// from the IHL and re-emitted unchanged (ipv4_options.p4 also recomputes a checksum over them).
// A small custom header has a length byte and a varbit<64> body: a length over
// the maximum raises HeaderTooShort, one past the end of the packet PacketTooShort; either way
// the packet goes on through ingress with the varbit header invalid.
#include <core.p4>
#include <v1model.p4>

header ethernet_t { bit<48> dst; bit<48> src; bit<16> ether_type; }

header ipv4_t {
    bit<4>  version;
    bit<4>  ihl;
    bit<8>  diffserv;
    bit<16> totalLen;
    bit<16> identification;
    bit<3>  flags;
    bit<13> fragOffset;
    bit<8>  ttl;
    bit<8>  protocol;
    bit<16> hdrChecksum;
    bit<32> srcAddr;
    bit<32> dstAddr;
}
header ipv4_options_t { varbit<320> options; }

header len_t    { bit<8> len; }             // bytes in the body
header body_t   { varbit<64> data; }
header after_t  { bit<16> marker; }
header report_t { bit<8> code; bit<8> var_valid; bit<8> after_valid; }

struct headers {
    ethernet_t     eth;
    report_t       report;
    ipv4_t         ipv4;
    ipv4_options_t ipv4_options;
    len_t          len;
    body_t         body;
    after_t        after;
}
struct metadata { }

parser MyParser(packet_in pkt, out headers hdr, inout metadata meta,
                inout standard_metadata_t smeta) {
    state start {
        pkt.extract(hdr.eth);
        transition select(hdr.eth.ether_type) {
            0x0800: parse_ipv4;
            0x88B5: parse_len;
            default: accept;
        }
    }
    state parse_ipv4 {
        pkt.extract(hdr.ipv4);
        transition select(hdr.ipv4.ihl) {
            5: accept;
            default: parse_ipv4_options;
        }
    }
    state parse_ipv4_options {
        pkt.extract(hdr.ipv4_options, (bit<32>)(((bit<16>)hdr.ipv4.ihl - 5) * 32));
        transition accept;
    }
    state parse_len {
        pkt.extract(hdr.len);
        pkt.extract(hdr.body, (bit<32>)hdr.len.len * 8);
        pkt.extract(hdr.after);
        transition accept;
    }
}

control MyVerifyChecksum(inout headers hdr, inout metadata meta) { apply { } }

control MyIngress(inout headers hdr, inout metadata meta, inout standard_metadata_t smeta) {
    apply {
        hdr.report.setValid();
        if (smeta.parser_error == error.NoError) {
            hdr.report.code = 0;
        } else if (smeta.parser_error == error.PacketTooShort) {
            hdr.report.code = 1;
        } else if (smeta.parser_error == error.HeaderTooShort) {
            hdr.report.code = 4;
        } else {
            hdr.report.code = 0xFF;
        }
        hdr.report.var_valid = (hdr.body.isValid() || hdr.ipv4_options.isValid()) ? 8w1 : 8w0;
        hdr.report.after_valid = hdr.after.isValid() ? 8w1 : 8w0;
        smeta.egress_spec = hdr.ipv4.isValid() ? 9w2 : 9w1;
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
        pkt.emit(hdr.ipv4);
        pkt.emit(hdr.ipv4_options);
        pkt.emit(hdr.len);
        pkt.emit(hdr.body);
        pkt.emit(hdr.after);
    }
}

V1Switch(MyParser(), MyVerifyChecksum(), MyIngress(), MyEgress(), MyComputeChecksum(),
         MyDeparser()) main;
