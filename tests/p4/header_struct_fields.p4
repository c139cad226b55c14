// header_struct_fields: a header with struct-typed fields (P4_16 §7.2.2), nested two deep: parsed
// and emitted in declaration order, a leaf read and written (`hdr.k.s.p`), a table keyed on a
// leaf, a whole inner struct read into metadata, written from metadata, from a list and from a
// struct expression, and compared.
#include <core.p4>
#include <v1model.p4>

header ethernet_t { bit<48> dst; bit<48> src; bit<16> ether_type; }
struct in_t { bit<4> hi; bit<4> lo; }
struct s_t { bit<8> p; in_t n; }
header k_t {
    s_t s;        // p, n.hi, n.lo
    bit<8> z;
    s_t copy;     // = s, through metadata
    bit<8> same;  // 1 when s == copy after the copy (and p was changed before)
}

struct headers { ethernet_t eth; k_t k; }
struct metadata { s_t m; }

parser MyParser(packet_in pkt, out headers hdr, inout metadata meta,
                inout standard_metadata_t smeta) {
    state start {
        pkt.extract(hdr.eth);
        pkt.extract(hdr.k);
        transition accept;
    }
}

control MyVerify(inout headers hdr, inout metadata meta) { apply { } }

control MyIngress(inout headers hdr, inout metadata meta, inout standard_metadata_t smeta) {
    action to(bit<9> port) { smeta.egress_spec = port; }
    table by_p {
        key = { hdr.k.s.p : exact; }
        actions = { to; }
        default_action = to(1);
        const entries = { 0x07 : to(2); }
    }
    apply {
        by_p.apply();
        hdr.k.s.n.lo = hdr.k.s.n.hi;
        hdr.k.s.p = hdr.k.s.p + hdr.k.z;
        meta.m = hdr.k.s;
        hdr.k.copy = meta.m;
        if (hdr.k.z == 0x20) {          // a list for a struct in a header (p4c's issue1670)
            hdr.k.copy = { 0x42, { 4w1, 4w2 } };
        } else if (hdr.k.z == 0x30) {   // a struct expression, by field names
            hdr.k.copy = { p = 0x43, n = { hi = 4w3, lo = 4w4 } };
        }
        hdr.k.same = hdr.k.s == hdr.k.copy ? 8w1 : 8w0;
    }
}

control MyEgress(inout headers hdr, inout metadata meta, inout standard_metadata_t smeta) {
    apply { }
}

control MyCompute(inout headers hdr, inout metadata meta) { apply { } }

control MyDeparser(packet_out pkt, in headers hdr) {
    apply {
        pkt.emit(hdr.eth);
        pkt.emit(hdr.k);
    }
}

V1Switch(MyParser(), MyVerify(), MyIngress(), MyEgress(), MyCompute(), MyDeparser()) main;
