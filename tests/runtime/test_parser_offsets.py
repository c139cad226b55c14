"""A parser without loops runs as nested code whose header offsets are constants
(parsergen.py): `pos` is written only where something reads it, where parsing ends and where
an error ends it. Every truncation of a packet must still leave the headers extracted so far
valid and the rest as payload, as BMv2 does, with the right parser_error; also after a `set`
(which leaves the offset constant) and a lookahead (which needs the run-time `pos`)."""

from __future__ import annotations

from pathlib import Path

import pytest

from p4switch.runtime import Switch

from .bmv2 import assign, const, eth_frame, ethernet_program, fld, std
from .bmv2_agreement import assert_agrees_with_simple_switch


def _program():
    prog = ethernet_program()
    prog.header_type("a_t", [("x", 8), ("y", 16), ("sel", 8)])
    prog.header_type("b_t", [("z", 24), ("w", 8)])
    prog.header_type("c_t", [("u", 16)])
    for name, htype in (("a", "a_t"), ("b", "b_t"), ("c", "c_t")):
        prog.header(name, htype)
    copy = prog.scalar("copy", 8)
    prog.state("start", [prog.extract("eth")], key=[fld("eth", "type")],
               transitions=[(0x1234, None, "parse_a"), (None, None, None)])
    prog.state("parse_a", [prog.extract("a"),
                           {"op": "set", "parameters": [copy, fld("a", "sel")]}],
               key=[fld("a", "sel")], transitions=[(1, None, "parse_b"), (None, None, None)])
    prog.state("parse_b", [prog.extract("b")], key=[{"type": "lookahead", "value": [0, 8]}],
               transitions=[(0xCC, None, "parse_c"), (None, None, None)])
    prog.state("parse_c", [prog.extract("c")])
    prog.run("fwd", prog.action("fwd", [assign(std("egress_spec"), const(1)),
                                        assign(fld("eth", "src"), std("parser_error")),
                                        assign(fld("a", "x"), copy)]))
    return prog.build()


WHOLE = eth_frame(ether_type=0x1234, payload=bytes([7, 0, 2, 1]) + bytes([9, 9, 9, 5]) +
                  bytes([0xCC, 0xDD]) + b"rest")


def test_truncated_packets_keep_what_was_extracted_and_the_rest_as_payload():
    sw = Switch(_program())
    source = sw.program.untraced.source
    assert "unpack" in source and "(d, 14)" in source        # constant offsets were used
    for cut in range(14, len(WHOLE) + 1):
        if cut == 22:
            continue                  # a lookahead at the very end: see the BMv2 test
        frame = WHOLE[:cut]
        [(_, data)] = sw.receive(0, frame)
        error = 1 if cut < 22 or cut == 23 else 0              # PacketTooShort
        expected = bytearray(frame)
        expected[6:12] = error.to_bytes(6, "big")
        if cut >= 18:                   # a parsed: a.x = a.sel (the `set`'s copy)
            expected[14] = frame[17]
        assert data == bytes(expected), cut


@pytest.mark.skipif(not Path("/opt/p4ref/bin/simple_switch").exists(),
                    reason="needs real simple_switch (/opt/p4ref)")
def test_truncations_agree_with_simple_switch(tmp_path):
    program = _program()
    sw = Switch(program)
    frames = [WHOLE[:cut] for cut in range(14, len(WHOLE) + 1)]
    assert_agrees_with_simple_switch(program, sw, frames, tmp_path)
