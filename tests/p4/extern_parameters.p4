// Externs passed to a sub-control (P4_16 14.2: an extern instance may be a control's apply
// or constructor argument): the sub-control's actions read and write the caller's register
// and count in the caller's counters, which keep their names (I.totals, I.hits, I.seen).
#include <core.p4>
#include <v1model.p4>

header entry_t { bit<8> key; bit<8> amount; bit<8> total; }
struct headers_t { entry_t e; }
struct meta_t { }

parser P(packet_in pkt, out headers_t hdr, inout meta_t meta, inout standard_metadata_t sm) {
    state start { pkt.extract(hdr.e); transition accept; }
}

// the register and one counter come in as apply arguments
control Accumulate(inout entry_t e, register<bit<8>> totals, counter hits) {
    bit<8> sum;
    action add() {
        totals.read(sum, (bit<32>)e.key);
        sum = sum + e.amount;
        totals.write((bit<32>)e.key, sum);
        hits.count((bit<32>)e.key);
    }
    table t { actions = { add; } default_action = add(); }
    apply { t.apply(); e.total = sum; }
}

// a counter given at instantiation, passed on to a second level
control Tally(in entry_t e)(counter seen) {
    apply { seen.count((bit<32>)e.amount); }
}
control Outer(in entry_t e)(counter seen) {
    Tally(seen) tally;
    apply { tally.apply(e); }
}

control VC(inout headers_t hdr, inout meta_t meta) { apply { } }
control I(inout headers_t hdr, inout meta_t meta, inout standard_metadata_t sm) {
    register<bit<8>>(16) totals;
    counter(16, CounterType.packets) hits;
    counter(16, CounterType.packets) seen;
    Accumulate() acc;
    Outer(seen) outer;
    apply {
        sm.egress_spec = 1;
        acc.apply(hdr.e, totals, hits);
        outer.apply(hdr.e);
    }
}
control E(inout headers_t hdr, inout meta_t meta, inout standard_metadata_t sm) { apply { } }
control CC(inout headers_t hdr, inout meta_t meta) { apply { } }
control D(packet_out pkt, in headers_t hdr) { apply { pkt.emit(hdr.e); } }

V1Switch(P(), VC(), I(), E(), CC(), D()) main;
