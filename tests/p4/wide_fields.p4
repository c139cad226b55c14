// wide_fields: values wider than 64 bits. IPv6 is routed by LPM on the 128-bit destination and
// marked by a ternary match on the 128-bit source; a synthetic header exercises 128-bit
// arithmetic (wrapping add, shift, comparison), slices across the 64-bit boundary and
// concatenation back to 128 bits.
#include <core.p4>
#include <v1model.p4>

header ethernet_t { bit<48> dst; bit<48> src; bit<16> ether_type; }

header ipv6_t {
    bit<4>   version;
    bit<8>   trafficClass;
    bit<20>  flowLabel;
    bit<16>  payloadLen;
    bit<8>   nextHdr;
    bit<8>   hopLimit;
    bit<128> srcAddr;
    bit<128> dstAddr;
}

header wide_t {
    bit<128> a;
    bit<128> b;
    bit<128> sum;       // a + b, modulo 2^128
    bit<128> swapped;   // a[63:0] ++ a[127:64]
    bit<64>  middle;    // a[95:32]
    bit<128> shifted;   // a >> 68
    bit<8>   lt;        // a < b
}

struct headers {
    ethernet_t eth;
    ipv6_t     ipv6;
    wide_t     wide;
}
struct metadata { }

parser MyParser(packet_in pkt, out headers hdr, inout metadata meta,
                inout standard_metadata_t smeta) {
    state start {
        pkt.extract(hdr.eth);
        transition select(hdr.eth.ether_type) {
            0x86DD: parse_ipv6;
            0x88B5: parse_wide;
            default: accept;
        }
    }
    state parse_ipv6 {
        pkt.extract(hdr.ipv6);
        transition accept;
    }
    state parse_wide {
        pkt.extract(hdr.wide);
        transition accept;
    }
}

control MyVerifyChecksum(inout headers hdr, inout metadata meta) { apply { } }

control MyIngress(inout headers hdr, inout metadata meta, inout standard_metadata_t smeta) {
    action drop() {
        mark_to_drop(smeta);
    }
    action ipv6_forward(bit<48> dstAddr, bit<9> port) {
        smeta.egress_spec = port;
        hdr.eth.src = hdr.eth.dst;
        hdr.eth.dst = dstAddr;
        hdr.ipv6.hopLimit = hdr.ipv6.hopLimit - 1;
    }
    table ipv6_lpm {
        key = { hdr.ipv6.dstAddr : lpm; }
        actions = { ipv6_forward; drop; }
        default_action = drop();
    }
    action set_class(bit<8> tc) {
        hdr.ipv6.trafficClass = tc;
    }
    table src_class {
        key = { hdr.ipv6.srcAddr : ternary; }
        actions = { set_class; NoAction; }
        default_action = NoAction();
    }

    apply {
        if (hdr.ipv6.isValid()) {
            ipv6_lpm.apply();
            src_class.apply();
        } else if (hdr.wide.isValid()) {
            hdr.wide.sum = hdr.wide.a + hdr.wide.b;
            hdr.wide.swapped = hdr.wide.a[63:0] ++ hdr.wide.a[127:64];
            hdr.wide.middle = hdr.wide.a[95:32];
            hdr.wide.shifted = hdr.wide.a >> 68;
            hdr.wide.lt = hdr.wide.a < hdr.wide.b ? 8w1 : 8w0;
            smeta.egress_spec = 1;
        } else {
            drop();
        }
    }
}

control MyEgress(inout headers hdr, inout metadata meta, inout standard_metadata_t smeta) {
    apply { }
}

control MyComputeChecksum(inout headers hdr, inout metadata meta) { apply { } }

control MyDeparser(packet_out pkt, in headers hdr) {
    apply {
        pkt.emit(hdr.eth);
        pkt.emit(hdr.ipv6);
        pkt.emit(hdr.wide);
    }
}

V1Switch(MyParser(), MyVerifyChecksum(), MyIngress(), MyEgress(), MyComputeChecksum(),
         MyDeparser()) main;
