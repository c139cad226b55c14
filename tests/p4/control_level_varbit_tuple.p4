// control_level_varbit_tuple: varbit and tuple variables declared beside the actions of a control
// (and a tuple beside a parser's states), not inside a block. They are initialised on every
// entry in declaration order, as the apply block's first statements would be: the tuple `pair`
// reads the length before `bump` increments it, `first` copies a varbit field (length and all)
// before the apply block swaps the two bodies through `saved`.
#include <core.p4>
#include <v1model.p4>

header len_t  { bit<8> len; }              // bytes in each body
header body_t { varbit<32> data; }
header out_t  { bit<8> a; bit<8> b; bit<8> c; bit<8> parsed; }

struct headers { len_t len; body_t one; body_t two; body_t first; out_t res; }
struct metadata { bit<8> parsed; }

bit<8> bump(inout bit<8> v) {
    v = v + 1;
    return v;
}

parser MyParser(packet_in pkt, out headers hdr, inout metadata meta,
                inout standard_metadata_t smeta) {
    tuple<bit<8>, bit<8>> weights = { 8w0x10, 8w0x20 };
    state start {
        pkt.extract(hdr.len);
        pkt.extract(hdr.one, (bit<32>)hdr.len.len * 8);
        pkt.extract(hdr.two, (bit<32>)hdr.len.len * 8);
        meta.parsed = weights[0] + weights[1] + hdr.len.len;
        transition accept;
    }
}

control MyVerify(inout headers hdr, inout metadata meta) { apply { } }

control MyIngress(inout headers hdr, inout metadata meta, inout standard_metadata_t smeta) {
    varbit<32> saved;
    tuple<bit<8>, bit<8>> pair = { hdr.len.len, bump(hdr.len.len) };
    varbit<32> first = hdr.one.data;
    apply {
        saved = hdr.one.data;
        hdr.one.data = hdr.two.data;
        hdr.two.data = saved;
        hdr.first.setValid();
        hdr.first.data = first;
        hdr.res.setValid();
        hdr.res.a = pair[0];
        hdr.res.b = pair[1];
        hdr.res.c = hdr.len.len;
        hdr.res.parsed = meta.parsed;
    }
}

control MyEgress(inout headers hdr, inout metadata meta, inout standard_metadata_t smeta) {
    apply { }
}
control MyCompute(inout headers hdr, inout metadata meta) { apply { } }
control MyDeparser(packet_out pkt, in headers hdr) {
    apply {
        pkt.emit(hdr.len);
        pkt.emit(hdr.one);
        pkt.emit(hdr.two);
        pkt.emit(hdr.first);
        pkt.emit(hdr.res);
    }
}

V1Switch(MyParser(), MyVerify(), MyIngress(), MyEgress(), MyCompute(), MyDeparser()) main;
