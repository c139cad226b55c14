"""The parser: extraction, select (masks, default, value sets), stacks, lookahead, varbit,
verify, unions, and the parser errors v1model hands to ingress in `parser_error`."""

from __future__ import annotations

from p4switch.runtime import ExactKey, Switch

from .bmv2 import Bmv2Program, assign, const, eth_frame, ethernet_program, fld, op, std

PACKET_TOO_SHORT, NO_MATCH, STACK_OUT_OF_BOUNDS, HEADER_TOO_SHORT = 1, 2, 3, 4


def _report_error(prog: Bmv2Program) -> None:
    """Ingress copies parser_error into eth.type and forwards to port 1 (eth must be valid)."""
    report = prog.action("report", [assign(fld("eth", "type"), std("parser_error")),
                                    assign(std("egress_spec"), const(1))])
    prog.run("report", report)


def test_short_packet_sets_packet_too_short_and_keeps_earlier_headers():
    prog = ethernet_program()
    prog.header_type("h_t", [("x", 32)])
    prog.header("h", "h_t")
    prog.state("start", [prog.extract("eth"), prog.extract("h")])
    _report_error(prog)
    sw = Switch(prog.build())
    [(port, out)] = sw.receive(0, eth_frame(payload=b"\x01\x02"))
    assert port == 1
    assert out[12:14] == PACKET_TOO_SHORT.to_bytes(2, "big")
    assert out[14:] == b"\x01\x02"  # h is invalid: not emitted; the unparsed bytes follow
    [(_, out)] = sw.receive(0, eth_frame(payload=b"\x01\x02\x03\x04\x05"))
    assert out[12:14] == b"\x00\x00" and out[14:] == b"\x01\x02\x03\x04\x05"


def test_select_with_mask_and_no_default_ends_parsing_without_error():
    """BMv2 accepts when no case matches and there is no default (p4c adds no NoMatch)."""
    prog = ethernet_program()
    prog.header_type("h_t", [("x", 8)])
    prog.header("h", "h_t")
    prog.state("start", [prog.extract("eth")], key=[fld("eth", "type")],
               transitions=[(0x1200, 0xFF00, "parse_h"), (0x0800, None, None)])
    prog.state("parse_h", [prog.extract("h")])
    _report_error(prog)
    sw = Switch(prog.build())
    out = sw.receive(0, eth_frame(ether_type=0x12AB, payload=b"\x07"))[0][1]
    assert out[12:14] == b"\x00\x00" and out[14:] == b"\x07"   # h extracted and re-emitted
    out = sw.receive(0, eth_frame(ether_type=0x0800, payload=b"\x07"))[0][1]
    assert out[12:14] == b"\x00\x00"
    out = sw.receive(0, eth_frame(ether_type=0x9999, payload=b"\x07"))[0][1]
    assert out[12:14] == b"\x00\x00" and out[14:] == b"\x07"


def test_explicit_no_match_state_sets_the_error():
    prog = ethernet_program()
    prog.state("start", [prog.extract("eth")], key=[fld("eth", "type")],
               transitions=[(0x0800, None, None), (None, None, "no_match")])
    prog.state("no_match", [{"op": "verify", "parameters": [{"type": "bool", "value": False},
                                                            const(NO_MATCH)]}])
    _report_error(prog)
    sw = Switch(prog.build())
    assert sw.receive(0, eth_frame(ether_type=0x9999))[0][1][12:14] == b"\x00\x02"
    assert sw.receive(0, eth_frame(ether_type=0x0800))[0][1][12:14] == b"\x00\x00"


def test_parse_value_set_controls_transition():
    prog = ethernet_program()
    prog.header_type("h_t", [("x", 8)])
    prog.header("h", "h_t")
    prog.parse_vset("pvs", 16)
    prog.state("start", [prog.extract("eth")], key=[fld("eth", "type")],
               transitions=[("pvs", None, "parse_h"), (None, None, None)])
    prog.state("parse_h", [prog.extract("h"), {"op": "set", "parameters": [
        fld("h", "x"), const(0xEE)]}])
    fwd = prog.action("fwd", [assign(std("egress_spec"), const(1))])
    prog.run("fwd", fwd)
    sw = Switch(prog.build())
    frame = eth_frame(ether_type=0x4321, payload=b"\x01")
    assert sw.receive(0, frame)[0][1][-1] == 0x01
    sw.parse_vset_add("pvs", 0x4321)
    assert sw.receive(0, frame)[0][1][-1] == 0xEE
    sw.parse_vset_remove("pvs", 0x4321)
    assert sw.receive(0, frame)[0][1][-1] == 0x01


