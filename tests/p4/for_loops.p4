// for_loops: C-style `for (init; cond; update)` loops (P4_16 1.2.4), which inaemu unrolls at
// compile time: a sum, `continue`, a `break` taken at run time, nested loops whose inner bound
// is the outer variable, the loop variable as a header-stack index, a loop setting a variable
// declared before it (which keeps its final value), a loop inside an action, `+=` updates, and
// a loop with a `return` inside a function.
// (p4c 1.2.5's BMv2 back end accepts these but drops the loop: its JSON runs each body once.)
#include <core.p4>
#include <v1model.p4>

header ethernet_t { bit<48> dst; bit<48> src; bit<16> ether_type; }
header d_t {
    bit<8> sum;     // + 0 + 1 + 2 + 3 + 4
    bit<8> odd;     // + 1 for each odd i below 8 (continue on even)
    bit<8> limit;   // the loop below breaks when i reaches it
    bit<8> upto;    // + 1 per iteration before the break
    bit<8> nested;  // + 1 for each (i, j) with j <= i < 3
    bit<8> act;     // shifted left three times with a 1 shifted in, by an action
    bit<8> last;    // the final value of a variable set by a loop: 1 << 4
    bit<16> bits;
    bit<16> first;  // the index of the lowest set bit of bits (FFFF: none), from a function
}
header s_t { bit<8> v; }

struct headers { ethernet_t eth; d_t d; s_t[3] s; }
struct metadata { }

bit<16> lowest_set_bit(in bit<16> v) {
    bit<16> x = v;
    for (bit<16> i = 0; i < 16; i = i + 1) {
        if (x[0:0] == 1) {
            return i;
        }
        x = x >> 1;
    }
    return 0xFFFF;
}

parser MyParser(packet_in pkt, out headers hdr, inout metadata meta,
                inout standard_metadata_t smeta) {
    state start {
        pkt.extract(hdr.eth);
        pkt.extract(hdr.d);
        pkt.extract(hdr.s.next);
        pkt.extract(hdr.s.next);
        pkt.extract(hdr.s.next);
        transition accept;
    }
}

control MyVerify(inout headers hdr, inout metadata meta) { apply { } }

control MyIngress(inout headers hdr, inout metadata meta, inout standard_metadata_t smeta) {
    action shift_in_ones() {
        for (bit<8> i = 0; i < 3; i = i + 1) {
            hdr.d.act = hdr.d.act << 1 | 1;
        }
    }
    apply {
        smeta.egress_spec = 1;
        for (bit<8> i = 0; i < 5; i = i + 1) {
            hdr.d.sum = hdr.d.sum + i;
        }
        for (bit<8> k = 0; k < 8; k += 1) {
            if ((k & 1) == 0) {
                continue;
            }
            hdr.d.odd = hdr.d.odd + 1;
        }
        for (bit<8> b = 0; b < 10; b = b + 1) {
            if (b == hdr.d.limit) {
                break;
            }
            hdr.d.upto = hdr.d.upto + 1;
        }
        for (bit<8> o = 0; o < 3; o = o + 1) {
            for (bit<8> j = 0; j <= o; j = j + 1) {
                hdr.d.nested = hdr.d.nested + 1;
            }
        }
        for (bit<32> x = 0; x < 3; x = x + 1) {
            hdr.s[x].v = hdr.s[x].v + (bit<8>)x;
        }
        bit<8> p;
        for (p = 1; p < 9; p = p << 1) { }
        hdr.d.last = p;
        shift_in_ones();
        hdr.d.first = lowest_set_bit(hdr.d.bits);
    }
}

control MyEgress(inout headers hdr, inout metadata meta, inout standard_metadata_t smeta) {
    apply { }
}

control MyCompute(inout headers hdr, inout metadata meta) { apply { } }

control MyDeparser(packet_out pkt, in headers hdr) {
    apply {
        pkt.emit(hdr.eth);
        pkt.emit(hdr.d);
        pkt.emit(hdr.s);
    }
}

V1Switch(MyParser(), MyVerify(), MyIngress(), MyEgress(), MyCompute(), MyDeparser()) main;
