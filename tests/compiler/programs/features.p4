// Front-end features end to end: typedef, serializable enum, const, a function with an early
// return, an action with an out parameter called from apply, a sub-control writing a slice,
// switch on action_run, const ternary entries, saturating add, concatenation, signed compare.
#include <core.p4>
#include <v1model.p4>

typedef bit<48> mac_t;
enum bit<8> Op { ADD = 1, SUB = 2, SAT = 3, CAT = 4, SIGNED = 5 }
const bit<16> REQ_TYPE = 0x9000;

header ethernet_t { mac_t dst; mac_t src; bit<16> ether_type; }
header req_t { Op op; bit<8> a; bit<8> b; bit<16> res; bit<8> flags; }
struct headers_t { ethernet_t eth; req_t req; }
struct meta_t { }

bit<8> distance(in bit<8> x, in bit<8> y) {
    if (x > y) {
        return x - y;
    }
    return y - x;
}

control SetLowFlags(inout req_t r, in bit<8> value) {
    apply { r.flags[3:0] = value[3:0]; }
}

parser P(packet_in pkt, out headers_t hdr, inout meta_t meta, inout standard_metadata_t sm) {
    state start {
        pkt.extract(hdr.eth);
        transition select(hdr.eth.ether_type) {
            REQ_TYPE: parse_req;
            default: accept;
        }
    }
    state parse_req { pkt.extract(hdr.req); transition accept; }
}

control VC(inout headers_t hdr, inout meta_t meta) { apply { } }

control Ing(inout headers_t hdr, inout meta_t meta, inout standard_metadata_t sm) {
    SetLowFlags() low_flags;

    action compute(out bit<16> dst) { dst = (bit<16>)distance(hdr.req.a, hdr.req.b); }
    action set_out(bit<9> port) { sm.egress_spec = port; }
    action miss() { sm.egress_spec = 9; }
    table route {
        key = { hdr.eth.dst : ternary; }
        actions = { set_out; miss; }
        default_action = miss();
        const entries = {
            48w0x000000000001 &&& 48w0xFFFFFFFFFFFF : set_out(1);
            48w0x0000000000F0 &&& 48w0x0000000000F0 : set_out(2);
        }
    }
    apply {
        if (!hdr.req.isValid()) {
            mark_to_drop(sm);
            exit;
        }
        switch (route.apply().action_run) {
            set_out: { hdr.req.flags = 0x10; }
            miss: { hdr.req.flags = 0x20; }
        }
        if (hdr.req.op == Op.ADD) {
            hdr.req.res = (bit<16>)hdr.req.a + (bit<16>)hdr.req.b;
        } else if (hdr.req.op == Op.SUB) {
            compute(hdr.req.res);
        } else if (hdr.req.op == Op.SAT) {
            hdr.req.res = (bit<16>)(hdr.req.a |+| hdr.req.b);
        } else if (hdr.req.op == Op.CAT) {
            hdr.req.res = hdr.req.a ++ hdr.req.b;
        } else if (hdr.req.op == Op.SIGNED) {
            hdr.req.res = ((int<8>)hdr.req.a < (int<8>)hdr.req.b) ? 16w1 : 16w0;
        }
        low_flags.apply(hdr.req, hdr.req.a);
    }
}

control Eg(inout headers_t hdr, inout meta_t meta, inout standard_metadata_t sm) { apply { } }
control CC(inout headers_t hdr, inout meta_t meta) { apply { } }
control Dep(packet_out pkt, in headers_t hdr) {
    apply { pkt.emit(hdr.eth); pkt.emit(hdr.req); }
}

V1Switch(P(), VC(), Ing(), Eg(), CC(), Dep()) main;
