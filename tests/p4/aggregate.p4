// aggregate: a miniature in-network aggregation slot pool. Each packet is one worker's
// contribution to a slot; registers hold the running sum, the number of contributions and a
// bitmap of the workers seen (so a retransmitted contribution is not added twice). Contributions
// are consumed (dropped) until the last worker's arrives; then the total is multicast to every
// worker and the slot is cleared for reuse. Exercises register read-modify-write across several
// arrays, a variable shift, and multicast from a computed decision.
#include <core.p4>
#include <v1model.p4>

#define SLOTS 8

header ethernet_t { bit<48> dst; bit<48> src; bit<16> ether_type; }
header agg_t {
    bit<16> slot;
    bit<8>  worker;      // 0..31
    bit<8>  n_workers;
    bit<32> value;
    bit<32> result;      // written when the slot completes
    bit<8>  count;       // contributions so far, this one included
}

struct headers {
    ethernet_t eth;
    agg_t      agg;
}
struct metadata { }

parser MyParser(packet_in pkt, out headers hdr, inout metadata meta,
                inout standard_metadata_t smeta) {
    state start {
        pkt.extract(hdr.eth);
        transition select(hdr.eth.ether_type) {
            0x88B5: parse_agg;
            default: accept;
        }
    }
    state parse_agg {
        pkt.extract(hdr.agg);
        transition accept;
    }
}

control MyVerifyChecksum(inout headers hdr, inout metadata meta) { apply { } }

control MyIngress(inout headers hdr, inout metadata meta, inout standard_metadata_t smeta) {
    register<bit<32>>(SLOTS) sums;
    register<bit<8>>(SLOTS) counts;
    register<bit<32>>(SLOTS) seen;

    apply {
        if (!hdr.agg.isValid() || hdr.agg.slot >= SLOTS) {
            mark_to_drop(smeta);
            exit;
        }
        bit<32> index = (bit<32>)hdr.agg.slot;
        bit<32> bit_of_worker = 32w1 << hdr.agg.worker;
        bit<32> seen_bits;
        seen.read(seen_bits, index);
        if ((seen_bits & bit_of_worker) != 0) {
            mark_to_drop(smeta);      // a retransmission: already counted
            exit;
        }
        bit<32> sum;
        bit<8> count;
        sums.read(sum, index);
        counts.read(count, index);
        sum = sum + hdr.agg.value;
        count = count + 1;
        hdr.agg.count = count;
        if (count == hdr.agg.n_workers) {
            hdr.agg.result = sum;
            smeta.mcast_grp = 1;
            sums.write(index, 0);
            counts.write(index, 0);
            seen.write(index, 0);
        } else {
            sums.write(index, sum);
            counts.write(index, count);
            seen.write(index, seen_bits | bit_of_worker);
            mark_to_drop(smeta);
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
        pkt.emit(hdr.agg);
    }
}

V1Switch(MyParser(), MyVerifyChecksum(), MyIngress(), MyEgress(), MyComputeChecksum(),
         MyDeparser()) main;
