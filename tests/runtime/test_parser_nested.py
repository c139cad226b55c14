"""A parser without loops is generated as nested code (runtime/pygen/parsergen.py): each branch
holds its next state's code, with no state variable. It must do exactly what the state loop
does (kept for looping parsers, and when the nested form would be too large): here on a
diamond (two states lead to one), truncated packets (PacketTooShort mid-way: the headers so
far stay valid, the rest is payload), a select without a match or default, and a looping
parser, which keeps its loop."""

from __future__ import annotations

import pytest

from p4switch.runtime import Switch
from p4switch.runtime.pygen import parsergen
from p4switch.runtime.share import codeshare

from .bmv2 import assign, const, eth_frame, ethernet_program, fld, std


def _diamond() -> dict:
    prog = ethernet_program()
    for name in ("a", "b", "c"):
        prog.header_type(f"{name}_t", [("x", 8), ("y", 16)])
        prog.header(name, f"{name}_t")
    prog.state("start", [prog.extract("eth")], key=[fld("eth", "type")],
               transitions=[(0x1111, None, "pa"), (0x2222, None, "pb"), (0x3333, None, None),
                            (None, None, "pc")])
    prog.state("pa", [prog.extract("a")], key=[fld("a", "x")],
               transitions=[(1, None, "pc"), (2, None, None)])      # no default
    prog.state("pb", [prog.extract("b")], transitions=[(None, None, "pc")])
    prog.state("pc", [prog.extract("c")])
    prog.run("out", prog.action("out", [
        assign(std("egress_spec"), const(1)),
        assign(fld("eth", "src"), std("parser_error"))]))
    return prog.build()


def _looping() -> dict:
    prog = ethernet_program()
    prog.header_type("l_t", [("more", 8)])
    prog.stack("l", "l_t", 3)
    prog.state("start", [prog.extract("eth")], transitions=[(None, None, "pl")])
    prog.state("pl", [{"op": "extract", "parameters": [{"type": "stack", "value": "l"}]}],
               key=[fld("l[0]", "more")], transitions=[(1, None, "pl"), (None, None, None)])
    prog.run("out", prog.action("out", [assign(std("egress_spec"), const(1))]))
    return prog.build()


FRAMES = [eth_frame(ether_type=t, payload=p) for t, p in (
    (0x1111, bytes([1, 0, 5, 9, 9, 9, 7])), (0x1111, bytes([2, 0, 5, 9, 9, 9])),
    (0x1111, bytes([3, 0, 5])), (0x1111, bytes([1, 0])), (0x1111, bytes([1, 0, 5, 9])),
    (0x2222, bytes([4, 4, 4, 5, 5, 5, 6])), (0x2222, bytes([4, 4, 4, 5])),
    (0x3333, bytes(6)), (0x4444, bytes([8, 8, 8])), (0x4444, b""))]


@pytest.mark.parametrize("program,nested", [(_diamond, True), (_looping, False)])
def test_nested_parser_matches_the_state_loop(program, nested, monkeypatch):
    doc = program()
    monkeypatch.setattr(codeshare, "ENABLED", False)        # two translations of one JSON
    fast = Switch(doc)
    assert ("while True:" not in fast.program.untraced.source) == nested
    monkeypatch.setattr(parsergen, "MAX_NESTED_LINES", 0)    # always the state loop
    loop = Switch(doc)
    assert "while True:" in loop.program.untraced.source
    frames = FRAMES + [eth_frame(payload=bytes([1, 1, 0, 2])), eth_frame(payload=bytes([0]))]
    for n, frame in enumerate(frames):
        assert fast.receive(0, frame) == loop.receive(0, frame), f"frame {n}"
