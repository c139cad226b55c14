// digest: what a packet's ingress hands to the control plane (docs/p4runtime.md "Digests").
// The STF checks the packets; the differential corpus tests (tests/reference) also compare the
// samples simple_switch publishes with inaemu's (learn lists by struct name).
#include <core.p4>
#include <v1model.p4>

header ethernet_t { bit<48> dst; bit<48> src; bit<16> ether_type; }
header tag_t { bit<8> mode; bit<8> val; }
struct pair_t { bit<48> mac; bit<9> port; bool flag; int<8> s; }
struct two_t { bit<8> a; bit<16> b; }
struct headers_t { ethernet_t eth; tag_t tag; }
struct meta_t { pair_t p; }

parser P(packet_in pkt, out headers_t hdr, inout meta_t meta, inout standard_metadata_t sm) {
    state start {
        pkt.extract(hdr.eth);
        transition select(hdr.eth.ether_type) { 0x88B5: tag; default: accept; }
    }
    state tag { pkt.extract(hdr.tag); transition accept; }
}
control VC(inout headers_t hdr, inout meta_t meta) { apply { } }
control Ing(inout headers_t hdr, inout meta_t meta, inout standard_metadata_t sm) {
    // an unknown source MAC is learned (the table misses): MAC, port, a bool, a signed value
    action learn_pair() {
        meta.p.mac = hdr.eth.src;
        meta.p.port = sm.ingress_port;
        meta.p.flag = hdr.tag.val == 7;
        meta.p.s = -2;
        digest<pair_t>(1, meta.p);
    }
    table known { key = { hdr.eth.src : exact; } actions = { learn_pair; NoAction; }
                  default_action = learn_pair(); }
    apply {
        sm.egress_spec = 1;
        if (hdr.tag.isValid()) {
            known.apply();
            meta.p.mac = 0;                     // after the call: the sample keeps the MAC
            if (hdr.tag.mode == 2) {            // a second digest: the last one wins
                digest<two_t>(1, {hdr.tag.val, 16w0xbeef});
            }
            if (hdr.tag.mode == 3) {            // exit after the digest: it is still taken
                exit;
            }
            hdr.tag.val = hdr.tag.val + 1;
        }
    }
}
control Eg(inout headers_t hdr, inout meta_t meta, inout standard_metadata_t sm) { apply { } }
control CC(inout headers_t hdr, inout meta_t meta) { apply { } }
control Dep(packet_out pkt, in headers_t hdr) { apply { pkt.emit(hdr.eth); pkt.emit(hdr.tag); } }
V1Switch(P(), VC(), Ing(), Eg(), CC(), Dep()) main;
