// parser_error: what v1model on BMv2 does after a parser error. verify() with a program-declared
// error and an extract past the end of the packet (PacketTooShort) end parsing, yet the packet
// still goes through ingress with standard_metadata.parser_error set: headers extracted before
// the error stay valid, the header that failed stays invalid, and every byte not extracted is
// sent on as payload. A select with no matching case and no default does *not* raise NoMatch on
// BMv2: p4c emits no default transition, and BMv2 then ends parsing as if accepting.
#include <core.p4>
#include <v1model.p4>

error { BadVersion }

header ethernet_t { bit<48> dst; bit<48> src; bit<16> ether_type; }
header h_t        { bit<8> version; bit<8> next; }
header t_t        { bit<64> data; }
header report_t   { bit<8> code; bit<8> h_valid; bit<8> t_valid; }

struct headers {
    ethernet_t eth;
    report_t   report;
    h_t        h;
    t_t        t;
}
struct metadata { }

parser MyParser(packet_in pkt, out headers hdr, inout metadata meta,
                inout standard_metadata_t smeta) {
    state start {
        pkt.extract(hdr.eth);
        transition select(hdr.eth.ether_type) {
            0x88B5: parse_h;
            default: accept;
        }
    }
    state parse_h {
        pkt.extract(hdr.h);
        verify(hdr.h.version == 1, error.BadVersion);
        transition select(hdr.h.next) {
            1: parse_t;
            2: accept;
        }
    }
    state parse_t {
        pkt.extract(hdr.t);
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
        } else if (smeta.parser_error == error.NoMatch) {
            hdr.report.code = 2;
        } else if (smeta.parser_error == error.BadVersion) {
            hdr.report.code = 3;
        } else {
            hdr.report.code = 0xFF;
        }
        hdr.report.h_valid = hdr.h.isValid() ? 8w1 : 8w0;
        hdr.report.t_valid = hdr.t.isValid() ? 8w1 : 8w0;
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
        pkt.emit(hdr.h);
        pkt.emit(hdr.t);
    }
}

V1Switch(MyParser(), MyVerifyChecksum(), MyIngress(), MyEgress(), MyComputeChecksum(),
         MyDeparser()) main;
