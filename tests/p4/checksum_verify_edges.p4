// checksum_verify_edges: simple_switch verifies a checksum only while its target field's header
// is valid (an absent optional header is no error), then under its condition, and compares the
// calculation's whole output with the field (a 16-bit sum against an 8-bit field fails unless
// the sum fits in 8 bits, even when its low byte matches).
#include <core.p4>
#include <v1model.p4>

header ethernet_t { bit<48> dst; bit<48> src; bit<16> ether_type; }
header in_t { bit<16> a; bit<8> low; }
header opt_t { bit<16> b; bit<16> sum; }
header out_t { bit<8> err; }
struct headers { ethernet_t eth; in_t inp; opt_t opt; out_t outp; }
struct metadata { }

parser MyParser(packet_in pkt, out headers hdr, inout metadata meta,
                inout standard_metadata_t smeta) {
    state start {
        pkt.extract(hdr.eth);
        pkt.extract(hdr.inp);
        transition select(hdr.eth.ether_type) {
            0x88B6: parse_opt;
            default: accept;
        }
    }
    state parse_opt {
        pkt.extract(hdr.opt);
        transition accept;
    }
}

control MyVerifyChecksum(inout headers hdr, inout metadata meta) {
    apply {
        verify_checksum(true, { hdr.opt.b }, hdr.opt.sum, HashAlgorithm.csum16);
        verify_checksum(hdr.inp.a != 0, { hdr.inp.a }, hdr.inp.low, HashAlgorithm.csum16);
    }
}

control MyIngress(inout headers hdr, inout metadata meta, inout standard_metadata_t smeta) {
    apply {
        hdr.outp.setValid();
        hdr.outp.err = (bit<8>)smeta.checksum_error;
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
        pkt.emit(hdr.inp);
        pkt.emit(hdr.opt);
        pkt.emit(hdr.outp);
    }
}

V1Switch(MyParser(), MyVerifyChecksum(), MyIngress(), MyEgress(), MyComputeChecksum(),
         MyDeparser()) main;
