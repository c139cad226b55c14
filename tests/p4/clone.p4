// clone: ingress-to-egress clones (plain, and preserving a @field_list of user metadata),
// an egress-to-egress clone, and multicast. Egress records what each copy sees: instance type,
// replica id, and two metadata fields set in ingress, one of them in field list 1. An I2E clone
// is the packet as it arrived (ingress edits are not in it) and only preserved metadata survive;
// an E2E clone carries the headers as the original's egress left them. Of several clone calls in
// one control, only the last takes effect.
#include <core.p4>
#include <v1model.p4>

header ethernet_t { bit<48> dst; bit<48> src; bit<16> ether_type; }
header tag_t {
    bit<8>  mode;       // 1 clone I2E, 2 clone I2E preserving list 1, 3 clone E2E, 4 multicast,
                        // 5 two clone calls (only the last counts)
    bit<8>  itype;      // written by egress: instance_type
    bit<16> rid;        // written by egress: egress_rid
    bit<8>  kept;       // written by egress: meta.kept (in field list 1)
    bit<8>  not_kept;   // written by egress: meta.not_kept
    bit<8>  ing;        // written by ingress: 11
    bit<8>  eseen;      // written by the original's egress in mode 3: 01
}

struct headers {
    ethernet_t eth;
    tag_t      tag;
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
            0x88B5: parse_tag;
            default: accept;
        }
    }
    state parse_tag {
        pkt.extract(hdr.tag);
        transition accept;
    }
}

control MyVerifyChecksum(inout headers hdr, inout metadata meta) { apply { } }

control MyIngress(inout headers hdr, inout metadata meta, inout standard_metadata_t smeta) {
    apply {
        if (!hdr.tag.isValid()) {
            mark_to_drop(smeta);
            return;
        }
        meta.kept = 0xAB;
        meta.not_kept = 0xCD;
        hdr.tag.ing = 0x11;
        if (hdr.tag.mode == 1) {
            smeta.egress_spec = 1;
            clone(CloneType.I2E, 5);
        } else if (hdr.tag.mode == 2) {
            smeta.egress_spec = 1;
            clone_preserving_field_list(CloneType.I2E, 5, 1);
        } else if (hdr.tag.mode == 3) {
            smeta.egress_spec = 1;
        } else if (hdr.tag.mode == 4) {
            smeta.mcast_grp = 3;
        } else if (hdr.tag.mode == 5) {
            smeta.egress_spec = 1;
            clone(CloneType.I2E, 5);
            clone_preserving_field_list(CloneType.I2E, 6, 1);   // the last clone call wins
        } else {
            mark_to_drop(smeta);
        }
    }
}

control MyEgress(inout headers hdr, inout metadata meta, inout standard_metadata_t smeta) {
    apply {
        hdr.tag.itype = (bit<8>)smeta.instance_type;
        hdr.tag.rid = smeta.egress_rid;
        hdr.tag.kept = meta.kept;
        hdr.tag.not_kept = meta.not_kept;
        if (smeta.instance_type == 0 && hdr.tag.mode == 3) {
            hdr.tag.eseen = 0x01;
            clone(CloneType.E2E, 6);
        }
    }
}

control MyComputeChecksum(inout headers hdr, inout metadata meta) { apply { } }

control MyDeparser(packet_out pkt, in headers hdr) {
    apply {
        pkt.emit(hdr.eth);
        pkt.emit(hdr.tag);
    }
}

V1Switch(MyParser(), MyVerifyChecksum(), MyIngress(), MyEgress(), MyComputeChecksum(),
         MyDeparser()) main;
