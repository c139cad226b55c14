// arith: expression semantics on bit<W> and int<W>. One packet carries operands; ingress
// inserts a results header with one field per operation: unsigned and signed saturating
// add/sub, constant and variable shifts (logical and arithmetic), slices (read and lvalue),
// concatenation, sign and zero extension, truncation, the conditional operator with unsigned
// and signed comparisons, wrapping multiply, negation, complement and a bool-to-bit cast.
#include <core.p4>
#include <v1model.p4>

header ethernet_t { bit<48> dst; bit<48> src; bit<16> ether_type; }

header operands_t {
    bit<8>  a;
    bit<8>  b;
    bit<16> c;
    bit<32> d;
}

header results_t {
    bit<8>  sat_add_u;   // a |+| b
    bit<8>  sat_sub_u;   // a |-| b
    bit<8>  sat_add_s;   // (int<8>)a |+| (int<8>)b
    bit<8>  sat_sub_s;   // (int<8>)a |-| (int<8>)b
    bit<8>  shl;         // a << 3
    bit<8>  shr_u;       // a >> 3
    bit<8>  shr_s;       // (int<8>)a >> 3
    bit<8>  slice;       // c[11:4]
    bit<16> concat;      // a ++ b
    bit<16> sext;        // (int<8>)a widened to 16 bits
    bit<8>  trunc;       // (bit<8>)d
    bit<8>  umax;        // a > b ? a : b
    bit<8>  smin;        // signed a < signed b ? a : b
    bit<8>  mul;         // a * b (wraps)
    bit<8>  neg;         // -a
    bit<8>  inv;         // ~a
    bit<8>  mix;         // a[3:0] ++ b[7:4], written through lvalue slices
    bit<8>  eq;          // (bit<1>)(a == b), widened
    bit<32> shr_var;     // d >> (b & 7)
    bit<32> wide;        // d + (a ++ c)
}

struct headers {
    ethernet_t eth;
    operands_t ops;
    results_t  res;
}
struct metadata { }

parser MyParser(packet_in pkt, out headers hdr, inout metadata meta,
                inout standard_metadata_t smeta) {
    state start {
        pkt.extract(hdr.eth);
        transition select(hdr.eth.ether_type) {
            0x88B5: parse_ops;
            default: accept;
        }
    }
    state parse_ops {
        pkt.extract(hdr.ops);
        transition accept;
    }
}

control MyVerifyChecksum(inout headers hdr, inout metadata meta) { apply { } }

control MyIngress(inout headers hdr, inout metadata meta, inout standard_metadata_t smeta) {
    apply {
        if (!hdr.ops.isValid()) {
            mark_to_drop(smeta);
            exit;
        }
        bit<8> a = hdr.ops.a;
        bit<8> b = hdr.ops.b;
        int<8> sa = (int<8>)a;
        int<8> sb = (int<8>)b;

        hdr.res.setValid();
        hdr.res.sat_add_u = a |+| b;
        hdr.res.sat_sub_u = a |-| b;
        hdr.res.sat_add_s = (bit<8>)(sa |+| sb);
        hdr.res.sat_sub_s = (bit<8>)(sa |-| sb);
        hdr.res.shl = a << 3;
        hdr.res.shr_u = a >> 3;
        hdr.res.shr_s = (bit<8>)(sa >> 3);
        hdr.res.slice = hdr.ops.c[11:4];
        hdr.res.concat = a ++ b;
        hdr.res.sext = (bit<16>)((int<16>)sa);
        hdr.res.trunc = (bit<8>)hdr.ops.d;
        hdr.res.umax = a > b ? a : b;
        hdr.res.smin = sa < sb ? a : b;
        hdr.res.mul = a * b;
        hdr.res.neg = -a;
        hdr.res.inv = ~a;
        hdr.res.mix[7:4] = a[3:0];
        hdr.res.mix[3:0] = b[7:4];
        hdr.res.eq = (bit<8>)((bit<1>)(a == b));
        hdr.res.shr_var = hdr.ops.d >> (b & 8w7);
        hdr.res.wide = hdr.ops.d + (bit<32>)(a ++ hdr.ops.c);
        smeta.egress_spec = 2;
    }
}

control MyEgress(inout headers hdr, inout metadata meta, inout standard_metadata_t smeta) {
    apply { }
}

control MyComputeChecksum(inout headers hdr, inout metadata meta) { apply { } }

control MyDeparser(packet_out pkt, in headers hdr) {
    apply {
        pkt.emit(hdr.eth);
        pkt.emit(hdr.ops);
        pkt.emit(hdr.res);
    }
}

V1Switch(MyParser(), MyVerifyChecksum(), MyIngress(), MyEgress(), MyComputeChecksum(),
         MyDeparser()) main;
