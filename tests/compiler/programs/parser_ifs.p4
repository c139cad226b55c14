// parser_ifs: `if` statements in parser states (nested, with and without else, a variable
// declared in a branch, a constant condition, code after the if), lowered to extra states that
// select on the condition; a parser-level variable initialiser; and the one deparser
// conditional BMv2 can express.
#include <core.p4>
#include <v1model.p4>

header ethernet_t { bit<48> dst; bit<48> src; bit<16> ether_type; }
header a_t { bit<8> kind; bit<8> flags; }
header b_t { bit<8> v; }
header c_t { bit<8> v; }
struct headers_t { ethernet_t eth; a_t a; b_t b; c_t c; }
struct meta_t { bit<8> path; bit<8> count; bit<8> peeked; }

parser P(packet_in pkt, out headers_t hdr, inout meta_t meta, inout standard_metadata_t sm) {
    bit<8> first_path = 1;  // a parser-level initialiser: set on entry
    state start {
        pkt.extract(hdr.eth);
        meta.path = first_path;
        if (hdr.eth.ether_type == 0x88B5) {
            bit<8> kind = pkt.lookahead<bit<8>>();
            meta.peeked = kind;
            if (pkt.lookahead<bit<16>>() != 0x1401) { meta.path = meta.path + 32; }
            pkt.extract(hdr.a);
            if ((hdr.a.flags & 1) == 1) {
                pkt.extract(hdr.b);
                meta.path = meta.path + 2;
            } else {
                meta.path = meta.path + 4;
            }
            bool wide = hdr.a.kind > 10;
            if (wide) { pkt.extract(hdr.c); }
        } else if (hdr.eth.ether_type == 0x0800) {
            meta.path = 8;
        }
        if (true) { meta.count = meta.count + 1; } else { meta.count = 99; }
        transition select(hdr.a.isValid()) {
            true: more;
            default: accept;
        }
    }
    state more {
        meta.path = meta.path + 16;
        transition accept;
    }
}

control VC(inout headers_t hdr, inout meta_t meta) { apply { } }
control Ing(inout headers_t hdr, inout meta_t meta, inout standard_metadata_t sm) {
    apply {
        hdr.eth.src[7:0] = meta.path;
        hdr.eth.src[15:8] = meta.count;
        hdr.eth.src[23:16] = meta.peeked;
        sm.egress_spec = 1;
    }
}
control Eg(inout headers_t hdr, inout meta_t meta, inout standard_metadata_t sm) { apply { } }
control CC(inout headers_t hdr, inout meta_t meta) { apply { } }
control Dep(packet_out pkt, in headers_t hdr) {
    apply {
        pkt.emit(hdr.eth);
        if (hdr.a.isValid()) { pkt.emit(hdr.a); }
        pkt.emit(hdr.b);
        pkt.emit(hdr.c);
    }
}
V1Switch(P(), VC(), Ing(), Eg(), CC(), Dep()) main;
