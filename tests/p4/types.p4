// types: typedef and type (a new type over bit<16>), a plain enum carried in metadata, a
// serializable enum used as a header field, in a parser select, as a table key and in a cast,
// constants (signed and unsigned), structs built from list and named-field expressions and
// copied whole, and bool values. Ingress writes what it computed into an output header.
#include <core.p4>
#include <v1model.p4>

typedef bit<8>  byte_t;
typedef bit<48> mac_t;
type bit<16> flow_id_t;

enum Verdict { ALLOW, DENY, COUNT }
enum bit<8> Color { RED = 1, GREEN = 2, BLUE = 0x10 }

const bit<16> TYPE_TYPES = 0x88B7;
const byte_t  MAGIC = 0xA5;
const int<8>  OFFSET = -3;

header ethernet_t { mac_t dst; mac_t src; bit<16> ether_type; }

header in_t {
    Color     color;
    byte_t    x;
    flow_id_t flow;
}

header out_t {
    byte_t  verdict;     // ALLOW 1, DENY 2, COUNT 3
    byte_t  color_code;  // (bit<8>)color
    bit<16> flow_next;   // flow + 1
    byte_t  lo;          // a struct {x, MAGIC} copied, then its fields swapped
    byte_t  hi;
    byte_t  flags;       // bit 0: x > 0x7F, bit 1: color != RED
    byte_t  magic;
    byte_t  offset;      // (int<8>)x + OFFSET, wrapping
    byte_t  cls;         // from a table keyed on the enum
}

struct pair_t  { byte_t lo; byte_t hi; }
struct flags_t { bool big; bool colored; }

struct headers {
    ethernet_t eth;
    in_t       inp;
    out_t      outp;
}
struct metadata {
    Verdict verdict;
}

parser MyParser(packet_in pkt, out headers hdr, inout metadata meta,
                inout standard_metadata_t smeta) {
    state start {
        meta.verdict = Verdict.ALLOW;
        pkt.extract(hdr.eth);
        transition select(hdr.eth.ether_type) {
            TYPE_TYPES: parse_in;
            default: accept;
        }
    }
    state parse_in {
        pkt.extract(hdr.inp);
        transition select(hdr.inp.color) {
            Color.RED: deny;
            Color.GREEN: accept;
            default: accept;
        }
    }
    state deny {
        meta.verdict = Verdict.DENY;
        transition accept;
    }
}

control MyVerifyChecksum(inout headers hdr, inout metadata meta) { apply { } }

control MyIngress(inout headers hdr, inout metadata meta, inout standard_metadata_t smeta) {
    action set_class(byte_t cls) {
        hdr.outp.cls = cls;
    }
    table color_class {
        key = { hdr.inp.color : exact; }
        actions = { set_class; }
        const entries = {
            Color.GREEN : set_class(7);
            Color.BLUE  : set_class(9);
        }
        default_action = set_class(0);
    }

    apply {
        if (!hdr.inp.isValid()) {
            mark_to_drop(smeta);
            return;
        }
        if (hdr.inp.color == Color.BLUE) {
            meta.verdict = Verdict.COUNT;
        }
        hdr.outp.setValid();
        if (meta.verdict == Verdict.DENY) {
            hdr.outp.verdict = 2;
        } else if (meta.verdict == Verdict.COUNT) {
            hdr.outp.verdict = 3;
        } else {
            hdr.outp.verdict = 1;
        }
        hdr.outp.color_code = (bit<8>)hdr.inp.color;

        flow_id_t f = hdr.inp.flow;
        hdr.outp.flow_next = (bit<16>)f + 1;

        pair_t p = { hdr.inp.x, MAGIC };
        pair_t q = p;
        q.lo = p.hi;
        q.hi = p.lo;
        hdr.outp.lo = q.lo;
        hdr.outp.hi = q.hi;

        flags_t fl = { big = hdr.inp.x > 0x7F, colored = hdr.inp.color != Color.RED };
        hdr.outp.flags = (fl.big ? 8w1 : 8w0) | (fl.colored ? 8w2 : 8w0);
        hdr.outp.magic = MAGIC;
        hdr.outp.offset = (bit<8>)((int<8>)hdr.inp.x + OFFSET);

        color_class.apply();
        smeta.egress_spec = 3;
    }
}

control MyEgress(inout headers hdr, inout metadata meta, inout standard_metadata_t smeta) {
    apply { }
}

control MyComputeChecksum(inout headers hdr, inout metadata meta) { apply { } }

control MyDeparser(packet_out pkt, in headers hdr) {
    apply {
        pkt.emit(hdr.eth);
        pkt.emit(hdr.inp);
        pkt.emit(hdr.outp);
    }
}

V1Switch(MyParser(), MyVerifyChecksum(), MyIngress(), MyEgress(), MyComputeChecksum(),
         MyDeparser()) main;
