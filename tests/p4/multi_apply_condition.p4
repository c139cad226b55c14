// multi_apply_condition: conditions that apply two or three tables (BMv2 applies one table per
// condition, so inaemu computes such a condition first with one if per apply), keeping
// short-circuit order: in `a.apply().hit && b.apply().hit` b runs only when a hits, in
// `a.apply().hit || b.apply().hit` only when a misses; each table's action records that it ran;
// applies inside ?: on both sides of a comparison.
#include <core.p4>
#include <v1model.p4>

header ethernet_t { bit<48> dst; bit<48> src; bit<16> ether_type; }
header r_t {
    bit<8> k;       // the key of every table
    bit<8> ran;     // one bit per table action that ran: a 01, b 02, c 04, d 08, e 10, f 20
    bit<8> both;    // 1 when a and b both hit
    bit<8> either;  // 1 when c or d hits
    bit<8> mixed;   // k == 3 && (!e.apply().miss || f.apply().hit)
    bit<8> same;    // (g.apply().hit ? 1 : 2) == (h.apply().hit ? 1 : 2): both hit or both miss
}

struct headers { ethernet_t eth; r_t r; }
struct metadata { }

parser MyParser(packet_in pkt, out headers hdr, inout metadata meta,
                inout standard_metadata_t smeta) {
    state start {
        pkt.extract(hdr.eth);
        pkt.extract(hdr.r);
        transition accept;
    }
}

control MyVerify(inout headers hdr, inout metadata meta) { apply { } }

control MyIngress(inout headers hdr, inout metadata meta, inout standard_metadata_t smeta) {
    action mark(bit<8> bit_) { hdr.r.ran = hdr.r.ran | bit_; }
    table a { key = { hdr.r.k : exact; } actions = { mark; NoAction; }
              const entries = { 1 : mark(0x01); 2 : mark(0x01); } default_action = NoAction(); }
    table b { key = { hdr.r.k : exact; } actions = { mark; NoAction; }
              const entries = { 1 : mark(0x02); 3 : mark(0x02); } default_action = NoAction(); }
    table c { key = { hdr.r.k : exact; } actions = { mark; NoAction; }
              const entries = { 2 : mark(0x04); } default_action = NoAction(); }
    table d { key = { hdr.r.k : exact; } actions = { mark; NoAction; }
              const entries = { 1 : mark(0x08); 3 : mark(0x08); } default_action = NoAction(); }
    table e { key = { hdr.r.k : exact; } actions = { mark; NoAction; }
              const entries = { 3 : mark(0x10); } default_action = NoAction(); }
    table g { key = { hdr.r.k : exact; } actions = { NoAction; }
              const entries = { 5 : NoAction(); 6 : NoAction(); } }
    table h { key = { hdr.r.k : exact; } actions = { NoAction; }
              const entries = { 5 : NoAction(); } }
    table f { key = { hdr.r.k : exact; } actions = { mark; NoAction; }
              const entries = { 3 : mark(0x20); 4 : mark(0x20); } default_action = NoAction(); }
    apply {
        smeta.egress_spec = 1;
        if (a.apply().hit && b.apply().hit) {
            hdr.r.both = 1;
        }
        if (c.apply().hit || d.apply().hit) {
            hdr.r.either = 1;
        }
        if ((g.apply().hit ? 8w1 : 8w2) == (h.apply().hit ? 8w1 : 8w2)) {
            hdr.r.same = 1;
        }
        hdr.r.mixed = hdr.r.k == 3 && (!e.apply().miss || f.apply().hit) ? 8w1 : 8w0;
    }
}

control MyEgress(inout headers hdr, inout metadata meta, inout standard_metadata_t smeta) {
    apply { }
}

control MyCompute(inout headers hdr, inout metadata meta) { apply { } }

control MyDeparser(packet_out pkt, in headers hdr) {
    apply {
        pkt.emit(hdr.eth);
        pkt.emit(hdr.r);
    }
}

V1Switch(MyParser(), MyVerify(), MyIngress(), MyEgress(), MyCompute(), MyDeparser()) main;
