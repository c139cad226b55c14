// The CPU port wire for the P4Runtime hook test: port 1 -> CPU port 64, CPU port 64 -> port 1,
// everything else drops (no controller header: packet-ins and packet-outs carry the bare frame).
// Needs no table entries. cpu_wire.json is its BMv2 JSON, written by hand in p4c's shape.
#include <core.p4>
#include <v1model.p4>

header ethernet_h { bit<48> dst; bit<48> src; bit<16> ether_type; }
struct headers_t { ethernet_h eth; }
struct meta_t { }

parser ParserImpl(packet_in pkt, out headers_t hdr, inout meta_t meta,
                  inout standard_metadata_t smeta) {
    state start { pkt.extract(hdr.eth); transition accept; }
}

control VerifyImpl(inout headers_t hdr, inout meta_t meta) { apply { } }

control IngressImpl(inout headers_t hdr, inout meta_t meta,
                    inout standard_metadata_t smeta) {
    apply {
        if (smeta.ingress_port == 1) {
            smeta.egress_spec = 64;
        } else if (smeta.ingress_port == 64) {
            smeta.egress_spec = 1;
        } else {
            mark_to_drop(smeta);
        }
    }
}

control EgressImpl(inout headers_t hdr, inout meta_t meta,
                   inout standard_metadata_t smeta) { apply { } }
control ComputeImpl(inout headers_t hdr, inout meta_t meta) { apply { } }
control DeparserImpl(packet_out pkt, in headers_t hdr) { apply { pkt.emit(hdr.eth); } }

V1Switch(ParserImpl(), VerifyImpl(), IngressImpl(), EgressImpl(),
         ComputeImpl(), DeparserImpl()) main;
