// lookahead<T>() of a struct that holds a header stack: every element is read from the
// packet (and valid in the copy) without the packet moving; the parser counts the leading
// zero labels and then extracts that many plus one.
#include <core.p4>
#include <v1model.p4>

header label_t { bit<8> v; }
struct labels_t { label_t[3] l; }
struct headers_t { label_t[3] labels; }
struct meta_t { bit<8> count; }

parser P(packet_in pkt, out headers_t hdr, inout meta_t meta, inout standard_metadata_t sm) {
    state start {
        labels_t peek = pkt.lookahead<labels_t>();
        transition select(peek.l[0].v, peek.l[1].v, peek.l[2].v) {
            (0, 0, _): three;
            (0, _, _): two;
            default: one;
        }
    }
    state one { pkt.extract(hdr.labels.next); meta.count = 1; transition accept; }
    state two {
        pkt.extract(hdr.labels.next); pkt.extract(hdr.labels.next);
        meta.count = 2; transition accept;
    }
    state three {
        pkt.extract(hdr.labels.next); pkt.extract(hdr.labels.next);
        pkt.extract(hdr.labels.next);
        meta.count = 3; transition accept;
    }
}
control VC(inout headers_t hdr, inout meta_t meta) { apply { } }
control I(inout headers_t hdr, inout meta_t meta, inout standard_metadata_t sm) {
    apply { sm.egress_spec = (bit<9>)meta.count; }
}
control E(inout headers_t hdr, inout meta_t meta, inout standard_metadata_t sm) { apply { } }
control CC(inout headers_t hdr, inout meta_t meta) { apply { } }
control D(packet_out pkt, in headers_t hdr) { apply { pkt.emit(hdr.labels); } }

V1Switch(P(), VC(), I(), E(), CC(), D()) main;
