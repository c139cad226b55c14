// 32 register lanes read, added to, written back and copied into the packet in one action,
// as an aggregation switch does (issue 10's regression: the last write of each header lane was
// lost by the runtime's action-body locals pass when the lanes had been read as one slice).
#include <core.p4>
#include <v1model.p4>

#define FIELD(i) bit<32> d##i;
#define REG(i) register<bit<32>>(16) r##i;
#define ADD(i) r##i.read(t, idx); t = t + hdr.d.d##i; r##i.write(idx, t); hdr.d.d##i = t;
#define CLEAR(i) r##i.write(idx, 0);
#define ALL(M) M(0) M(1) M(2) M(3) M(4) M(5) M(6) M(7) M(8) M(9) M(10) M(11) M(12) M(13) M(14) \
    M(15) M(16) M(17) M(18) M(19) M(20) M(21) M(22) M(23) M(24) M(25) M(26) M(27) M(28) M(29) \
    M(30) M(31)

header agg_t { bit<16> slot; bit<8> worker; bit<8> n; }
header data_t { ALL(FIELD) }
struct headers_t { agg_t a; data_t d; }
struct meta_t { }

parser P(packet_in p, out headers_t hdr, inout meta_t m, inout standard_metadata_t sm) {
    state start { p.extract(hdr.a); p.extract(hdr.d); transition accept; }
}
control V(inout headers_t hdr, inout meta_t m) { apply { } }

control I(inout headers_t hdr, inout meta_t m, inout standard_metadata_t sm) {
    ALL(REG)
    register<bit<32>>(16) bitmap;
    register<bit<8>>(16) count;
    action add_all() {
        bit<32> idx = (bit<32>)hdr.a.slot;
        bit<32> t;
        ALL(ADD)
    }
    action clear_all() {
        bit<32> idx = (bit<32>)hdr.a.slot;
        ALL(CLEAR)
    }
    apply {
        bit<32> bm;
        bitmap.read(bm, (bit<32>)hdr.a.slot);
        bit<32> mask = (bit<32>)1 << hdr.a.worker;
        if ((bm & mask) != 0) { mark_to_drop(sm); return; }
        bitmap.write((bit<32>)hdr.a.slot, bm | mask);
        bit<8> c;
        count.read(c, (bit<32>)hdr.a.slot);
        c = c + 1;
        count.write((bit<32>)hdr.a.slot, c);
        add_all();
        if (c == hdr.a.n) {
            sm.egress_spec = 2;
            clear_all();
            bitmap.write((bit<32>)hdr.a.slot, 0);
            count.write((bit<32>)hdr.a.slot, 0);
        } else {
            mark_to_drop(sm);
        }
    }
}

control E(inout headers_t hdr, inout meta_t m, inout standard_metadata_t sm) { apply { } }
control C(inout headers_t hdr, inout meta_t m) { apply { } }
control D(packet_out p, in headers_t hdr) { apply { p.emit(hdr.a); p.emit(hdr.d); } }
V1Switch(P(), V(), I(), E(), C(), D()) main;
