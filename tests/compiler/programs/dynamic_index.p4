// Stack elements chosen at run time: hdr.items[hdr.idx.i] read, written and tested for validity.
#include <core.p4>
#include <v1model.p4>
header ethernet_t { bit<48> dst; bit<48> src; bit<16> ether_type; }
header idx_t { bit<8> i; }
header item_t { bit<8> v; }
struct headers_t { ethernet_t eth; idx_t idx; item_t[3] items; }
struct meta_t { }
parser P(packet_in pkt, out headers_t hdr, inout meta_t meta, inout standard_metadata_t sm) {
    state start { pkt.extract(hdr.eth); pkt.extract(hdr.idx); pkt.extract(hdr.items.next); pkt.extract(hdr.items.next); pkt.extract(hdr.items.next); transition accept; }
}
control VC(inout headers_t hdr, inout meta_t meta) { apply { } }
control Ing(inout headers_t hdr, inout meta_t meta, inout standard_metadata_t sm) {
    apply {
        sm.egress_spec = 1;
        hdr.items[hdr.idx.i].v = hdr.items[hdr.idx.i].v + 0x10;
        if (hdr.items[hdr.idx.i].isValid()) { hdr.idx.i = hdr.idx.i + 0x80; }
    }
}
control Eg(inout headers_t hdr, inout meta_t meta, inout standard_metadata_t sm) { apply { } }
control CC(inout headers_t hdr, inout meta_t meta) { apply { } }
control Dep(packet_out pkt, in headers_t hdr) { apply { pkt.emit(hdr.eth); pkt.emit(hdr.idx); pkt.emit(hdr.items); } }
V1Switch(P(), VC(), Ing(), Eg(), CC(), Dep()) main;
