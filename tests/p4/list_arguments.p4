// list_arguments: struct and header values written as lists (`{...}`) or with named fields
// (`{a = .., b = ..}`) passed as `in` arguments to functions, to an action called directly and
// to a sub-control. The callee gets a temporary built from the value; a header built that way
// is valid.
#include <core.p4>
#include <v1model.p4>

header in_t   { bit<8> x; }
header pair_t { bit<8> a; bit<8> b; }
header res_t  { bit<8> sum; bit<8> diff; bit<8> act; }

struct wrap_t { pair_t p; bit<8> c; }
struct headers { in_t i; res_t res; }
struct metadata { }

bit<8> total(in wrap_t w) {
    return w.p.a + w.p.b + w.c + (w.p.isValid() ? 8w0x80 : 8w0);
}

bit<8> difference(in pair_t p) {
    return p.a - p.b;
}

parser MyParser(packet_in pkt, out headers hdr, inout metadata meta,
                inout standard_metadata_t smeta) {
    state start { pkt.extract(hdr.i); transition accept; }
}

control MyVerify(inout headers hdr, inout metadata meta) { apply { } }

control Sub(in pair_t p, inout bit<8> out_value) {
    apply { out_value = p.a + p.b; }
}

control MyIngress(inout headers hdr, inout metadata meta, inout standard_metadata_t smeta) {
    action mix(in pair_t p, in bit<8> extra) {
        hdr.res.act = p.a ^ p.b ^ extra;
    }
    apply {
        hdr.res.setValid();
        hdr.res.sum = total({ { hdr.i.x, 2 }, 3 });
        hdr.res.diff = difference({ a = hdr.i.x, b = 1 });
        mix({ hdr.i.x, 0x0F }, 0xF0);
        Sub.apply({ hdr.i.x, 0x20 }, hdr.i.x);
    }
}

control MyEgress(inout headers hdr, inout metadata meta, inout standard_metadata_t smeta) {
    apply { }
}
control MyCompute(inout headers hdr, inout metadata meta) { apply { } }
control MyDeparser(packet_out pkt, in headers hdr) {
    apply { pkt.emit(hdr.i); pkt.emit(hdr.res); }
}

V1Switch(MyParser(), MyVerify(), MyIngress(), MyEgress(), MyCompute(), MyDeparser()) main;
