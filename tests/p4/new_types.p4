// Types made by `type` (P4_16 7.6): stored as the type they rename, but distinct from it.
// A header field, a table key, an action parameter, a register's values and a local are of a
// new type; arithmetic goes through casts to the base type; `==` compares two values of one
// new type; a literal becomes one by assignment or initializer. P4Info names the types
// (type_name, type_info.new_types), as p4c does.
#include <core.p4>
#include <v1model.p4>

type bit<16> Kind_t;
type bit<8> Level_t;
typedef Level_t LevelAlias_t;

header ethernet_t { bit<48> dst; bit<48> src; Kind_t kind; }
header level_h { Level_t level; Level_t seen; bit<8> same; }
struct headers_t { ethernet_t eth; level_h lv; }
struct meta_t { LevelAlias_t old; }

parser P(packet_in pkt, out headers_t hdr, inout meta_t meta, inout standard_metadata_t sm) {
    state start {
        pkt.extract(hdr.eth);
        transition select((bit<16>)hdr.eth.kind) { 0x88B5: level; default: accept; }
    }
    state level { pkt.extract(hdr.lv); transition accept; }
}
control VC(inout headers_t hdr, inout meta_t meta) { apply { } }
control I(inout headers_t hdr, inout meta_t meta, inout standard_metadata_t sm) {
    register<Level_t>(1) last_level;
    action raise_by(Level_t step) {
        hdr.lv.level = (Level_t)((bit<8>)hdr.lv.level + (bit<8>)step);
    }
    action set_kind(Kind_t k) { hdr.eth.kind = k; }
    table by_kind {
        key = { hdr.eth.kind : exact; }
        actions = { raise_by; set_kind; NoAction; }
        const entries = {
            (Kind_t)0x88B5 : raise_by((Level_t)3);
            (Kind_t)0x0800 : set_kind((Kind_t)0x86DD);
        }
        default_action = NoAction();
    }
    table rewrite {   // filled by the control plane
        key = { hdr.eth.kind : exact; }
        actions = { set_kind; NoAction; }
        default_action = NoAction();
    }
    apply {
        sm.egress_spec = 1;
        Level_t before = 0;
        if (hdr.lv.isValid()) {
            before = hdr.lv.level;
        }
        if (!by_kind.apply().hit) {
            rewrite.apply();
        }
        if (hdr.lv.isValid()) {
            last_level.read(meta.old, 0);
            hdr.lv.seen = meta.old;          // the level the previous packet left
            last_level.write(0, hdr.lv.level);
            hdr.lv.same = hdr.lv.level == before ? 8w1 : 8w0;
        }
    }
}
control E(inout headers_t hdr, inout meta_t meta, inout standard_metadata_t sm) { apply { } }
control CC(inout headers_t hdr, inout meta_t meta) { apply { } }
control D(packet_out pkt, in headers_t hdr) { apply { pkt.emit(hdr.eth); pkt.emit(hdr.lv); } }
V1Switch(P(), VC(), I(), E(), CC(), D()) main;
