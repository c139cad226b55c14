// varbit_stack: a header stack whose headers hold a varbit field. Each element keeps its own
// length (here the two nibbles of `len`, in bytes); varbit fields and whole elements are
// compared, an element is copied into a plain header, the two elements are swapped through a
// local stack, and pop_front / push_front move elements: the lengths move with the elements.
// simple_switch compares varbit fields by value, whatever their lengths (a one-byte 00 equals
// an empty one); p4c's JSON and inaemu's do the same.
#include <core.p4>
#include <v1model.p4>

header len_t  { bit<4> first; bit<4> second; }   // body bytes of items[0] and items[1]
header item_t { bit<8> tag; varbit<24> body; }
header res_t  { bit<8> same_body; bit<8> same_item; }

struct headers { len_t len; item_t[2] items; item_t copy; res_t res; }
struct metadata { }

parser MyParser(packet_in pkt, out headers hdr, inout metadata meta,
                inout standard_metadata_t smeta) {
    state start {
        pkt.extract(hdr.len);
        pkt.extract(hdr.items.next, (bit<32>)hdr.len.first * 8);
        pkt.extract(hdr.items.next, (bit<32>)hdr.len.second * 8);
        transition accept;
    }
}

control MyVerify(inout headers hdr, inout metadata meta) { apply { } }

control MyIngress(inout headers hdr, inout metadata meta, inout standard_metadata_t smeta) {
    apply {
        if (smeta.parser_error != error.NoError) {
            mark_to_drop(smeta);
            exit;
        }
        hdr.res.setValid();
        hdr.res.same_body = hdr.items[0].body == hdr.items[1].body ? 8w1 : 8w0;
        hdr.res.same_item = hdr.items[0] == hdr.items[1] ? 8w1 : 8w0;
        hdr.copy = hdr.items[1];
        item_t[2] swapped;
        swapped[0] = hdr.items[1];
        swapped[1] = hdr.items[0];
        hdr.items = swapped;
        if (hdr.res.same_item == 1) {
            hdr.items.pop_front(1);
        } else if (hdr.res.same_body == 1) {
            hdr.items.push_front(1);
        }
    }
}

control MyEgress(inout headers hdr, inout metadata meta, inout standard_metadata_t smeta) {
    apply { }
}
control MyCompute(inout headers hdr, inout metadata meta) { apply { } }
control MyDeparser(packet_out pkt, in headers hdr) {
    apply {
        pkt.emit(hdr.len);
        pkt.emit(hdr.items);
        pkt.emit(hdr.copy);
        pkt.emit(hdr.res);
    }
}

V1Switch(MyParser(), MyVerify(), MyIngress(), MyEgress(), MyCompute(), MyDeparser()) main;
