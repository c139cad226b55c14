// minSizeInBits, minSizeInBytes, maxSizeInBits and maxSizeInBytes (P4_16 8.23): compile-time
// ints of an expression (never evaluated: an invalid header and an index past the stack's end
// are fine) or of a type's name, over bits, bools, enums, varbits, structs, tuples, unions and
// stacks. ingress writes each into the result header r.
#include <core.p4>
#include <v1model.p4>

header eth_t { bit<48> dst; bit<48> src; bit<16> type; }
header opt_t { bit<4> kind; varbit<32> data; bit<4> pad; }
header r_t { bit<8> a; bit<8> b; bit<8> c; bit<8> d; bit<8> e; bit<8> f; bit<8> g; bit<8> h; }
header small_t { bit<8> x; }
header_union u_t { small_t s; eth_t e; }
enum bit<16> Kind_t { A = 1, B = 2 }
typedef bit<12> vid_t;
typedef tuple<bit<3>, bool> tb_t;
struct pair_t { bool flag; Kind_t k; vid_t v; int<3> n; }
struct headers_t { eth_t eth; opt_t opt; small_t[3] stack; u_t u; r_t r; }
struct meta_t { pair_t p; }

parser P(packet_in pkt, out headers_t hdr, inout meta_t meta, inout standard_metadata_t sm) {
    state start { pkt.extract(hdr.eth); transition accept; }
}
control V(inout headers_t hdr, inout meta_t meta) { apply {} }
control I(inout headers_t hdr, inout meta_t meta, inout standard_metadata_t sm) {
    apply {
        sm.egress_spec = 1;
        hdr.r.setValid();
        hdr.r.a = (bit<8>)hdr.eth.minSizeInBytes();        // 14
        hdr.r.b = (bit<8>)hdr.opt.minSizeInBits();         // 8 (the varbit counts 0)
        hdr.r.c = (bit<8>)hdr.opt.maxSizeInBits();         // 40
        hdr.r.d = (bit<8>)hdr.opt.maxSizeInBytes();        // 5
        hdr.r.e = (bit<8>)meta.p.maxSizeInBits();          // 1 + 16 + 12 + 3 = 32
        hdr.r.f = (bit<8>)hdr.stack.minSizeInBytes();      // 3
        hdr.r.g = (bit<8>)hdr.u.maxSizeInBytes();          // the larger member: 14
        hdr.r.h = (bit<8>)(pair_t.minSizeInBits() + hdr.stack[2].x.minSizeInBits()
                           + tb_t.maxSizeInBits());   // 32 + 8 + 4
    }
}
control E(inout headers_t hdr, inout meta_t meta, inout standard_metadata_t sm) { apply {} }
control C(inout headers_t hdr, inout meta_t meta) { apply {} }
control D(packet_out pkt, in headers_t hdr) { apply { pkt.emit(hdr.eth); pkt.emit(hdr.r); } }
V1Switch(P(), V(), I(), E(), C(), D()) main;
