// Constants of struct type: a field read from one (`LIMITS.high`, `ROUTE.next.port`), a whole
// struct compared with one (field by field), written as a list or with field names.
#include <core.p4>
#include <v1model.p4>

struct port_t { bit<9> v; }
struct limits_t { bit<8> low; bit<8> high; }
struct route_t { bit<8> tag; port_t next; }

const port_t CPU_PORT = { 9w5 };
const limits_t LIMITS = { low = 8w10, high = 8w200 };
const route_t ROUTE = { 8w0x77, { 9w3 } };

header probe_t { bit<8> value; bit<8> tag; bit<8> verdict; }
struct headers_t { probe_t p; }
struct meta_t { port_t port; limits_t seen; }

parser P(packet_in pkt, out headers_t hdr, inout meta_t meta, inout standard_metadata_t sm) {
    state start { pkt.extract(hdr.p); transition accept; }
}
control VC(inout headers_t hdr, inout meta_t meta) { apply { } }
control I(inout headers_t hdr, inout meta_t meta, inout standard_metadata_t sm) {
    apply {
        meta.port.v = (bit<9>)hdr.p.tag;
        sm.egress_spec = ROUTE.next.v;
        hdr.p.verdict = 0;
        if (meta.port == CPU_PORT) { hdr.p.verdict = 1; }
        if (hdr.p.value < LIMITS.low || hdr.p.value > LIMITS.high) {
            hdr.p.verdict = hdr.p.verdict | 2;
        }
        meta.seen = LIMITS;
        if (meta.seen != { 8w10, 8w200 }) { hdr.p.verdict = 0xff; }
        hdr.p.tag = ROUTE.tag;
    }
}
control E(inout headers_t hdr, inout meta_t meta, inout standard_metadata_t sm) { apply { } }
control CC(inout headers_t hdr, inout meta_t meta) { apply { } }
control D(packet_out pkt, in headers_t hdr) { apply { pkt.emit(hdr.p); } }

V1Switch(P(), VC(), I(), E(), CC(), D()) main;
