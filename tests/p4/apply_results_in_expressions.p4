// Tables applied inside expressions of an apply block (p4c hoists them, in order): a switch on
// a sum of three hits, an assignment adding a hit to a function's result (the function runs
// first), and an action that exits, which ends the statement at that table.
#include <core.p4>
#include <v1model.p4>

header probe_t { bit<8> a; bit<8> b; bit<8> c; bit<8> res; bit<8> calls; bit<8> sum; }
struct headers_t { probe_t p; }
struct meta_t { }

parser P(packet_in pkt, out headers_t hdr, inout meta_t meta, inout standard_metadata_t sm) {
    state start { pkt.extract(hdr.p); transition accept; }
}
bit<8> counted(inout probe_t p) { p.calls = p.calls + 1; return 8w10; }
control VC(inout headers_t hdr, inout meta_t meta) { apply { } }
control I(inout headers_t hdr, inout meta_t meta, inout standard_metadata_t sm) {
    action stop() { hdr.p.res = 0xEE; exit; }
    table ta { key = { hdr.p.a : exact; } actions = { NoAction; } const entries = { 1 : NoAction(); } }
    table td { key = { hdr.p.a : exact; } actions = { NoAction; } const entries = { 1 : NoAction(); } }
    table tb { key = { hdr.p.b : exact; } actions = { NoAction; } const entries = { 1 : NoAction(); } }
    table tc {
        key = { hdr.p.c : exact; }
        actions = { NoAction; stop; }
        const entries = { 1 : NoAction(); 9 : stop(); }
    }
    apply {
        sm.egress_spec = 1;
        switch ((bit<2>)(bit<1>)ta.apply().hit + (bit<2>)(bit<1>)tb.apply().hit +
                (bit<2>)(bit<1>)tc.apply().hit) {
            0: { hdr.p.res = 0x00; }
            1: { hdr.p.res = 0x01; }
            2: { hdr.p.res = 0x02; }
            3: { hdr.p.res = 0x03; }
        }
        hdr.p.sum = counted(hdr.p) + (bit<8>)(bit<1>)td.apply().hit;
    }
}
control E(inout headers_t hdr, inout meta_t meta, inout standard_metadata_t sm) { apply { } }
control CC(inout headers_t hdr, inout meta_t meta) { apply { } }
control D(packet_out pkt, in headers_t hdr) { apply { pkt.emit(hdr.p); } }

V1Switch(P(), VC(), I(), E(), CC(), D()) main;