def _stack_program(size: int) -> Bmv2Program:
    prog = ethernet_program()
    prog.header_type("hop_t", [("bos", 1), ("port", 7)])
    prog.stack("hops", "hop_t", size)
    prog.state("start", [prog.extract("eth")], transitions=[(None, None, "hop")])
    prog.state("hop", [{"op": "extract", "parameters": [{"type": "stack", "value": "hops"}]}],
               key=[{"type": "stack_field", "value": ["hops", "bos"]}],
               transitions=[(1, None, None), (None, None, "hop")])
    return prog


def test_header_stack_next_last_and_out_of_bounds():
    prog = _stack_program(3)
    _report_error(prog)
    sw = Switch(prog.build())
    out = sw.receive(0, eth_frame(payload=bytes([0x05, 0x86, 0xAA])))[0][1]
    assert out[12:14] == b"\x00\x00" and out[14:] == bytes([0x05, 0x86, 0xAA])
    out = sw.receive(0, eth_frame(payload=bytes([1, 2, 3, 4, 5])))[0][1]
    assert out[12:14] == STACK_OUT_OF_BOUNDS.to_bytes(2, "big")
    assert out[14:] == bytes([1, 2, 3, 4, 5])  # three hops re-emitted, then the rest


def test_stack_pop_and_push_in_ingress():
    prog = _stack_program(3)
    pop = prog.action("pop", [
        {"op": "pop", "parameters": [{"type": "header_stack", "value": "hops"}, const(1)]},
        assign(std("egress_spec"), const(1))])
    push = prog.action("push", [
        {"op": "push", "parameters": [{"type": "header_stack", "value": "hops"}, const(1)]},
        {"op": "add_header", "parameters": [{"type": "header", "value": "hops[0]"}]},
        assign(fld("hops[0]", "port"), const(0x7F)),
        assign(std("egress_spec"), const(2))])
    prog.table("choose", [("exact", ["eth", "dst"])], [pop, push], default=pop)
    sw = Switch(prog.build())
    sw.table_add("choose", [ExactKey(9)], "push")
    out = sw.receive(0, eth_frame(payload=bytes([0x05, 0x86, 0xAA])))[0][1]
    assert out[14:] == bytes([0x86, 0xAA])
    out = sw.receive(0, eth_frame(dst=9, payload=bytes([0x05, 0x86, 0xAA])))[0][1]
    assert out[14:] == bytes([0x7F, 0x05, 0x86, 0xAA])


def test_lookahead_select_and_advance():
    prog = ethernet_program()
    prog.header_type("h_t", [("x", 8)])
    prog.header("h", "h_t")
    prog.state("start", [prog.extract("eth")],
               key=[{"type": "lookahead", "value": [4, 4]}],
               transitions=[(0xF, None, "skip"), (None, None, None)])
    prog.state("skip", [{"op": "advance", "parameters": [const(8)]}, prog.extract("h")])
    _report_error(prog)
    sw = Switch(prog.build())
    out = sw.receive(0, eth_frame(payload=b"\x0F\x42\x99"))[0][1]
    # the skipped byte is gone, h (0x42) is re-emitted, then the rest
    assert out[14:] == b"\x42\x99"
    out = sw.receive(0, eth_frame(payload=b"\x10\x42"))[0][1]
    assert out[14:] == b"\x10\x42"


def test_extract_vl_and_header_too_short():
    prog = ethernet_program()
    prog.header_type("opt_t", [("len", 8), ("data", "*")], max_length=5)
    prog.header("opt", "opt_t")
    prog.state("start", [prog.extract("eth"), {"op": "extract_VL", "parameters": [
        {"type": "regular", "value": "opt"},
        op("<<", {"type": "lookahead", "value": [0, 8]}, const(3))]}])
    _report_error(prog)
    sw = Switch(prog.build())
    out = sw.receive(0, eth_frame(payload=b"\x02\xAA\xBB\xCC"))[0][1]
    assert out[12:14] == b"\x00\x00" and out[14:] == b"\x02\xAA\xBB\xCC"
    # max_length is 5 bytes: len byte + 4 data bytes at most; 0x09 asks for more
    out = sw.receive(0, eth_frame(payload=b"\x09" + bytes(12)))[0][1]
    assert out[12:14] == HEADER_TOO_SHORT.to_bytes(2, "big")


def test_verify_raises_program_error():
    prog = ethernet_program()
    prog.doc["errors"].append(["BadType", 9])
    prog.state("start", [prog.extract("eth"), {"op": "verify", "parameters": [
        op("!=", fld("eth", "type"), const(0xBAD0)), const(9)]}])
    _report_error(prog)
    sw = Switch(prog.build())
    assert sw.receive(0, eth_frame(ether_type=0xBAD0))[0][1][12:14] == b"\x00\x09"
    assert sw.receive(0, eth_frame(ether_type=0x0800))[0][1][12:14] == b"\x00\x00"


