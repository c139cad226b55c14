// control_constructor_args: controls that take constructor arguments: a constant (the shift
// amount) and another control instance, applied through the parameter. One instance of Bump is
// given to two ShiftThen instances, so both apply the same Bump: its counter is one counter,
// counting twice per packet.
#include <core.p4>
#include <v1model.p4>

header value_t { bit<16> v; }
struct headers { value_t h; }
struct metadata { }

control bump_t(inout bit<16> x);

control Bump(inout bit<16> x) {
    counter(8, CounterType.packets) calls;
    apply {
        x = x + 1;
        calls.count(0);
    }
}

control ShiftThen(inout bit<16> x)(bit<4> amount, bump_t next) {
    apply {
        x = x << amount;
        next.apply(x);
    }
}

control Chain(inout bit<16> x) {
    Bump() b;
    ShiftThen(1, b) first;
    ShiftThen(3, b) second;
    apply {
        first.apply(x);
        second.apply(x);
    }
}

parser MyParser(packet_in pkt, out headers hdr, inout metadata meta,
                inout standard_metadata_t smeta) {
    state start { pkt.extract(hdr.h); transition accept; }
}

control MyVerify(inout headers hdr, inout metadata meta) { apply { } }

control MyIngress(inout headers hdr, inout metadata meta, inout standard_metadata_t smeta) {
    Chain() chain;
    apply { chain.apply(hdr.h.v); }
}

control MyEgress(inout headers hdr, inout metadata meta, inout standard_metadata_t smeta) {
    apply { }
}
control MyCompute(inout headers hdr, inout metadata meta) { apply { } }
control MyDeparser(packet_out pkt, in headers hdr) { apply { pkt.emit(hdr.h); } }

V1Switch(MyParser(), MyVerify(), MyIngress(), MyEgress(), MyCompute(), MyDeparser()) main;
