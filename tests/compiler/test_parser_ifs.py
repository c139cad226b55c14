"""`if` in parser states: the lowering to extra BMv2 states (behaviour: programs/parser_ifs)."""

from __future__ import annotations

from p4switch.compiler import compile_source

from .helpers import program


def states(start_body: str, extra_states: str = "") -> dict:
    text = program("apply { }", meta_fields="bit<8> x;").replace(
        "state start { pkt.extract(hdr.eth); transition accept; }",
        f"state start {{ {start_body} }} {extra_states}")
    parser = compile_source(text, "p.p4").bmv2["parsers"][0]
    return {s["name"]: s for s in parser["parse_states"]}


def test_if_splits_the_state_into_then_else_and_join():
    got = states("pkt.extract(hdr.eth); if (hdr.eth.ether_type == 1) { meta.x = 1; } "
                 "else { meta.x = 2; } meta.x = meta.x + 1; transition accept;")
    assert set(got) == {"start", "start_then", "start_else", "start_join"}
    start = got["start"]
    assert [op["op"] for op in start["parser_ops"]] == ["extract", "set"]  # set: the condition
    assert [(t["value"], t["next_state"]) for t in start["transitions"]] == \
        [("0x01", "start_then"), (None, "start_else")]
    assert [t["next_state"] for t in got["start_then"]["transitions"]] == ["start_join"]
    assert [t["next_state"] for t in got["start_else"]["transitions"]] == ["start_join"]
    assert len(got["start_join"]["parser_ops"]) == 1  # the code after the if runs once


def test_if_without_else_goes_straight_to_the_join():
    got = states("pkt.extract(hdr.eth); if (hdr.eth.ether_type == 1) { meta.x = 1; } "
                 "transition accept;")
    assert [t["next_state"] for t in got["start"]["transitions"]] == ["start_then", "start_join"]


def test_constant_condition_keeps_only_the_branch_taken():
    got = states("pkt.extract(hdr.eth); if (false) { meta.x = 1; } else { meta.x = 2; } "
                 "transition accept;")
    assert set(got) == {"start"}
    value = got["start"]["parser_ops"][1]["parameters"][1]["value"]
    assert value == "0x02"


def test_generated_names_do_not_clash_with_user_states():
    got = states("pkt.extract(hdr.eth); if (hdr.eth.ether_type == 1) { meta.x = 1; } "
                 "transition start_then;",
                 "state start_then { transition accept; }")
    assert {"start_then", "start_then_1", "start_join"} <= set(got)
    assert [t["next_state"] for t in got["start"]["transitions"]] == ["start_then_1", "start_join"]
    assert [t["next_state"] for t in got["start_join"]["transitions"]] == ["start_then"]


def test_lookahead_comparison_selects_on_the_lookahead():
    got = states("pkt.extract(hdr.eth); if (pkt.lookahead<bit<12>>() != 0x123) { meta.x = 1; } "
                 "transition accept;")
    start = got["start"]
    # read into a temporary first (a `set` raises PacketTooShort), as p4c does
    peek = start["parser_ops"][-1]
    assert peek["op"] == "set" and peek["parameters"][1] == {"type": "lookahead",
                                                             "value": [0, 12]}
    assert start["transition_key"] == [peek["parameters"][0]]
    assert [(t["value"], t["next_state"]) for t in start["transitions"]] == \
        [("0x0123", "start_join"), (None, "start_then")]
