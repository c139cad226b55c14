// hash_edges: what simple_switch makes of a hash's edges. A max of 0 gives the base (it is
// taken as 1); base and max are 64-bit numbers (a wider base keeps its low 64 bits) and so is
// their sum, which wraps; the data list is a value, so a field of an invalid header counts with
// its value (0 here) and keeps the data's width, and a negative constant counts as its two's
// complement. identity over more than 8 bytes is their first 8.
#include <core.p4>
#include <v1model.p4>

header ethernet_t { bit<48> dst; bit<48> src; bit<16> ether_type; }
header in_t { bit<8> b; bit<32> x; }
header opt_t { bit<8> a; }
header out_t {
    bit<16> base_only;      // csum16({x}) with max 0: the base, 0x33
    bit<72> wide_base;      // identity with a 72-bit base and max 0: the base's low 64 bits
    bit<16> with_opt;       // identity({b, opt.a}): b ++ opt.a, opt.a 0 while opt is invalid
    bit<16> neg_const;      // identity({8w1, -8s82}): 0x01AE
    bit<72> sum_wraps;      // 0xFFFFFFFFFFFFFFFF + identity({b}) % 0x100, in 64 bits: b - 1
    bit<64> ident_long;     // identity({x, x, b}), 9 bytes: the first 8, x ++ x
}

struct headers {
    ethernet_t eth;
    in_t       inp;
    opt_t      opt;
    out_t      outp;
}
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

control MyVerifyChecksum(inout headers hdr, inout metadata meta) { apply { } }

control MyIngress(inout headers hdr, inout metadata meta, inout standard_metadata_t smeta) {
    apply {
        hdr.outp.setValid();
        hash(hdr.outp.base_only, HashAlgorithm.csum16, 16w0x33, { hdr.inp.x }, 16w0);
        hash(hdr.outp.wide_base, HashAlgorithm.identity, 72w0x100000000000000005, { hdr.inp.b },
             8w0);
        hash(hdr.outp.with_opt, HashAlgorithm.identity, 16w0, { hdr.inp.b, hdr.opt.a },
             32w65536);
        hash(hdr.outp.neg_const, HashAlgorithm.identity, 16w0, { 8w1, (-8s82) }, 32w65536);
        hash(hdr.outp.sum_wraps, HashAlgorithm.identity, 64w0xFFFFFFFFFFFFFFFF, { hdr.inp.b },
             64w0x100);
        hash(hdr.outp.ident_long, HashAlgorithm.identity, 64w0, { hdr.inp.x, hdr.inp.x, hdr.inp.b },
             64w0xFFFFFFFFFFFFFFFF);
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
