"""Hand-written BMv2 programs that exercise the parser (see jsonbuild.py for the shapes).

Each function returns a `Program`; the comment above it is the P4 it stands for. The STF test
next to each JSON explains the expected packets.
"""

from __future__ import annotations

from jsonbuild import (Program, arg, assign, cast, expr, field, hexstr, meta, prim, set_port,
                       valid)


def ethernet(p: Program) -> None:
    p.header_type("ethernet_h", [("dst", 48), ("src", 48), ("ether_type", 16)])
    p.header("eth", "ethernet_h")


def report_parser_error(p: Program, next_node: str | None) -> str:
    """Ingress prologue: `hdr.eth.src = (bit<48>)smeta.parser_error; smeta.egress_spec = 1;`"""
    p.action("report_error", [assign(field("eth", "src"), cast(meta("parser_error"), 48)),
                              set_port(1)])
    return p.call("ingress", "report_error", next_node)


def varbit_lookahead() -> Program:
    """header opt_h { bit<8> kind; bit<8> len; varbit<64> data; }
    state parse_opt {
        bit<16> t = pkt.lookahead<bit<16>>();
        pkt.extract(hdr.opt, (bit<32>)t[7:0] << 3);          // len bytes of data
        transition select(pkt.lookahead<bit<8>>()) { 0xA0 &&& 0xF0: parse_a; default: parse_b; }
    }
    ingress: report parser_error in eth.src; if (hdr.tag_a.isValid()) hdr.tag_a.a = hdr.opt.len;
    """
    p = Program("varbit_lookahead")
    ethernet(p)
    p.header_type("opt_h", [("kind", 8), ("len", 8), ("data", "*")], max_length=10)
    p.header_type("tag_a_h", [("marker", 8), ("a", 8)])
    p.header_type("tag_b_h", [("b", 16)])
    for name, htype in (("opt", "opt_h"), ("tag_a", "tag_a_h"), ("tag_b", "tag_b_h")):
        p.header(name, htype)
    t = p.scalar("tmp", 16)
    p.state("start", [prim("extract", {"type": "regular", "value": "eth"})],
            [field("eth", "ether_type")], [("0x9000", None, "parse_opt"), (None, None, None)])
    length = expr("<<", expr("&", t, hexstr(0xFF, 16)), hexstr(3, 32))
    p.state("parse_opt",
            [prim("set", t, {"type": "lookahead", "value": [0, 16]}),
             prim("extract_VL", {"type": "regular", "value": "opt"}, arg(length))],
            [{"type": "lookahead", "value": [0, 8]}],
            [("0xa0", "0xf0", "parse_a"), (None, None, "parse_b")])
    p.state("parse_a", [prim("extract", {"type": "regular", "value": "tag_a"})])
    p.state("parse_b", [prim("extract", {"type": "regular", "value": "tag_b"})])
    p.deparse("eth", "opt", "tag_a", "tag_b")
    p.action("copy_len", [assign(field("tag_a", "a"), field("opt", "len"))])
    p.conditional("ingress", "node_3", valid("tag_a"), p.call("ingress", "copy_len", None), None)
    p.start("ingress", report_parser_error(p, "node_3"))
    return p


def header_stacks() -> Program:
    """header label_h { bit<16> label; bit<7> ttl; bit<1> bos; }  label_h[3] labels;
    state parse_label { pkt.extract(hdr.labels.next);
                        transition select(hdr.labels.last.bos) {
                            1: accept; default: parse_label; } }
    table label_ops { key = { hdr.labels[0].label: exact; }
                      actions = { pop1; push_label; swap; NoAction; } }
    pop1: labels.pop_front(1)    push_label(l): labels.push_front(1); labels[0].setValid();
    labels[0] = {l, 64, 0}       swap(l): labels[0].label = l
    ingress: report parser_error in eth.src; if (hdr.labels[0].isValid()) label_ops.apply();
    """
    p = Program("header_stacks")
    ethernet(p)
    p.header_type("label_h", [("label", 16), ("ttl", 7), ("bos", 1)])
    p.stack("labels", "label_h", 3)
    p.state("start", [prim("extract", {"type": "regular", "value": "eth"})],
            [field("eth", "ether_type")], [("0x8847", None, "parse_label"), (None, None, None)])
    p.state("parse_label", [prim("extract", {"type": "stack", "value": "labels"})],
            [{"type": "stack_field", "value": ["labels", "bos"]}],
            [("0x01", None, None), (None, None, "parse_label")])
    p.deparse("eth", "labels[0]", "labels[1]", "labels[2]")
    stack = {"type": "header_stack", "value": "labels"}
    p.action("NoAction", [])
    p.action("Ingress.pop1", [prim("pop", stack, hexstr(1, 32))])
    p.action("Ingress.push_label", [
        prim("push", stack, hexstr(1, 32)),
        prim("add_header", {"type": "header", "value": "labels[0]"}),
        assign(field("labels[0]", "label"), {"type": "runtime_data", "value": 0}),
        assign(field("labels[0]", "ttl"), hexstr(64, 7)),
        assign(field("labels[0]", "bos"), hexstr(0, 1)),
    ], params=[("l", 16)])
    p.action("Ingress.swap", [assign(field("labels[0]", "label"),
                                     {"type": "runtime_data", "value": 0})], params=[("l", 16)])
    p.table("ingress", "Ingress.label_ops",
            [("hdr.labels[0].label", "labels[0]", "label", "exact")],
            ["Ingress.pop1", "Ingress.push_label", "Ingress.swap", "NoAction"], "NoAction")
    p.conditional("ingress", "node_3", valid("labels[0]"), "Ingress.label_ops", None)
    p.start("ingress", report_parser_error(p, "node_3"))
    return p


