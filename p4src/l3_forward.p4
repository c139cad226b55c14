// l3_forward: the project's plain IPv4 router (v1model).
//
// IPv4 packets are routed by longest-prefix match on the destination: the chosen entry gives the
// next hop's MAC and the output port, or an ECMP group whose member is picked by a hash of the
// flow's 5-tuple (forwarding.p4inc); the switch rewrites the MACs, decrements the TTL and
// recomputes the header checksum. Packets with a bad checksum or a TTL that would reach zero are
// dropped. ARP frames are flooded through a per-ingress-port multicast group when the control
// plane configures one (`arp_flood`), and dropped otherwise, so hosts can use either ARP or
// static neighbour entries. Every other frame is dropped. Per-port counters count what arrives
// and what leaves.
#include <core.p4>
#include <v1model.p4>

const bit<16> TYPE_IPV4 = 0x0800;
const bit<16> TYPE_ARP  = 0x0806;
const bit<8>  PROTO_TCP = 6;
const bit<8>  PROTO_UDP = 17;
const bit<32> NUM_PORTS = 512;

typedef bit<9>  egressSpec_t;
typedef bit<48> macAddr_t;
typedef bit<32> ip4Addr_t;

header ethernet_t {
    macAddr_t dstAddr;
    macAddr_t srcAddr;
    bit<16>   etherType;
}

header ipv4_t {
    bit<4>    version;
    bit<4>    ihl;
    bit<8>    diffserv;
    bit<16>   totalLen;
    bit<16>   identification;
    bit<3>    flags;
    bit<13>   fragOffset;
    bit<8>    ttl;
    bit<8>    protocol;
    bit<16>   hdrChecksum;
    ip4Addr_t srcAddr;
    ip4Addr_t dstAddr;
}

#include "forwarding_types.p4inc"

struct metadata {
    forwarding_metadata_t fwd;
}

struct headers {
    ethernet_t ethernet;
    ipv4_t     ipv4;
    l4_ports_t l4;
}

parser MyParser(packet_in packet, out headers hdr, inout metadata meta,
                inout standard_metadata_t standard_metadata) {
    state start {
        packet.extract(hdr.ethernet);
        transition select(hdr.ethernet.etherType) {
            TYPE_IPV4: parse_ipv4;
            default: accept;
        }
    }
    state parse_ipv4 {
        packet.extract(hdr.ipv4);
        // Ports only where they are: TCP/UDP without IP options, not a later fragment.
        transition select(hdr.ipv4.ihl, hdr.ipv4.fragOffset, hdr.ipv4.protocol) {
            (5, 0, PROTO_TCP): parse_l4_ports;
            (5, 0, PROTO_UDP): parse_l4_ports;
            default: accept;
        }
    }
    state parse_l4_ports {
        packet.extract(hdr.l4);
        meta.fwd.l4_src = hdr.l4.srcPort;
        meta.fwd.l4_dst = hdr.l4.dstPort;
        transition accept;
    }
}

control MyVerifyChecksum(inout headers hdr, inout metadata meta) {
    apply {
        verify_checksum(hdr.ipv4.isValid() && hdr.ipv4.ihl == 5,
            { hdr.ipv4.version, hdr.ipv4.ihl, hdr.ipv4.diffserv, hdr.ipv4.totalLen,
              hdr.ipv4.identification, hdr.ipv4.flags, hdr.ipv4.fragOffset,
              hdr.ipv4.ttl, hdr.ipv4.protocol, hdr.ipv4.srcAddr, hdr.ipv4.dstAddr },
            hdr.ipv4.hdrChecksum, HashAlgorithm.csum16);
    }
}

control MyIngress(inout headers hdr, inout metadata meta,
                  inout standard_metadata_t standard_metadata) {
    counter(NUM_PORTS, CounterType.packets_and_bytes) rx_port_counter;

#include "forwarding.p4inc"

    apply {
        rx_port_counter.count((bit<32>)standard_metadata.ingress_port);
        if (hdr.ipv4.isValid()) {
            if (standard_metadata.checksum_error == 1 || hdr.ipv4.ttl <= 1) {
                drop();
            } else {
                switch (ipv4_lpm.apply().action_run) {
                    ecmp_group: { ecmp_nhop.apply(); }
                }
            }
        } else if (hdr.ethernet.etherType == TYPE_ARP) {
            arp_flood.apply();
        } else {
            drop();
        }
    }
}

control MyEgress(inout headers hdr, inout metadata meta,
                 inout standard_metadata_t standard_metadata) {
    counter(NUM_PORTS, CounterType.packets_and_bytes) tx_port_counter;

    apply {
        // A flooded replica never goes back where it came from.
        if (standard_metadata.instance_type == 5 &&
            standard_metadata.egress_port == standard_metadata.ingress_port) {
            mark_to_drop(standard_metadata);
        } else {
            tx_port_counter.count((bit<32>)standard_metadata.egress_port);
        }
    }
}

control MyComputeChecksum(inout headers hdr, inout metadata meta) {
    apply {
        update_checksum(hdr.ipv4.isValid() && hdr.ipv4.ihl == 5,
            { hdr.ipv4.version, hdr.ipv4.ihl, hdr.ipv4.diffserv, hdr.ipv4.totalLen,
              hdr.ipv4.identification, hdr.ipv4.flags, hdr.ipv4.fragOffset,
              hdr.ipv4.ttl, hdr.ipv4.protocol, hdr.ipv4.srcAddr, hdr.ipv4.dstAddr },
            hdr.ipv4.hdrChecksum, HashAlgorithm.csum16);
    }
}

control MyDeparser(packet_out packet, in headers hdr) {
    apply {
        packet.emit(hdr.ethernet);
        packet.emit(hdr.ipv4);
        packet.emit(hdr.l4);
    }
}

V1Switch(MyParser(), MyVerifyChecksum(), MyIngress(), MyEgress(), MyComputeChecksum(),
         MyDeparser()) main;
