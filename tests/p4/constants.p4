// constants: compile-time evaluation. Constants built from expressions (shifts, subtraction,
// concatenation, casts that truncate or sign-extend, wrapping at the declared width, unsigned
// division and modulo) must fold to the values P4's width rules give, and the same operators
// must agree at run time on a packet field (division and modulo by constant powers of two).
#include <core.p4>
#include <v1model.p4>

const bit<32> MASK20   = (1 << 20) - 1;          // 000FFFFF
const bit<8>  WRAP     = 8w255 + 1;              // 00
const bit<8>  NEG_ONE  = 8w0 - 1;                // FF
const bit<4>  TRUNC4   = (bit<4>)8w0x1F;         // F
const bit<16> TOP_BIT  = 16w1 << 15;             // 8000
const bit<16> JOINED   = 8w0xF0 ++ 8w0x0F;       // F00F
const int<8>  MIN_S8   = -128;
const bit<8>  MIN_BITS = (bit<8>)MIN_S8;         // 80
const bit<16> SEXT     = (bit<16>)(int<16>)MIN_S8;  // FF80
const bit<8>  BIG_CAST = (bit<8>)(1 << 10);      // 00 (only the low 8 bits of 1024)
const bit<8>  QUOT     = 8w200 / 7;              // 1C (28)
const bit<8>  REM      = 8w200 % 7;              // 04
const bit<8>  NOT_ZERO = ~8w0;                   // FF

header ethernet_t { bit<48> dst; bit<48> src; bit<16> ether_type; }
header k_t {
    bit<32> mask20;
    bit<8>  wrap;
    bit<8>  neg_one;
    bit<8>  trunc4;      // zero-extended from bit<4>
    bit<16> top_bit;
    bit<16> joined;
    bit<8>  min_bits;
    bit<16> sext;
    bit<8>  big_cast;
    bit<8>  quot;
    bit<8>  rem;
    bit<8>  not_zero;
    bit<8>  x;           // input for the run-time half
    bit<8>  x_div4;
    bit<8>  x_mod8;
    bit<32> x_masked;    // ((bit<32>)x << 16 | 0xABCDE) & MASK20
}

struct headers {
    ethernet_t eth;
    k_t        k;
}
struct metadata { }

parser MyParser(packet_in pkt, out headers hdr, inout metadata meta,
                inout standard_metadata_t smeta) {
    state start {
        pkt.extract(hdr.eth);
        pkt.extract(hdr.k);
        transition accept;
    }
}

control MyVerifyChecksum(inout headers hdr, inout metadata meta) { apply { } }

control MyIngress(inout headers hdr, inout metadata meta, inout standard_metadata_t smeta) {
    apply {
        hdr.k.mask20 = MASK20;
        hdr.k.wrap = WRAP;
        hdr.k.neg_one = NEG_ONE;
        hdr.k.trunc4 = (bit<8>)TRUNC4;
        hdr.k.top_bit = TOP_BIT;
        hdr.k.joined = JOINED;
        hdr.k.min_bits = MIN_BITS;
        hdr.k.sext = SEXT;
        hdr.k.big_cast = BIG_CAST;
        hdr.k.quot = QUOT;
        hdr.k.rem = REM;
        hdr.k.not_zero = NOT_ZERO;
        hdr.k.x_div4 = hdr.k.x / 4;
        hdr.k.x_mod8 = hdr.k.x % 8;
        hdr.k.x_masked = (((bit<32>)hdr.k.x << 16) | 0xABCDE) & MASK20;
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
        pkt.emit(hdr.k);
    }
}

V1Switch(MyParser(), MyVerifyChecksum(), MyIngress(), MyEgress(), MyComputeChecksum(),
         MyDeparser()) main;
