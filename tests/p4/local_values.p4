// local_values: local variables the front end stores in other forms: a tuple (one variable per
// element: read whole, by index, assigned whole and by element, passed to hash()), a `const int`
// (folded, no storage), and a field of a struct returned by a function (`mk(x).b`).
#include <core.p4>
#include <v1model.p4>

header ethernet_t { bit<48> dst; bit<48> src; bit<16> ether_type; }
header d_t {
    bit<8> x;
    bit<16> y;
    bit<8> t0;    // t[0] after t = {x, y}; t[0] = t[0] + 1
    bit<16> t1;   // t[1] after t = u (u = {0x42, y + K})
    bit<16> h;    // crc16 over the tuple {t0, t1} as it is at the end
    bit<8> f;     // mk(x).b = x + 1
}
struct pair_t { bit<8> a; bit<8> b; }

struct headers { ethernet_t eth; d_t d; }
struct metadata { }

pair_t mk(in bit<8> v) {
    return { v, v + 1 };
}

parser MyParser(packet_in pkt, out headers hdr, inout metadata meta,
                inout standard_metadata_t smeta) {
    state start {
        pkt.extract(hdr.eth);
        pkt.extract(hdr.d);
        transition accept;
    }
}

control MyVerify(inout headers hdr, inout metadata meta) { apply { } }

control MyIngress(inout headers hdr, inout metadata meta, inout standard_metadata_t smeta) {
    apply {
        smeta.egress_spec = 1;
        const int K = 0x100;
        tuple<bit<8>, bit<16>> t = { hdr.d.x, hdr.d.y };
        t[0] = t[0] + 1;
        hdr.d.t0 = t[0];
        tuple<bit<8>, bit<16>> u;
        u = { 0x42, hdr.d.y + K };
        t = u;
        hdr.d.t1 = t[1];
        hash(hdr.d.h, HashAlgorithm.crc16, 16w0, t, 32w65536);
        hdr.d.f = mk(hdr.d.x).b;
    }
}

control MyEgress(inout headers hdr, inout metadata meta, inout standard_metadata_t smeta) {
    apply { }
}

control MyCompute(inout headers hdr, inout metadata meta) { apply { } }

control MyDeparser(packet_out pkt, in headers hdr) {
    apply {
        pkt.emit(hdr.eth);
        pkt.emit(hdr.d);
    }
}

V1Switch(MyParser(), MyVerify(), MyIngress(), MyEgress(), MyCompute(), MyDeparser()) main;
