// Function calls as table keys (p4c's issue2258 sample): each key's call runs once, just
// before the table, in key order; a call with an inout argument changes it once. The table
// writes which entry matched into hdr.e.w.
#include <core.p4>
#include <v1model.p4>

header eth_t { bit<48> dst; bit<48> src; bit<16> type; }
header e_t { bit<8> v; bit<8> w; bit<8> calls; }
struct headers_t { eth_t eth; e_t e; }
struct meta_t { bit<8> calls; }

bit<16> version() { return 16w0x0102; }
bit<8> plus_one(in bit<8> x) { return x + 1; }
bit<8> counted(inout bit<8> calls, in bit<8> x) { calls = calls + 1; return x & 0xF0; }

parser P(packet_in pkt, out headers_t hdr, inout meta_t meta, inout standard_metadata_t sm) {
    state start { pkt.extract(hdr.eth); pkt.extract(hdr.e); transition accept; }
}
control V(inout headers_t hdr, inout meta_t meta) { apply {} }
control I(inout headers_t hdr, inout meta_t meta, inout standard_metadata_t sm) {
    action found(bit<8> which) { hdr.e.w = which; }
    table t {
        key = {
            version() : exact @name("version");
            plus_one(hdr.e.v) : exact @name("next_v");
            counted(meta.calls, hdr.e.v) : exact @name("high_v");
        }
        actions = { found; NoAction; }
        const default_action = found(0xFF);
    }
    apply {
        sm.egress_spec = 1;
        meta.calls = 0;
        t.apply();
        hdr.e.calls = meta.calls;
    }
}
control E(inout headers_t hdr, inout meta_t meta, inout standard_metadata_t sm) { apply {} }
control C(inout headers_t hdr, inout meta_t meta) { apply {} }
control D(packet_out pkt, in headers_t hdr) { apply { pkt.emit(hdr.eth); pkt.emit(hdr.e); } }
V1Switch(P(), V(), I(), E(), C(), D()) main;
