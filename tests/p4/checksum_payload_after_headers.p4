// checksum_payload_after_headers: the payload of `update_checksum_with_payload` and
// `verify_checksum_with_payload` is what the parser did not extract, nothing else: a header
// parsed after the summed one is not part of it (simple_switch sums the packet's remaining
// data). The summed fields are padded to a whole byte before the payload.
#include <core.p4>
#include <v1model.p4>

header ethernet_t { bit<48> dst; bit<48> src; bit<16> ether_type; }
header in_t { bit<16> x; bit<4> nib; bit<4> pad; bit<16> sum; }
header opt_t { bit<16> b; }
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
        verify_checksum_with_payload(true, { hdr.inp.x }, hdr.inp.sum, HashAlgorithm.csum16);
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

control MyComputeChecksum(inout headers hdr, inout metadata meta) {
    apply {
        update_checksum_with_payload(true, { hdr.inp.x, hdr.inp.nib }, hdr.inp.sum,
                                     HashAlgorithm.csum16);
    }
}

control MyDeparser(packet_out pkt, in headers hdr) {
    apply {
        pkt.emit(hdr.eth);
        pkt.emit(hdr.inp);
        pkt.emit(hdr.outp);
        pkt.emit(hdr.opt);
    }
}

V1Switch(MyParser(), MyVerifyChecksum(), MyIngress(), MyEgress(), MyComputeChecksum(),
         MyDeparser()) main;
