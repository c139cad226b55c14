// header_stacks: a stack of (tag, value) items parsed with .next until a zero tag, the parser
// recording .lastIndex and .last; ingress then edits the stack according to the first item's tag
// (pop_front, push_front with new valid items, a hole made by setInvalid, a whole-header copy)
// and reports .size and the sum of the valid items. The deparser emits valid items only.
#include <core.p4>
#include <v1model.p4>

const bit<16> TYPE_ITEMS = 0x88B5;
#define STACK_SIZE 4

header ethernet_t { bit<48> dst; bit<48> src; bit<16> ether_type; }
header item_t { bit<8> tag; bit<8> value; }
header report_t {
    bit<8> parsed;       // lastIndex + 1 at the end of parsing
    bit<8> last_value;   // .last.value at the end of parsing
    bit<8> size;         // .size (static)
    bit<8> sum;          // sum of the valid items after the edit, modulo 256
}

struct headers {
    ethernet_t         eth;
    report_t           report;
    item_t[STACK_SIZE] items;
}
struct metadata {
    bit<8> parsed;
    bit<8> last_value;
}

parser MyParser(packet_in pkt, out headers hdr, inout metadata meta,
                inout standard_metadata_t smeta) {
    state start {
        pkt.extract(hdr.eth);
        transition select(hdr.eth.ether_type) {
            TYPE_ITEMS: parse_item;
            default: accept;
        }
    }
    state parse_item {
        pkt.extract(hdr.items.next);
        meta.parsed = (bit<8>)(hdr.items.lastIndex + 1);
        meta.last_value = hdr.items.last.value;
        transition select(hdr.items.last.tag) {
            0: accept;
            default: parse_item;
        }
    }
}

control MyVerifyChecksum(inout headers hdr, inout metadata meta) { apply { } }

control MyIngress(inout headers hdr, inout metadata meta, inout standard_metadata_t smeta) {
    apply {
        if (!hdr.items[0].isValid()) {
            mark_to_drop(smeta);
            return;
        }
        hdr.report.setValid();
        hdr.report.parsed = meta.parsed;
        hdr.report.last_value = meta.last_value;
        hdr.report.size = (bit<8>)hdr.items.size;

        if (hdr.items[0].tag == 1) {
            hdr.items.pop_front(1);
        } else if (hdr.items[0].tag == 2) {
            hdr.items.push_front(2);
            hdr.items[0].setValid();
            hdr.items[0].tag = 0x10;
            hdr.items[0].value = 0xA0;
            hdr.items[1].setValid();
            hdr.items[1].tag = 0x11;
            hdr.items[1].value = 0xA1;
        } else if (hdr.items[0].tag == 3) {
            hdr.items[1].setInvalid();
        } else if (hdr.items[0].tag == 4) {
            hdr.items[3] = hdr.items[0];
        }

        bit<8> sum = 0;
        if (hdr.items[0].isValid()) { sum = sum + hdr.items[0].value; }
        if (hdr.items[1].isValid()) { sum = sum + hdr.items[1].value; }
        if (hdr.items[2].isValid()) { sum = sum + hdr.items[2].value; }
        if (hdr.items[3].isValid()) { sum = sum + hdr.items[3].value; }
        hdr.report.sum = sum;
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
        pkt.emit(hdr.report);
        pkt.emit(hdr.items);
    }
}

V1Switch(MyParser(), MyVerifyChecksum(), MyIngress(), MyEgress(), MyComputeChecksum(),
         MyDeparser()) main;
