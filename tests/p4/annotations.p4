// annotations: @name renames a table (globally, with a leading dot), its actions and a key
// field, so the control plane (and this STF) must use the new names. @controller_header marks
// the packet-in and packet-out headers exchanged with the controller through CPU_PORT: frames
// from the CPU port carry a packet-out header naming the output port, which is stripped; frames
// punted to the CPU port get a packet-in header naming their ingress port.
// (@field_list is covered by clone.p4 and resubmit_recirculate.p4.)
#include <core.p4>
#include <v1model.p4>

const bit<9> CPU_PORT = 64;

@controller_header("packet_in")
header packet_in_t {
    bit<9> ingress_port;
    bit<7> pad;
}

@controller_header("packet_out")
header packet_out_t {
    bit<9> egress_port;
    bit<7> pad;
}

header ethernet_t { bit<48> dst; bit<48> src; bit<16> ether_type; }

struct headers {
    packet_in_t  packet_in;
    packet_out_t packet_out;
    ethernet_t   eth;
}
struct metadata { }

parser MyParser(packet_in pkt, out headers hdr, inout metadata meta,
                inout standard_metadata_t smeta) {
    state start {
        transition select(smeta.ingress_port) {
            CPU_PORT: parse_packet_out;
            default: parse_ethernet;
        }
    }
    state parse_packet_out {
        pkt.extract(hdr.packet_out);
        transition parse_ethernet;
    }
    state parse_ethernet {
        pkt.extract(hdr.eth);
        transition accept;
    }
}

control MyVerifyChecksum(inout headers hdr, inout metadata meta) { apply { } }

control MyIngress(inout headers hdr, inout metadata meta, inout standard_metadata_t smeta) {
    @name("punt")
    action to_cpu() {
        smeta.egress_spec = CPU_PORT;
    }
    @name("fwd")
    action forward(bit<9> port) {
        smeta.egress_spec = port;
    }
    @name(".acl_global")
    table acl {
        key = { hdr.eth.ether_type : exact @name("etype"); }
        actions = { to_cpu; forward; NoAction; }
        default_action = NoAction();
    }
    apply {
        if (hdr.packet_out.isValid()) {
            smeta.egress_spec = hdr.packet_out.egress_port;
            hdr.packet_out.setInvalid();
        } else {
            acl.apply();
        }
    }
}

control MyEgress(inout headers hdr, inout metadata meta, inout standard_metadata_t smeta) {
    apply {
        if (smeta.egress_port == CPU_PORT) {
            hdr.packet_in.setValid();
            hdr.packet_in.ingress_port = smeta.ingress_port;
            hdr.packet_in.pad = 0;
        }
    }
}

control MyComputeChecksum(inout headers hdr, inout metadata meta) { apply { } }

control MyDeparser(packet_out pkt, in headers hdr) {
    apply {
        pkt.emit(hdr.packet_in);
        pkt.emit(hdr.packet_out);
        pkt.emit(hdr.eth);
    }
}

V1Switch(MyParser(), MyVerifyChecksum(), MyIngress(), MyEgress(), MyComputeChecksum(),
         MyDeparser()) main;
