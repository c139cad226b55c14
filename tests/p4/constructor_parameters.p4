// Constructor parameters (P4_16 14.1, 14.2): the package's parser and controls instantiated
// with arguments (positional, named, a default), a sub-parser and a sub-control given
// arguments where they are declared, and a constant passed on through a second level.
// Each parameter is a compile-time value that decides what the packet gets.
#include <core.p4>
#include <v1model.p4>

header ethernet_t { bit<48> dst; bit<48> src; bit<16> ether_type; }
header tag_t { bit<8> id; bit<8> next; }
header data_t { bit<8> a; bit<8> b; bit<8> c; bit<8> d; }
struct headers_t { ethernet_t eth; tag_t tag; data_t data; }
struct meta_t { bit<8> seen; }

parser Tag(packet_in pkt, out tag_t tag, inout meta_t meta)(bit<8> mark) {
    state start { pkt.extract(tag); meta.seen = mark; transition accept; }
}

parser P(packet_in pkt, out headers_t hdr, inout meta_t meta,
         inout standard_metadata_t sm)(bool tags, bit<16> tag_type) {
    Tag(8w0x5a) tag_parser;
    state start {
        pkt.extract(hdr.eth);
        transition select(hdr.eth.ether_type) { tag_type: maybe_tag; default: data; }
    }
    state maybe_tag {
        transition select(tags) { true: tag; false: accept; }
    }
    state tag {
        tag_parser.apply(pkt, hdr.tag, meta);
        transition data;
    }
    state data { pkt.extract(hdr.data); transition accept; }
}

control Add(inout data_t d)(bit<8> amount) {
    apply { d.b = d.b + amount; }
}

control Step(inout data_t d)(bit<8> amount, bool twice) {
    Add(amount) add;
    apply {
        add.apply(d);
        if (twice) { add.apply(d); }
    }
}

control VC(inout headers_t hdr, inout meta_t meta) { apply { } }

control I(inout headers_t hdr, inout meta_t meta,
          inout standard_metadata_t sm)(bit<8> bump, bool flip, bit<9> port = 3) {
    Step(bump, true) step;
    apply {
        sm.egress_spec = port;
        if (hdr.data.isValid()) {
            hdr.data.a = hdr.data.a + bump;
            step.apply(hdr.data);
            if (flip) { hdr.data.c = ~hdr.data.c; }
            hdr.data.d = meta.seen;
        }
    }
}

control E(inout headers_t hdr, inout meta_t meta, inout standard_metadata_t sm) { apply { } }
control CC(inout headers_t hdr, inout meta_t meta) { apply { } }
control D(packet_out pkt, in headers_t hdr) {
    apply { pkt.emit(hdr.eth); pkt.emit(hdr.tag); pkt.emit(hdr.data); }
}

V1Switch(P(true, 16w0x88B5), VC(), I(flip = true, bump = 8w3), E(), CC(), D()) main;
