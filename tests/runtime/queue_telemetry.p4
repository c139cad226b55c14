// queue_telemetry: a packet names its egress port (255: multicast group 1) and priority;
// egress writes the queueing
// metadata simple_switch gives it into the packet, so tests can read what the queues did.
#include <core.p4>
#include <v1model.p4>

header tele_t {
    bit<8>  port;
    bit<8>  priority;
    bit<32> enq_timestamp;
    bit<32> enq_qdepth;
    bit<32> deq_timedelta;
    bit<32> deq_qdepth;
    bit<48> egress_timestamp;
}

struct headers { tele_t tele; }
struct metadata { }

parser TeleParser(packet_in packet, out headers hdr, inout metadata meta,
                  inout standard_metadata_t sm) {
    state start {
        packet.extract(hdr.tele);
        transition accept;
    }
}

control TeleVerify(inout headers hdr, inout metadata meta) { apply { } }

control TeleIngress(inout headers hdr, inout metadata meta, inout standard_metadata_t sm) {
    apply {
        sm.egress_spec = (bit<9>) hdr.tele.port;
        sm.priority = (bit<3>) hdr.tele.priority;
        if (hdr.tele.port == 255) {
            sm.mcast_grp = 1;
        }
    }
}

control TeleEgress(inout headers hdr, inout metadata meta, inout standard_metadata_t sm) {
    apply {
        hdr.tele.enq_timestamp = sm.enq_timestamp;
        hdr.tele.enq_qdepth = (bit<32>) sm.enq_qdepth;
        hdr.tele.deq_timedelta = sm.deq_timedelta;
        hdr.tele.deq_qdepth = (bit<32>) sm.deq_qdepth;
        hdr.tele.egress_timestamp = sm.egress_global_timestamp;
    }
}

control TeleCompute(inout headers hdr, inout metadata meta) { apply { } }

control TeleDeparser(packet_out packet, in headers hdr) {
    apply { packet.emit(hdr.tele); }
}

V1Switch(TeleParser(), TeleVerify(), TeleIngress(), TeleEgress(), TeleCompute(),
         TeleDeparser()) main;
