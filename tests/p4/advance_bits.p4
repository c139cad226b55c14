// advance_bits: `advance` by a number of bits read from the packet. simple_switch skips only
// whole bytes: a count that is not a multiple of 8 is ParserInvalidArgument with nothing skipped
// (checked before the packet's end), one past the end of the packet PacketTooShort; parsing
// stops there and the bytes not parsed stay as payload.
#include <core.p4>
#include <v1model.p4>

header ethernet_t { bit<48> dst; bit<48> src; bit<16> ether_type; }
header len_t      { bit<8> bits; }          // how many bits to skip
header after_t    { bit<16> marker; }
header report_t   { bit<8> code; bit<8> after_valid; }

struct headers {
    ethernet_t eth;
    report_t   report;
    len_t      len;
    after_t    after;
}
struct metadata { }

parser MyParser(packet_in pkt, out headers hdr, inout metadata meta,
                inout standard_metadata_t smeta) {
    state start {
        pkt.extract(hdr.eth);
        transition select(hdr.eth.ether_type) {
            0x88B5: parse_len;
            default: accept;
        }
    }
    state parse_len {
        pkt.extract(hdr.len);
        pkt.advance((bit<32>)hdr.len.bits);
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
        } else if (smeta.parser_error == error.ParserInvalidArgument) {
            hdr.report.code = 6;
        } else {
            hdr.report.code = 0xFF;
        }
        hdr.report.after_valid = hdr.after.isValid() ? 8w1 : 8w0;
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
        pkt.emit(hdr.after);
    }
}

V1Switch(MyParser(), MyVerifyChecksum(), MyIngress(), MyEgress(), MyComputeChecksum(),
         MyDeparser()) main;
