// drop_semantics: when simple_switch actually drops. mark_to_drop sets egress_spec to the drop
// port (511) and clears mcast_grp, so a later write of either field wins: a unicast port after
// it forwards, a multicast group after it replicates. Writing 511 directly drops; mark_to_drop
// in egress drops the copy there. Unset egress_spec means port 0. log_msg, assert and assume
// (all holding here) must not change anything.
#include <core.p4>
#include <v1model.p4>

header ethernet_t { bit<48> dst; bit<48> src; bit<16> ether_type; }
header d_t { bit<8> mode; }

struct headers {
    ethernet_t eth;
    d_t        d;
}
struct metadata { }

parser MyParser(packet_in pkt, out headers hdr, inout metadata meta,
                inout standard_metadata_t smeta) {
    state start {
        pkt.extract(hdr.eth);
        pkt.extract(hdr.d);
        transition accept;
    }
}

control MyVerifyChecksum(inout headers hdr, inout metadata meta) { apply { } }

control MyIngress(inout headers hdr, inout metadata meta, inout standard_metadata_t smeta) {
    apply {
        log_msg("drop_semantics: ingress");
        log_msg("mode {} from port {}", { hdr.d.mode, smeta.ingress_port });
        assert(hdr.eth.isValid());
        assume(smeta.ingress_port != 511);
        if (hdr.d.mode == 1) {
            mark_to_drop(smeta);
        } else if (hdr.d.mode == 2) {
            mark_to_drop(smeta);
            smeta.egress_spec = 2;
        } else if (hdr.d.mode == 3) {
            smeta.egress_spec = 2;          // egress drops it
        } else if (hdr.d.mode == 4) {
            smeta.mcast_grp = 1;
            mark_to_drop(smeta);            // also clears mcast_grp
        } else if (hdr.d.mode == 5) {
            mark_to_drop(smeta);
            smeta.mcast_grp = 1;
        } else if (hdr.d.mode == 6) {
            smeta.egress_spec = 511;
        }
        // any other mode: egress_spec is left at 0
    }
}

control MyEgress(inout headers hdr, inout metadata meta, inout standard_metadata_t smeta) {
    apply {
        if (hdr.d.mode == 3) {
            mark_to_drop(smeta);
        }
    }
}

control MyComputeChecksum(inout headers hdr, inout metadata meta) { apply { } }

control MyDeparser(packet_out pkt, in headers hdr) {
    apply {
        pkt.emit(hdr.eth);
        pkt.emit(hdr.d);
    }
}

V1Switch(MyParser(), MyVerifyChecksum(), MyIngress(), MyEgress(), MyComputeChecksum(),
         MyDeparser()) main;
