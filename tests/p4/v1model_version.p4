// v1model_version: a program written for V1MODEL_VERSION 20200408, where v1model.p4 declares
// PortId_t and counters, meters and registers take their index type as a type parameter I
// (here bit<4>): the register keeps a per-slot packet count read and bumped by every packet,
// the counter counts per slot, and the output port is a PortId_t value.
#define V1MODEL_VERSION 20200408
#include <core.p4>
#include <v1model.p4>

header slot_t { bit<8> slot; bit<8> seen; }   // seen: packets of this slot before this one

struct headers { slot_t s; }
struct metadata { }

parser MyParser(packet_in pkt, out headers hdr, inout metadata meta,
                inout standard_metadata_t smeta) {
    state start { pkt.extract(hdr.s); transition accept; }
}

control MyVerify(inout headers hdr, inout metadata meta) { apply { } }

control MyIngress(inout headers hdr, inout metadata meta, inout standard_metadata_t smeta) {
    register<bit<8>, bit<4>>(16) seen;
    counter<bit<4>>(16, CounterType.packets) per_slot;
    apply {
        bit<4> index = hdr.s.slot[3:0];
        bit<8> before;
        seen.read(before, index);
        seen.write(index, before + 1);
        per_slot.count(index);
        hdr.s.seen = before;
        PortId_t port = 2;
        smeta.egress_spec = port;
    }
}

control MyEgress(inout headers hdr, inout metadata meta, inout standard_metadata_t smeta) {
    apply { }
}
control MyCompute(inout headers hdr, inout metadata meta) { apply { } }
control MyDeparser(packet_out pkt, in headers hdr) { apply { pkt.emit(hdr.s); } }

V1Switch(MyParser(), MyVerify(), MyIngress(), MyEgress(), MyCompute(), MyDeparser()) main;
