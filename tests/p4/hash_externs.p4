// hash_externs: the v1model hash extern with several algorithms over the same (32 + 16)-bit
// field list, with the base + (hash % max) output rule, random with lo == hi (the only
// deterministic use), the custom CRCs in their default configuration, and a register that
// remembers the previous packet's CRC16.
#include <core.p4>
#include <v1model.p4>

header ethernet_t { bit<48> dst; bit<48> src; bit<16> ether_type; }
header in_t { bit<32> x; bit<16> y; }
header out_t {
    bit<16> crc16;       // crc16({x, y}) % 65536
    bit<16> crc32_lo;    // crc32({x, y}) % 65536
    bit<16> crc32_mod;   // 100 + crc32({x, y}) % 1000
    bit<16> ident_mod;   // identity({x}) % 1000
    bit<16> csum;        // csum16({x, y})
    bit<16> xor;         // xor16({x, y})
    bit<8>  rnd;         // random in [42, 42]
    bit<16> prev;        // the previous packet's crc16, from a register
    bit<16> crc16c;      // crc16_custom with BMv2's default configuration (that of crc16)
    bit<16> crc32c_lo;   // crc32_custom with BMv2's default configuration (that of crc32)
}

struct headers {
    ethernet_t eth;
    in_t       inp;
    out_t      outp;
}
struct metadata { }

parser MyParser(packet_in pkt, out headers hdr, inout metadata meta,
                inout standard_metadata_t smeta) {
    state start {
        pkt.extract(hdr.eth);
        transition select(hdr.eth.ether_type) {
            0x88B5: parse_in;
            default: accept;
        }
    }
    state parse_in {
        pkt.extract(hdr.inp);
        transition accept;
    }
}

control MyVerifyChecksum(inout headers hdr, inout metadata meta) { apply { } }

control MyIngress(inout headers hdr, inout metadata meta, inout standard_metadata_t smeta) {
    register<bit<16>>(4) last_crc;

    apply {
        if (!hdr.inp.isValid()) {
            mark_to_drop(smeta);
            return;
        }
        hdr.outp.setValid();
        hash(hdr.outp.crc16, HashAlgorithm.crc16, 16w0, { hdr.inp.x, hdr.inp.y }, 32w65536);
        hash(hdr.outp.crc32_lo, HashAlgorithm.crc32, 16w0, { hdr.inp.x, hdr.inp.y }, 32w65536);
        hash(hdr.outp.crc32_mod, HashAlgorithm.crc32, 16w100, { hdr.inp.x, hdr.inp.y }, 16w1000);
        hash(hdr.outp.ident_mod, HashAlgorithm.identity, 16w0, { hdr.inp.x }, 16w1000);
        hash(hdr.outp.csum, HashAlgorithm.csum16, 16w0, { hdr.inp.x, hdr.inp.y }, 32w65536);
        hash(hdr.outp.xor, HashAlgorithm.xor16, 16w0, { hdr.inp.x, hdr.inp.y }, 32w65536);
        hash(hdr.outp.crc16c, HashAlgorithm.crc16_custom, 16w0, { hdr.inp.x, hdr.inp.y }, 32w65536);
        hash(hdr.outp.crc32c_lo, HashAlgorithm.crc32_custom, 16w0, { hdr.inp.x, hdr.inp.y },
             32w65536);
        random(hdr.outp.rnd, 8w42, 8w42);

        bit<16> previous;
        last_crc.read(previous, 0);
        hdr.outp.prev = previous;
        last_crc.write(0, hdr.outp.crc16);
        smeta.egress_spec = 1;
    }
}

control MyEgress(inout headers hdr, inout metadata meta, inout standard_metadata_t smeta) {
    apply { }
}

control MyComputeChecksum(inout headers hdr, inout metadata meta) { apply { } }

control MyDeparser(packet_out pkt, in headers hdr) {
    apply {
        pkt.emit(hdr.eth);
        pkt.emit(hdr.inp);
        pkt.emit(hdr.outp);
    }
}

V1Switch(MyParser(), MyVerifyChecksum(), MyIngress(), MyEgress(), MyComputeChecksum(),
         MyDeparser()) main;
