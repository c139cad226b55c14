// backpressure: what a queue behind a shaped link looks like to P4. Every UDP packet to port
// 7777 carries a 4-byte probe header right after its UDP header, into which egress writes
// the deq_qdepth it saw; ECN-capable IPv4 packets are marked Congestion Experienced (ecn 3)
// when enq_qdepth reaches MARK_AT. Forwarding needs no control plane: port 1 and port 3 send
// to port 2, port 2 sends to port 1.
#include <core.p4>
#include <v1model.p4>

const bit<19> MARK_AT = 10;
const bit<16> PROBE_UDP_PORT = 7777;

header eth_h {
    bit<48> dst;
    bit<48> src;
    bit<16> type;
}

header ip4_h {
    bit<4>  version;
    bit<4>  ihl;
    bit<6>  dscp;
    bit<2>  ecn;
    bit<16> length;
    bit<16> id;
    bit<3>  flags;
    bit<13> offset;
    bit<8>  ttl;
    bit<8>  proto;
    bit<16> checksum;
    bit<32> src;
    bit<32> dst;
}

header udp_h {
    bit<16> sport;
    bit<16> dport;
    bit<16> length;
    bit<16> checksum;
}

header probe_h {
    bit<32> deq_qdepth;
}

struct hdrs_t {
    eth_h   eth;
    ip4_h   ip;
    udp_h   udp;
    probe_h probe;
}

struct meta_t { }

parser P(packet_in pkt, out hdrs_t h, inout meta_t m, inout standard_metadata_t sm) {
    state start {
        pkt.extract(h.eth);
        transition select(h.eth.type) { 0x0800: ip; default: accept; }
    }
    state ip {
        pkt.extract(h.ip);
        transition select(h.ip.ihl, h.ip.proto) { (5, 17): udp; default: accept; }
    }
    state udp {
        pkt.extract(h.udp);
        transition select(h.udp.dport) { PROBE_UDP_PORT: probe; default: accept; }
    }
    state probe {
        pkt.extract(h.probe);
        transition accept;
    }
}

control VC(inout hdrs_t h, inout meta_t m) { apply { } }

control I(inout hdrs_t h, inout meta_t m, inout standard_metadata_t sm) {
    apply {
        if (sm.ingress_port == 2) {
            sm.egress_spec = 1;
        } else {
            sm.egress_spec = 2;
        }
    }
}

control E(inout hdrs_t h, inout meta_t m, inout standard_metadata_t sm) {
    apply {
        if (h.probe.isValid()) {
            h.probe.deq_qdepth = (bit<32>) sm.deq_qdepth;
            h.udp.checksum = 0;      // the payload changed: no UDP checksum rather than a wrong one
        }
        if (h.ip.isValid() && h.ip.ecn != 0 && h.ip.ecn != 3 && sm.enq_qdepth >= MARK_AT) {
            h.ip.ecn = 3;
        }
    }
}

control CC(inout hdrs_t h, inout meta_t m) {
    apply {
        update_checksum(h.ip.isValid(),
            { h.ip.version, h.ip.ihl, h.ip.dscp, h.ip.ecn, h.ip.length, h.ip.id, h.ip.flags,
              h.ip.offset, h.ip.ttl, h.ip.proto, h.ip.src, h.ip.dst },
            h.ip.checksum, HashAlgorithm.csum16);
    }
}

control D(packet_out pkt, in hdrs_t h) {
    apply {
        pkt.emit(h.eth);
        pkt.emit(h.ip);
        pkt.emit(h.udp);
        pkt.emit(h.probe);
    }
}

V1Switch(P(), VC(), I(), E(), CC(), D()) main;
