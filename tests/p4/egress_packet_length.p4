// standard_metadata.packet_length in egress is the packet's size after ingress: the headers
// valid at the end of ingress that the deparser emits, plus the payload (simple_switch).
#include <core.p4>
#include <v1model.p4>

header h_t { bit<8> op; bit<8> x; }
header o_t { bit<32> ing; bit<32> eg; }
header pad_t { bit<64> p; }      // never emitted: its validity does not count
header v_t { bit<8> len; varbit<64> data; }
struct headers_t { h_t h; v_t vb; o_t o; pad_t pad; }
struct meta_t { bit<32> ing; }

parser P(packet_in pkt, out headers_t hdr, inout meta_t meta, inout standard_metadata_t sm) {
    state start {
        pkt.extract(hdr.h);
        transition select(hdr.h.op) {
            7: parse_vb;
            default: accept;
        }
    }
    state parse_vb {
        bit<8> n = pkt.lookahead<bit<8>>();
        pkt.extract(hdr.vb, (bit<32>)n * 8);
        transition accept;
    }
}
control VC(inout headers_t hdr, inout meta_t meta) { apply { } }
control I(inout headers_t hdr, inout meta_t meta, inout standard_metadata_t sm) {
    apply {
        meta.ing = sm.packet_length;
        sm.egress_spec = 1;
        if (hdr.h.op == 3) { hdr.h.setInvalid(); }
        if (hdr.h.op == 4) { hdr.o.setValid(); }
        if (hdr.h.op == 5) { hdr.pad.setValid(); }
        if (hdr.h.op == 6) { sm.mcast_grp = 1; hdr.o.setValid(); }
        if (hdr.h.op == 8) { clone(CloneType.I2E, 5); hdr.h.setInvalid(); }
    }
}
control E(inout headers_t hdr, inout meta_t meta, inout standard_metadata_t sm) {
    // a counter counts the length as received, whatever packet_length says
    counter(1, CounterType.packets_and_bytes) e_bytes;
    apply {
        e_bytes.count(0);
        hdr.o.setValid(); hdr.o.ing = meta.ing; hdr.o.eg = sm.packet_length;
    }
}
control CC(inout headers_t hdr, inout meta_t meta) { apply { } }
control D(packet_out pkt, in headers_t hdr) {
    apply { pkt.emit(hdr.h); pkt.emit(hdr.vb); pkt.emit(hdr.o); }
}
V1Switch(P(), VC(), I(), E(), CC(), D()) main;
