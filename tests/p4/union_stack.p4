// union_stack: a stack of header unions filled with `.next` in a parser loop (BMv2's union_stack
// extract): each option is a one-byte tag and a value whose width the tag chooses (1: one byte,
// 2: two bytes); tag 0 ends the list. Ingress reports which member each element holds and the
// stack is emitted as parsed. A fourth option overflows the three-element stack: StackOutOfBounds.
#include <core.p4>
#include <v1model.p4>

header ethernet_t { bit<48> dst; bit<48> src; bit<16> ether_type; }
header one_t { bit<8> tag; bit<8> v; }
header two_t { bit<8> tag; bit<16> v; }
header_union opt_t { one_t one; two_t two; }
header end_t { bit<8> tag; }
header report_t { bit<8> e0; bit<8> e1; bit<8> e2; bit<8> err; }  // 1 one, 2 two, 0 none

struct headers { ethernet_t eth; report_t report; opt_t[3] opts; end_t end; }
struct metadata { }

parser MyParser(packet_in pkt, out headers hdr, inout metadata meta,
                inout standard_metadata_t smeta) {
    state start {
        pkt.extract(hdr.eth);
        transition next_option;
    }
    state next_option {
        transition select(pkt.lookahead<bit<8>>()) {
            1: parse_one;
            2: parse_two;
            default: parse_end;
        }
    }
    state parse_one {
        pkt.extract(hdr.opts.next.one);
        transition next_option;
    }
    state parse_two {
        pkt.extract(hdr.opts.next.two);
        transition next_option;
    }
    state parse_end {
        pkt.extract(hdr.end);
        transition accept;
    }
}

control MyVerify(inout headers hdr, inout metadata meta) { apply { } }

control MyIngress(inout headers hdr, inout metadata meta, inout standard_metadata_t smeta) {
    apply {
        smeta.egress_spec = 1;
        hdr.report.setValid();
        hdr.report.e0 = hdr.opts[0].one.isValid() ? 8w1 : (hdr.opts[0].two.isValid() ? 8w2 : 8w0);
        hdr.report.e1 = hdr.opts[1].one.isValid() ? 8w1 : (hdr.opts[1].two.isValid() ? 8w2 : 8w0);
        hdr.report.e2 = hdr.opts[2].one.isValid() ? 8w1 : (hdr.opts[2].two.isValid() ? 8w2 : 8w0);
        hdr.report.err = smeta.parser_error == error.StackOutOfBounds ? 8w1 : 8w0;
    }
}

control MyEgress(inout headers hdr, inout metadata meta, inout standard_metadata_t smeta) {
    apply { }
}

control MyCompute(inout headers hdr, inout metadata meta) { apply { } }

control MyDeparser(packet_out pkt, in headers hdr) {
    apply {
        pkt.emit(hdr.eth);
        pkt.emit(hdr.report);
        pkt.emit(hdr.opts);
        pkt.emit(hdr.end);
    }
}

V1Switch(MyParser(), MyVerify(), MyIngress(), MyEgress(), MyCompute(), MyDeparser()) main;
