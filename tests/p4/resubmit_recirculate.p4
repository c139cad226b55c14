// resubmit_recirculate: resubmit sends the *original* packet back through ingress (edits made
// on the first pass are lost) with instance type 6; recirculate sends the packet as deparsed
// at the end of egress back through the parser with instance type 4, so edits accumulate. Both
// keep only the user metadata in the named @field_list; no copy leaves the switch on the pass
// that resubmits or recirculates. truncate cuts the outgoing packet to a length.
#include <core.p4>
#include <v1model.p4>

header ethernet_t { bit<48> dst; bit<48> src; bit<16> ether_type; }
header r_t {
    bit<8> mode;        // 1 resubmit once, 2 recirculate until three passes, 3 truncate to 18
    bit<8> passes;      // incremented by ingress in mode 2
    bit<8> itype;       // written by ingress: instance_type on this pass
    bit<8> kept;        // written by egress: meta.kept (in field list 1)
    bit<8> not_kept;    // written by egress: meta.not_kept
}

struct headers {
    ethernet_t eth;
    r_t        r;
}
struct metadata {
    @field_list(1)
    bit<8> kept;
    bit<8> not_kept;
}

parser MyParser(packet_in pkt, out headers hdr, inout metadata meta,
                inout standard_metadata_t smeta) {
    state start {
        pkt.extract(hdr.eth);
        transition select(hdr.eth.ether_type) {
            0x88B5: parse_r;
            default: accept;
        }
    }
    state parse_r {
        pkt.extract(hdr.r);
        transition accept;
    }
}

control MyVerifyChecksum(inout headers hdr, inout metadata meta) { apply { } }

control MyIngress(inout headers hdr, inout metadata meta, inout standard_metadata_t smeta) {
    apply {
        if (!hdr.r.isValid()) {
            mark_to_drop(smeta);
            return;
        }
        hdr.r.itype = (bit<8>)smeta.instance_type;
        if (hdr.r.mode == 1) {
            if (smeta.instance_type == 0) {
                meta.kept = 1;
                meta.not_kept = 0x77;
                hdr.r.passes = 0x99;    // lost: the resubmitted packet is the original
                resubmit_preserving_field_list(1);
            } else {
                smeta.egress_spec = 1;
            }
        } else if (hdr.r.mode == 2) {
            hdr.r.passes = hdr.r.passes + 1;
            meta.kept = meta.kept + 1;
            if (smeta.instance_type == 0) {
                meta.not_kept = 0x55;
            }
            smeta.egress_spec = 2;
        } else if (hdr.r.mode == 3) {
            meta.kept = 0x42;
            smeta.egress_spec = 3;
            truncate(18);
        } else {
            mark_to_drop(smeta);
        }
    }
}

control MyEgress(inout headers hdr, inout metadata meta, inout standard_metadata_t smeta) {
    apply {
        hdr.r.kept = meta.kept;
        hdr.r.not_kept = meta.not_kept;
        if (hdr.r.mode == 2 && hdr.r.passes < 3) {
            recirculate_preserving_field_list(1);
        }
    }
}

control MyComputeChecksum(inout headers hdr, inout metadata meta) { apply { } }

control MyDeparser(packet_out pkt, in headers hdr) {
    apply {
        pkt.emit(hdr.eth);
        pkt.emit(hdr.r);
    }
}

V1Switch(MyParser(), MyVerifyChecksum(), MyIngress(), MyEgress(), MyComputeChecksum(),
         MyDeparser()) main;
