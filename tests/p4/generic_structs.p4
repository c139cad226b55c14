// Generic structs and headers (P4_16 1.2.2): `header pair_t<A, B>` specialized twice (two
// header types, named as p4c names them: pair_t_bit8_bit16, pair_t_bit16_bit8), a generic
// struct holding a specialized header and a field of its parameter's type, extracted,
// assigned from lists and struct expressions, and used as a local and as metadata.
#include <core.p4>
#include <v1model.p4>

header eth_t { bit<48> dst; bit<48> src; bit<16> type; }
header pair_t<A, B> { A first; B second; }
struct box_t<T> { pair_t<T, bit<16>> p; T extra; }
struct headers_t { eth_t eth; pair_t<bit<8>, bit<16>> a; pair_t<bit<16>, bit<8>> b; }
struct meta_t { box_t<bit<8>> box; }

parser P(packet_in pkt, out headers_t hdr, inout meta_t meta, inout standard_metadata_t sm) {
    state start { pkt.extract(hdr.eth); pkt.extract(hdr.a); transition accept; }
}
control V(inout headers_t hdr, inout meta_t meta) { apply {} }
control I(inout headers_t hdr, inout meta_t meta, inout standard_metadata_t sm) {
    apply {
        sm.egress_spec = 1;
        meta.box = { p = hdr.a, extra = hdr.a.first + 1 };
        box_t<bit<16>> wide = { p = {0x1234, 0x5678}, extra = 7 };
        hdr.b = { wide.p.first + meta.box.p.second, meta.box.extra };
        if (wide.extra == 7) { hdr.b.second = hdr.b.second + 0x10; }
        hdr.a.first = meta.box.extra;
    }
}
control E(inout headers_t hdr, inout meta_t meta, inout standard_metadata_t sm) { apply {} }
control C(inout headers_t hdr, inout meta_t meta) { apply {} }
control D(packet_out pkt, in headers_t hdr) { apply { pkt.emit(hdr.eth); pkt.emit(hdr.a); pkt.emit(hdr.b); } }
V1Switch(P(), V(), I(), E(), C(), D()) main;
