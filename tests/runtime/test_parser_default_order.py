"""A `default` parser transition applies only when no other transition of the state matches,
wherever it stands in the list, and of several defaults the last one counts: simple_switch's
rule (found by differential testing, docs/difftest.md F6). p4c always puts the default last;
these lists are hand-written. Each case also runs on real simple_switch when it is installed.
"""

from __future__ import annotations

import json

import pytest

from p4switch.runtime import Switch

from .bmv2 import Bmv2Program, assign, const, eth_frame, ethernet_program, fld, std

A, B = 0xAA, 0xBB           # what states take_a and take_b write into the header they extract

# transition lists for state start (key: eth.type); None as next state is accept
CASES = {
    "default_first": [(None, None, "take_a"), (0x0800, None, None)],
    "two_defaults": [(None, None, "take_a"), (0x0800, None, None), (None, None, "take_b")],
    "default_middle": [(0x0800, None, "take_b"), (None, None, "take_a"), (0x0806, None, None)],
}
# ether type -> bytes after the Ethernet header, payload 01 02
EXPECTED = {
    "default_first": {0x0800: b"\x01\x02", 0x0806: bytes([A, 2]), 0x1234: bytes([A, 2])},
    "two_defaults": {0x0800: b"\x01\x02", 0x0806: bytes([B, 2]), 0x1234: bytes([B, 2])},
    "default_middle": {0x0800: bytes([B, 2]), 0x0806: b"\x01\x02", 0x1234: bytes([A, 2])},
}


def _program(transitions) -> dict:
    prog = ethernet_program()
    prog.header_type("h_t", [("x", 8)])
    prog.header("ha", "h_t")
    prog.header("hb", "h_t")
    prog.state("start", [prog.extract("eth")], key=[fld("eth", "type")], transitions=transitions)
    for name, header, mark in (("take_a", "ha", A), ("take_b", "hb", B)):
        prog.state(name, [prog.extract(header),
                          {"op": "set", "parameters": [fld(header, "x"), const(mark)]}])
    forward = prog.action("forward", [assign(std("egress_spec"), const(1))])
    prog.run("forward", forward)
    return prog.build()


@pytest.mark.parametrize("case", sorted(CASES))
def test_default_taken_only_when_nothing_else_matches(case, tmp_path):
    config = _program(CASES[case])
    frames = {t: eth_frame(ether_type=t, payload=b"\x01\x02") for t in EXPECTED[case]}
    sw = Switch(config)
    got = {t: sw.receive(0, frame) for t, frame in frames.items()}
    assert got == {t: [(1, frames[t][:14] + rest)] for t, rest in EXPECTED[case].items()}

    from p4switch.reference import find_toolchain, run_stf_bmv2
    toolchain = find_toolchain()
    if toolchain is None:
        return                       # the runtime's own expectations above still ran
    path = tmp_path / "prog.json"
    path.write_text(json.dumps(config))
    stf = "".join(f"packet 0 {frame.hex()}\n" for frame in frames.values())
    real = run_stf_bmv2(path, stf, toolchain=toolchain)
    assert real.error is None, real.error
    assert real.outputs == {1: [out[0][1] for out in got.values()]}