def test_header_union_extracting_one_member_invalidates_the_other():
    prog = ethernet_program()
    prog.header_type("a_t", [("x", 8)])
    prog.header_type("b_t", [("y", 16)])
    prog.union("u", {"a": "a_t", "b": "b_t"})
    prog.state("start", [prog.extract("eth")], key=[fld("eth", "type")],
               transitions=[(1, None, "pa"), (None, None, "pb")])
    prog.state("pa", [prog.extract("u.a")])
    prog.state("pb", [prog.extract("u.b")])
    switch_to_a = prog.action("to_a", [
        {"op": "add_header", "parameters": [{"type": "header", "value": "u.a"}]},
        assign(fld("u.a", "x"), const(0x5A)), assign(std("egress_spec"), const(1))])
    keep = prog.action("keep", [assign(std("egress_spec"), const(1))])
    prog.conditional("has_b", op("valid_union", None, {"type": "header_union", "value": "u"}),
                     "t_to_a", "t_keep")
    prog.run("t_to_a", switch_to_a)
    prog.run("t_keep", keep)
    prog.start("has_b")
    sw = Switch(prog.build())
    # b (2 bytes) replaced by a (1 byte): setValid on a member invalidates its sibling
    assert sw.receive(0, eth_frame(ether_type=2, payload=b"\x12\x34"))[0][1][14:] == b"\x5A"


def test_no_parser_error_for_metadata_only_program():
    prog = Bmv2Program()
    prog.state("start")
    fwd = prog.action("fwd", [assign(std("egress_spec"), const(3))])
    prog.run("fwd", fwd)
    sw = Switch(prog.build())
    assert sw.receive(0, b"") == [(3, b"")]
    assert sw.receive(1, b"abc") == [(3, b"abc")]


def test_advance_past_the_end_keeps_the_bytes_as_payload():
    prog = ethernet_program()
    prog.state("start", [prog.extract("eth"), {"op": "advance", "parameters": [const(32)]}])
    _report_error(prog)
    sw = Switch(prog.build())
    out = sw.receive(0, eth_frame(payload=b"\x01\x02"))[0][1]
    assert out[12:14] == PACKET_TOO_SHORT.to_bytes(2, "big") and out[14:] == b"\x01\x02"
    out = sw.receive(0, eth_frame(payload=b"\x01\x02\x03\x04\x05"))[0][1]
    assert out[12:14] == b"\x00\x00" and out[14:] == b"\x05"


def test_parse_value_set_with_masks():
    prog = ethernet_program()
    prog.header_type("h_t", [("x", 8)])
    prog.header("h", "h_t")
    prog.parse_vset("pvs", 16)
    prog.state("start", [prog.extract("eth")], key=[fld("eth", "type")],
               transitions=[("pvs", None, "parse_h"), (None, None, None)])
    prog.state("parse_h", [prog.extract("h"), {"op": "set", "parameters": [
        fld("h", "x"), const(0xEE)]}])
    fwd = prog.action("fwd", [assign(std("egress_spec"), const(1))])
    prog.run("fwd", fwd)
    sw = Switch(prog.build())
    sw.parse_vset_add("pvs", 0x8800, 0xFF00)
    assert sw.receive(0, eth_frame(ether_type=0x8812, payload=b"\x01"))[0][1][-1] == 0xEE
    assert sw.receive(0, eth_frame(ether_type=0x8912, payload=b"\x01"))[0][1][-1] == 0x01


def _two_stacks():
    prog = _stack_program(3)
    prog.stack("copy", "hop_t", 3)
    return prog


def test_assign_header_stack_and_runtime_stack_index():
    prog = _two_stacks()
    # copy := hops; hops[copy.last index].port := 0x11 (a run-time index); report size
    idx = op("last_stack_index", None, {"type": "header_stack", "value": "copy"})
    elem = op("dereference_header_stack", {"type": "header_stack", "value": "hops"}, idx)
    act = prog.action("act", [
        {"op": "assign_header_stack", "parameters": [{"type": "header_stack", "value": "copy"},
                                                     {"type": "header_stack", "value": "hops"}]},
        assign(op("access_field", elem, 1), const(0x11)),
        assign(fld("eth", "type"), op("size_stack", None,
                                      {"type": "header_stack", "value": "copy"})),
        assign(std("egress_spec"), const(1))])
    prog.run("act", act)
    sw = Switch(prog.build())
    out = sw.receive(0, eth_frame(payload=bytes([0x05, 0x86, 0xAA])))[0][1]
    assert out[12:14] == b"\x00\x02"                      # two hops parsed
    assert out[14:] == bytes([0x05, 0x91, 0x05, 0x86, 0xAA])  # hops (edited), then copy


