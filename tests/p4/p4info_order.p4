// The order P4Info lists things in, as p4c lists them: p4c inlines sub-controls first, so a
// sub-control instance's tables and actions come where its instance is declared among the
// caller's locals, instances made by applying a control type come after the locals (in call
// order), and top-level actions come first in each package control, in the order it first
// names them. Also a `type` with annotations besides its @p4runtime_translation. On packets:
// each table sets one byte of the probe header.
#include <core.p4>
#include <v1model.p4>

@p4runtime_translation("example.org/tag", 8)
@brief("a tag")
@custom_note("kept in type_info")
type bit<8> tag_id_t;

header probe_t { tag_id_t tag; bit<8> a; bit<8> b; bit<8> c; bit<8> d; }
struct headers_t { probe_t p; }
struct meta_t { }

action mark_a(inout probe_t p) { p.a = 0xAA; }
action mark_b(inout probe_t p) { p.b = 0xBB; }

parser P(packet_in pkt, out headers_t hdr, inout meta_t meta, inout standard_metadata_t sm) {
    state start { pkt.extract(hdr.p); transition accept; }
}
control VC(inout headers_t hdr, inout meta_t meta) { apply { } }

control SetB(inout probe_t p) {
    table b_table { key = { p.tag : exact; } actions = { mark_b(p); NoAction; } }
    apply { b_table.apply(); }
}
control SetC(inout probe_t p) {
    action mark_c() { p.c = 0xCC; }
    table c_table { key = { p.tag : exact; } actions = { mark_c; } default_action = mark_c(); }
    apply { c_table.apply(); }
}
control Direct(inout probe_t p) {
    action mark_d() { p.d = 0xDD; }
    table d_table { actions = { mark_d; } default_action = mark_d(); }
    apply { d_table.apply(); }
}

control I(inout headers_t hdr, inout meta_t meta, inout standard_metadata_t sm) {
    SetC() set_c;
    table a_table { key = { hdr.p.tag : exact; } actions = { mark_a(hdr.p); NoAction; } }
    SetB() set_b;
    apply {
        sm.egress_spec = 1;
        Direct.apply(hdr.p);
        a_table.apply();
        set_b.apply(hdr.p);
        set_c.apply(hdr.p);
    }
}
control E(inout headers_t hdr, inout meta_t meta, inout standard_metadata_t sm) { apply { } }
control CC(inout headers_t hdr, inout meta_t meta) { apply { } }
control D(packet_out pkt, in headers_t hdr) { apply { pkt.emit(hdr.p); } }

V1Switch(P(), VC(), I(), E(), CC(), D()) main;
