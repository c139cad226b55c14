// table_keys: keys that are not plain fields. Slices of a field (starting at bit 0: p4c's BMv2
// encoding of other slices, a masked field, makes entry values ambiguous), the validity of a header
// (isValid() as an exact key), and a table mixing a ternary slice with a metadata field and a
// standard metadata field. Key names given with @name are what the control plane (and this
// STF) uses, since a slice has no field name of its own.
#include <core.p4>
#include <v1model.p4>

header ethernet_t { bit<48> dst; bit<48> src; bit<16> ether_type; }
header q_t   { bit<16> a; bit<8> b; bit<8> c; }
header opt_t { bit<8> v; }
header r_t   { bit<8> slice_r; bit<8> valid_r; bit<8> multi_r; }

struct headers {
    ethernet_t eth;
    q_t        q;
    r_t        r;
    opt_t      opt;
}
struct metadata {
    bit<8> m;
}

parser MyParser(packet_in pkt, out headers hdr, inout metadata meta,
                inout standard_metadata_t smeta) {
    state start {
        pkt.extract(hdr.eth);
        transition select(hdr.eth.ether_type) {
            0x88B5: parse_q;
            default: accept;
        }
    }
    state parse_q {
        pkt.extract(hdr.q);
        transition select(hdr.q.c) {
            1: parse_opt;
            default: accept;
        }
    }
    state parse_opt {
        pkt.extract(hdr.opt);
        transition accept;
    }
}

control MyVerifyChecksum(inout headers hdr, inout metadata meta) { apply { } }

control MyIngress(inout headers hdr, inout metadata meta, inout standard_metadata_t smeta) {
    action set_slice(bit<8> v) { hdr.r.slice_r = v; }
    action set_valid(bit<8> v) { hdr.r.valid_r = v; }
    action set_multi(bit<8> v) { hdr.r.multi_r = v; }

    table t_slice {
        key = { hdr.q.a[11:0] : exact @name("a_low12"); }
        actions = { set_slice; NoAction; }
        default_action = NoAction();
    }
    table t_valid {
        key = { hdr.opt.isValid() : exact @name("opt_valid"); }
        actions = { set_valid; NoAction; }
        default_action = NoAction();
    }
    table t_multi {
        key = {
            hdr.q.a[7:0]       : ternary @name("a_lo");
            meta.m             : exact;
            smeta.ingress_port : exact;
        }
        actions = { set_multi; NoAction; }
        default_action = NoAction();
    }

    apply {
        if (!hdr.q.isValid()) {
            mark_to_drop(smeta);
            return;
        }
        hdr.r.setValid();
        hdr.r.slice_r = 0;
        hdr.r.valid_r = 0xEE;
        hdr.r.multi_r = 0;
        meta.m = hdr.q.b + 1;
        t_slice.apply();
        t_valid.apply();
        t_multi.apply();
        smeta.egress_spec = 1;
    }
}

control MyEgress(inout headers hdr, inout metadata meta, inout standard_metadata_t smeta) {
    apply { }
}

control MyComputeChecksum(inout headers hdr, inout metadata meta) { apply { } }

control MyDeparser(packet_out pkt, in headers hdr) {
    apply {
        pkt.emit(hdr.eth);
        pkt.emit(hdr.q);
        pkt.emit(hdr.r);
        pkt.emit(hdr.opt);
    }
}

V1Switch(MyParser(), MyVerifyChecksum(), MyIngress(), MyEgress(), MyComputeChecksum(),
         MyDeparser()) main;
