// lookahead_struct: `lookahead` of a struct type (with a nested struct) as a statement and as a
// value. As a statement it reads nothing anyone uses, but a packet shorter than the struct (4
// bytes) still stops parsing with PacketTooShort, so ingress drops it although the 3-byte header
// it extracts was there. As a value it fills a metadata struct, field by field in order.
#include <core.p4>
#include <v1model.p4>

struct inner_t { bit<4> hi; bit<4> lo; }
struct peek_t  { bit<16> tag; inner_t nib; }
struct four_t  { bit<16> a; inner_t b; bit<8> c; }

header tag_t { bit<16> tag; bit<8> rest; }
header res_t { bit<16> tag; bit<4> lo; bit<4> hi; }

struct headers { tag_t t; res_t res; }
struct metadata { peek_t peek; }

parser MyParser(packet_in pkt, out headers hdr, inout metadata meta,
                inout standard_metadata_t smeta) {
    state start {
        pkt.lookahead<four_t>();
        meta.peek = pkt.lookahead<peek_t>();
        pkt.extract(hdr.t);
        transition accept;
    }
}

control MyVerify(inout headers hdr, inout metadata meta) { apply { } }

control MyIngress(inout headers hdr, inout metadata meta, inout standard_metadata_t smeta) {
    apply {
        if (smeta.parser_error != error.NoError) {
            mark_to_drop(smeta);
        } else {
            smeta.egress_spec = 1;
            hdr.res.setValid();
            hdr.res.tag = meta.peek.tag + 1;
            hdr.res.lo = meta.peek.nib.lo;
            hdr.res.hi = meta.peek.nib.hi;
        }
    }
}

control MyEgress(inout headers hdr, inout metadata meta, inout standard_metadata_t smeta) {
    apply { }
}
control MyCompute(inout headers hdr, inout metadata meta) { apply { } }
control MyDeparser(packet_out pkt, in headers hdr) {
    apply { pkt.emit(hdr.t); pkt.emit(hdr.res); }
}

V1Switch(MyParser(), MyVerify(), MyIngress(), MyEgress(), MyCompute(), MyDeparser()) main;