def select_vsets() -> Program:
    """value_set<bit<16>>(4) pvs;
    state start { pkt.extract(hdr.eth); transition select(hdr.eth.ether_type) {
        pvs: s_vset; 0x8800 &&& 0xFF00: s_masked; default: accept; } }
    state s_vset   { pkt.extract(hdr.h); meta.path = 1; transition accept; }
    state s_masked { pkt.extract(hdr.h); meta.path = 2;
        transition select(hdr.eth.ether_type, hdr.h.c) { (0x88B5, 0x1 &&& 0xF): s_two;
                                                         default: accept; } }
    state s_two    { meta.path = 3; transition accept; }
    ingress: hdr.eth.src = (bit<48>)meta.path; smeta.egress_spec = 1;
    """
    p = Program("select_vsets")
    ethernet(p)
    p.header_type("class_h", [("c", 8)])
    p.header("h", "class_h")
    path = p.scalar("path", 8)
    p.parse_vsets.append({"name": "pvs", "id": 0, "compressed_bitwidth": 16})
    extract_h = prim("extract", {"type": "regular", "value": "h"})
    p.state("start", [prim("extract", {"type": "regular", "value": "eth"})],
            [field("eth", "ether_type")],
            [(("vset", "pvs"), None, "s_vset"), ("0x8800", "0xff00", "s_masked"),
             (None, None, None)])
    p.state("s_vset", [extract_h, prim("set", path, hexstr(1, 8))])
    p.state("s_masked", [extract_h, prim("set", path, hexstr(2, 8))],
            [field("eth", "ether_type"), field("h", "c")],
            [("0x88b501", "0xffff0f", "s_two"), (None, None, None)])
    p.state("s_two", [prim("set", path, hexstr(3, 8))])
    p.deparse("eth", "h")
    p.action("show_path", [assign(field("eth", "src"), cast(path, 48)), set_port(1)])
    p.start("ingress", p.call("ingress", "show_path", None))
    return p


def parser_errors() -> Program:
    """error { BadVersion, BadLength }   header v_h { bit<8> ver; bit<8> len; }
    state start { pkt.extract(hdr.eth); transition select(hdr.eth.ether_type) {
        0x1111: s_verify; 0x2222: s_nodefault; default: accept; } }
    state s_verify { pkt.extract(hdr.v); verify(hdr.v.ver == 4, error.BadVersion);
                     verify(hdr.v.len <= 8, error.BadLength); transition accept; }
    state s_nodefault { pkt.extract(hdr.v); transition select(hdr.v.ver) { 1: accept; } }
    (the JSON has no default transition there: BMv2 ends parsing without an error on no match)
    ingress: if (smeta.parser_error == error.NoError) { smeta.egress_spec = 1; }
             else { hdr.eth.src = (bit<48>)smeta.parser_error; smeta.egress_spec = 2; }
    """
    p = Program("parser_errors")
    ethernet(p)
    p.header_type("v_h", [("ver", 8), ("len", 8)])
    p.header("v", "v_h")
    bad_version, bad_length = p.error("BadVersion"), p.error("BadLength")
    extract_v = prim("extract", {"type": "regular", "value": "v"})
    p.state("start", [prim("extract", {"type": "regular", "value": "eth"})],
            [field("eth", "ether_type")],
            [("0x1111", None, "s_verify"), ("0x2222", None, "s_nodefault"), (None, None, None)])
    p.state("s_verify", [
        extract_v,
        prim("verify", expr("==", field("v", "ver"), hexstr(4, 8)), hexstr(bad_version, 32)),
        prim("verify", expr("<=", field("v", "len"), hexstr(8, 8)), hexstr(bad_length, 32)),
    ])
    p.state("s_nodefault", [extract_v], [field("v", "ver")], [("0x01", None, None)])
    p.deparse("eth", "v")
    p.action("to_port_1", [set_port(1)])
    p.action("report", [assign(field("eth", "src"), cast(meta("parser_error"), 48)),
                        assign(meta("egress_spec"), hexstr(2, 9))])
    ok = p.call("ingress", "to_port_1", None)
    bad = p.call("ingress", "report", None)
    p.conditional("ingress", "node_2", expr("==", meta("parser_error"), hexstr(0, 32)), ok, bad)
    p.start("ingress", "node_2")
    return p


PROGRAMS = [varbit_lookahead, header_stacks, select_vsets, parser_errors]
