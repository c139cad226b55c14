// varbit_local: a local variable of type varbit<64> (inaemu keeps it in a one-field local
// header, since BMv2 keeps varbit fields only in headers): a parsed variable-length body is
// copied into the variable and from it into a second header, and straight into a third; both
// are emitted after the first. A varbit assignment is BMv2's assign_VL (it copies the length).
#include <core.p4>
#include <v1model.p4>

header ethernet_t { bit<48> dst; bit<48> src; bit<16> ether_type; }
header len_t  { bit<8> len; }             // bytes in the body
header body_t { varbit<64> data; }

struct headers { ethernet_t eth; len_t len; body_t body; body_t copy; body_t direct; }
struct metadata { }

parser MyParser(packet_in pkt, out headers hdr, inout metadata meta,
                inout standard_metadata_t smeta) {
    state start {
        pkt.extract(hdr.eth);
        pkt.extract(hdr.len);
        pkt.extract(hdr.body, (bit<32>)hdr.len.len * 8);
        transition accept;
    }
}

control MyVerify(inout headers hdr, inout metadata meta) { apply { } }

control MyIngress(inout headers hdr, inout metadata meta, inout standard_metadata_t smeta) {
    apply {
        smeta.egress_spec = 1;
        varbit<64> saved = hdr.body.data;
        hdr.copy.setValid();
        hdr.copy.data = saved;
        hdr.direct.setValid();
        hdr.direct.data = hdr.body.data;
    }
}

control MyEgress(inout headers hdr, inout metadata meta, inout standard_metadata_t smeta) {
    apply { }
}

control MyCompute(inout headers hdr, inout metadata meta) { apply { } }

control MyDeparser(packet_out pkt, in headers hdr) {
    apply {
        pkt.emit(hdr.eth);
        pkt.emit(hdr.len);
        pkt.emit(hdr.body);
        pkt.emit(hdr.copy);
        pkt.emit(hdr.direct);
    }
}

V1Switch(MyParser(), MyVerify(), MyIngress(), MyEgress(), MyCompute(), MyDeparser()) main;
