// standard_metadata passed to a function's inout parameter, from a statement that also
// applies a table (so the function works on a copy, copied back after it): mark_to_drop on
// the copy drops the packet, an assignment to its egress_spec picks the port.
#include <core.p4>
#include <v1model.p4>

header probe_t { bit<8> a; bit<8> b; }
struct headers_t { probe_t p; }
struct meta_t { }

bit<8> route(in bit<8> x, inout standard_metadata_t m) {
    if (x == 0) {
        mark_to_drop(m);
    } else {
        m.egress_spec = (bit<9>)x;
    }
    return x + 1;
}

parser P(packet_in pkt, out headers_t hdr, inout meta_t meta, inout standard_metadata_t sm) {
    state start { pkt.extract(hdr.p); transition accept; }
}
control VC(inout headers_t hdr, inout meta_t meta) { apply { } }
control I(inout headers_t hdr, inout meta_t meta, inout standard_metadata_t sm) {
    table known { key = { hdr.p.b : exact; } actions = { NoAction; } const entries = { 7 : NoAction(); } }
    apply {
        hdr.p.a = route(hdr.p.a, sm) + (bit<8>)(bit<1>)known.apply().hit;
    }
}
control E(inout headers_t hdr, inout meta_t meta, inout standard_metadata_t sm) { apply { } }
control CC(inout headers_t hdr, inout meta_t meta) { apply { } }
control D(packet_out pkt, in headers_t hdr) { apply { pkt.emit(hdr.p); } }

V1Switch(P(), VC(), I(), E(), CC(), D()) main;
