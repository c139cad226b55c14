// Copying an invalid header, as simple_switch's assign_header does: the destination becomes
// invalid and keeps its own field values (the source's are not copied). Reading an invalid
// header's field is unspecified in P4_16; simple_switch gives what the header last held, and
// inaemu the same. A header, a header stack (each element so) and a union are copied from
// invalid sources, then their fields are read into the valid result header r.
#include <core.p4>
#include <v1model.p4>

header eth_t { bit<48> dst; bit<48> src; bit<16> type; }
header v_t { bit<8> x; }
header_union u_t { v_t a; eth_t b; }
header r_t { bit<8> h; bit<8> s0; bit<8> s1; bit<8> u; }
struct headers_t { eth_t eth; v_t p; v_t q; v_t[2] sp; v_t[2] sq; u_t up; u_t uq; r_t r; }
struct meta_t { bit<8> m; }

parser P(packet_in pkt, out headers_t hdr, inout meta_t meta, inout standard_metadata_t sm) {
    state start {
        pkt.extract(hdr.eth);
        pkt.extract(hdr.p);
        pkt.extract(hdr.q);
        pkt.extract(hdr.sp.next);
        pkt.extract(hdr.sp.next);
        pkt.extract(hdr.sq.next);
        pkt.extract(hdr.sq.next);
        pkt.extract(hdr.up.a);
        pkt.extract(hdr.uq.a);
        transition accept;
    }
}
control V(inout headers_t hdr, inout meta_t meta) { apply {} }
control I(inout headers_t hdr, inout meta_t meta, inout standard_metadata_t sm) {
    apply {
        sm.egress_spec = 1;
        hdr.p.setInvalid();
        hdr.q = hdr.p;                 // q invalid, its x still q's
        hdr.sp[1].setInvalid();
        hdr.sq = hdr.sp;               // sq[0] = sp[0] (valid); sq[1] invalid, keeping its x
        hdr.up.a.setInvalid();
        hdr.uq = hdr.up;               // uq.a invalid, keeping its x
        hdr.r.setValid();
        hdr.r.h = hdr.q.x;
        hdr.r.s0 = hdr.sq[0].x;
        hdr.r.s1 = hdr.sq[1].x;
        hdr.r.u = hdr.uq.a.x;
    }
}
control E(inout headers_t hdr, inout meta_t meta, inout standard_metadata_t sm) { apply {} }
control C(inout headers_t hdr, inout meta_t meta) { apply {} }
control D(packet_out pkt, in headers_t hdr) { apply { pkt.emit(hdr.eth); pkt.emit(hdr.r); } }
V1Switch(P(), V(), I(), E(), C(), D()) main;