def test_pop_more_than_size_empties_the_stack():
    prog = _stack_program(3)
    act = prog.action("act", [
        {"op": "pop", "parameters": [{"type": "header_stack", "value": "hops"}, const(7)]},
        assign(std("egress_spec"), const(1))])
    prog.run("act", act)
    sw = Switch(prog.build())
    assert sw.receive(0, eth_frame(payload=bytes([0x05, 0x86, 0xAA])))[0][1][14:] == b"\xAA"


def test_assign_union_copies_members_and_validity():
    prog = ethernet_program()
    prog.header_type("a_t", [("x", 8)])
    prog.header_type("b_t", [("y", 16)])
    prog.union("u", {"a": "a_t", "b": "b_t"})
    prog.union("w", {"a": "a_t", "b": "b_t"})
    prog.state("start", [prog.extract("eth"), prog.extract("u.b")])
    act = prog.action("act", [
        {"op": "assign_union", "parameters": [{"type": "header_union", "value": "w"},
                                              {"type": "header_union", "value": "u"}]},
        assign(fld("w.b", "y"), const(0xBEEF)),
        assign(std("egress_spec"), const(1))])
    prog.run("act", act)
    sw = Switch(prog.build())
    out = sw.receive(0, eth_frame(payload=b"\x12\x34"))[0][1]
    assert out[14:] == b"\x12\x34\xBE\xEF"   # u.b, then w.b (w.a stays invalid)


def _union_stack_program() -> Bmv2Program:
    """Options: a 1-byte kind; kind 1 is a 1-byte `short`, others a 2-byte `long` (kind, x)."""
    prog = ethernet_program()
    prog.header_type("short_t", [("kind", 8)])
    prog.header_type("long_t", [("kind", 8), ("x", 8)])
    prog.union_stack("opts", {"short": "short_t", "long": "long_t"}, 3)
    look = {"type": "lookahead", "value": [0, 8]}
    prog.state("start", [prog.extract("eth")], transitions=[(None, None, "opt")])
    prog.state("opt", key=[look], transitions=[(0, None, None), (1, None, "short"),
                                               (None, None, "long")])
    for member in ("short", "long"):   # a long option of kind 3 ends the list
        prog.state(member, [{"op": "extract", "parameters": [
            {"type": "union_stack", "value": ["opts", member]}]}],
            key=[{"type": "union_stack_field", "value": ["opts", member, "kind"]}],
            transitions=[(3, None, None), (None, None, "opt")])
    return prog


def test_header_union_stack_extract_pop_and_copy():
    prog = _union_stack_program()
    pop = prog.action("pop", [
        {"op": "pop", "parameters": [{"type": "header_union_stack", "value": "opts"}, const(1)]},
        assign(std("egress_spec"), const(1))])
    prog.run("pop", pop)
    sw = Switch(prog.build())
    options = bytes([1, 2, 0x77, 1, 0])
    out = sw.receive(0, eth_frame(payload=options))[0][1]
    assert out[14:] == bytes([2, 0x77, 1, 0])   # first option popped, the rest shifted up
    out = sw.receive(0, eth_frame(payload=bytes([1, 1, 1, 1])))[0][1]
    assert out[14:] == bytes([1, 1, 1])         # fourth option: StackOutOfBounds, kept as payload
    out = sw.receive(0, eth_frame(payload=bytes([1, 3, 9, 1])))[0][1]
    assert out[14:] == bytes([3, 9, 1])         # kind 3 ended parsing: the last byte is payload


def test_header_union_stack_push_and_assign():
    prog = _union_stack_program()
    prog.union_stack("saved", {"short": "short_t", "long": "long_t"}, 3)
    act = prog.action("act", [
        {"op": "assign_union_stack", "parameters": [
            {"type": "header_union_stack", "value": "saved"},
            {"type": "header_union_stack", "value": "opts"}]},
        {"op": "push", "parameters": [{"type": "header_union_stack", "value": "opts"}, const(1)]},
        {"op": "add_header", "parameters": [{"type": "header", "value": "opts[0].short"}]},
        assign(fld("opts[0].short", "kind"), const(0x55)),
        assign(std("egress_spec"), const(1))])
    prog.run("act", act)
    sw = Switch(prog.build())
    out = sw.receive(0, eth_frame(payload=bytes([1, 2, 0x77, 0])))[0][1]
    # opts after push: 55 | 01 | 02 77 ; then saved (the parsed copy): 01 | 02 77 ; payload 00
    assert out[14:] == bytes([0x55, 1, 2, 0x77, 1, 2, 0x77, 0])
