// The deprecated Checksum16 extern: get() is a csum16 over its data (1234 + 4321 = 5555 -> AAAA).
#include <core.p4>
#include <v1model.p4>
header ethernet_t { bit<48> dst; bit<48> src; bit<16> ether_type; }
header s_t { bit<16> a; bit<16> b; bit<16> sum; }
struct headers_t { ethernet_t eth; s_t s; }
struct meta_t { }
parser P(packet_in pkt, out headers_t hdr, inout meta_t meta, inout standard_metadata_t sm) {
    state start { pkt.extract(hdr.eth); pkt.extract(hdr.s); transition accept; }
}
control VC(inout headers_t hdr, inout meta_t meta) { apply { } }
control Ing(inout headers_t hdr, inout meta_t meta, inout standard_metadata_t sm) {
    Checksum16() ck;
    apply { sm.egress_spec = 1; hdr.s.sum = ck.get({hdr.s.a, hdr.s.b}); }
}
control Eg(inout headers_t hdr, inout meta_t meta, inout standard_metadata_t sm) { apply { } }
control CC(inout headers_t hdr, inout meta_t meta) { apply { } }
control Dep(packet_out pkt, in headers_t hdr) { apply { pkt.emit(hdr.eth); pkt.emit(hdr.s); } }
V1Switch(P(), VC(), Ing(), Eg(), CC(), Dep()) main;
