// Parsers applied by their type (P4_16 15.1, direct type invocation): `Inner.apply(...)` in a
// parser state makes an instance named after the type, as p4c does. One type is applied twice
// in a row (two tags); the other parses the rest of the packet.
#include <core.p4>
#include <v1model.p4>

header ethernet_t { bit<48> dst; bit<48> src; bit<16> ether_type; }
header tag_t { bit<8> id; bit<8> next; }
header ipv4_lite_t { bit<8> ttl; bit<8> proto; bit<16> dst; }
struct headers_t { ethernet_t eth; tag_t outer; tag_t inner; ipv4_lite_t ip; }
struct meta_t { }

parser Tag(packet_in pkt, out tag_t tag) {
    state start { pkt.extract(tag); transition accept; }
}

parser Rest(packet_in pkt, inout headers_t hdr) {
    state start {
        transition select(hdr.inner.next) { 0x04: ip; default: accept; }
    }
    state ip { pkt.extract(hdr.ip); transition accept; }
}

parser P(packet_in pkt, out headers_t hdr, inout meta_t meta, inout standard_metadata_t sm) {
    state start {
        pkt.extract(hdr.eth);
        transition select(hdr.eth.ether_type) { 0x88B5: tags; default: accept; }
    }
    state tags {
        Tag.apply(pkt, hdr.outer);
        Tag.apply(pkt, hdr.inner);
        Rest.apply(pkt, hdr);
        transition accept;
    }
}
control VC(inout headers_t hdr, inout meta_t meta) { apply { } }
control I(inout headers_t hdr, inout meta_t meta, inout standard_metadata_t sm) {
    apply {
        sm.egress_spec = 1;
        if (hdr.ip.isValid()) {
            hdr.ip.ttl = hdr.ip.ttl - 1;
            sm.egress_spec = 2;
        }
        if (hdr.inner.isValid()) {
            hdr.inner.id = hdr.outer.id + hdr.inner.id;
        }
    }
}
control E(inout headers_t hdr, inout meta_t meta, inout standard_metadata_t sm) { apply { } }
control CC(inout headers_t hdr, inout meta_t meta) { apply { } }
control D(packet_out pkt, in headers_t hdr) {
    apply { pkt.emit(hdr.eth); pkt.emit(hdr.outer); pkt.emit(hdr.inner); pkt.emit(hdr.ip); }
}
V1Switch(P(), VC(), I(), E(), CC(), D()) main;
