// action_profile: a table whose actions live in an action profile (an indirect table): entries
// point at profile members holding the action and its data, and several entries may share one
// member. The STF adds entries the plain way (an action with its data per entry), which the
// runner turns into members. Only hits are sent: an indirect table's miss behaviour depends on
// its default member, which this program leaves to the control plane.
#include <core.p4>
#include <v1model.p4>

header ethernet_t { bit<48> dst; bit<48> src; bit<16> ether_type; }

struct headers { ethernet_t eth; }
struct metadata { }

parser MyParser(packet_in pkt, out headers hdr, inout metadata meta,
                inout standard_metadata_t smeta) {
    state start {
        pkt.extract(hdr.eth);
        transition accept;
    }
}

control MyVerifyChecksum(inout headers hdr, inout metadata meta) { apply { } }

control MyIngress(inout headers hdr, inout metadata meta, inout standard_metadata_t smeta) {
    action set_port(bit<9> port) {
        smeta.egress_spec = port;
    }
    action set_port_and_src(bit<9> port, bit<48> src) {
        smeta.egress_spec = port;
        hdr.eth.src = src;
    }
    action drop() {
        mark_to_drop(smeta);
    }

    table t_fwd {
        key = { hdr.eth.dst : exact; }
        actions = { set_port; set_port_and_src; drop; }
        @name("t_fwd_profile") implementation = action_profile(8);
        size = 16;
    }

    apply {
        t_fwd.apply();
    }
}

control MyEgress(inout headers hdr, inout metadata meta, inout standard_metadata_t smeta) {
    apply { }
}

control MyComputeChecksum(inout headers hdr, inout metadata meta) { apply { } }

control MyDeparser(packet_out pkt, in headers hdr) {
    apply { pkt.emit(hdr.eth); }
}

V1Switch(MyParser(), MyVerifyChecksum(), MyIngress(), MyEgress(), MyComputeChecksum(),
         MyDeparser()) main;
