"""Parser edge cases where simple_switch's behaviour depends on the JSON form, checked against it.

A lookahead in a `transition_key` reads past the end of the packet as zeros (no error), while a
`set` from a lookahead raises PacketTooShort; each test also runs the same JSON on real
simple_switch when the reference toolchain is installed and requires the same packets.
"""

from __future__ import annotations

import json

import pytest

from p4switch.runtime import Switch

from .bmv2 import Bmv2Program, assign, const, eth_frame, ethernet_program, fld, std

PACKET_TOO_SHORT = 1


def _program(lookahead_as_key: bool) -> dict:
    """After eth, a 24-bit lookahead selects state `take` (extract h) on 0xAABB00."""
    prog = ethernet_program()
    prog.header_type("h_t", [("x", 8)])
    prog.header("h", "h_t")
    prog.header_type("meta_t", [("peek", 24)])
    prog.header("meta", "meta_t", metadata=True)
    look = {"type": "lookahead", "value": [0, 24]}
    if lookahead_as_key:
        prog.state("start", [prog.extract("eth")], key=[look],
                   transitions=[(0xAABB00, None, "take"), (None, None, None)])
    else:
        prog.state("start", [prog.extract("eth"),
                             {"op": "set", "parameters": [fld("meta", "peek"), look]}],
                   key=[fld("meta", "peek")],
                   transitions=[(0xAABB00, None, "take"), (None, None, None)])
    prog.state("take", [prog.extract("h")])
    report = prog.action("report", [assign(fld("eth", "type"), std("parser_error")),
                                    assign(std("egress_spec"), const(1))])
    prog.run("report", report)
    return prog.build()


def _outputs(config: dict, payloads: list[bytes]) -> list[bytes]:
    sw = Switch(config)
    return [sw.receive(0, eth_frame(payload=p))[0][1] for p in payloads]


def _same_on_simple_switch(config: dict, payloads: list[bytes], tmp_path) -> None:
    from p4switch.reference import find_toolchain, run_stf_bmv2
    toolchain = find_toolchain()
    if toolchain is None:
        return                       # the runtime's own expectations above still ran
    path = tmp_path / "prog.json"
    path.write_text(json.dumps(config))
    stf = "".join(f"packet 0 {eth_frame(payload=p).hex()}\n" for p in payloads)
    real = run_stf_bmv2(path, stf, toolchain=toolchain)
    assert real.error is None, real.error
    assert real.outputs == {1: _outputs(config, payloads)}


PAYLOADS = [b"\xAA\xBB", b"\xAA", b"\xAA\xBB\x00", b""]


def test_lookahead_key_past_the_end_reads_zeros_without_error(tmp_path) -> None:
    config = _program(lookahead_as_key=True)
    outs = _outputs(config, PAYLOADS)
    assert outs[0][12:14] == b"\x00\x00" and outs[0][14:] == b"\xAA\xBB"    # took `take`
    assert outs[1][12:14] == b"\x00\x00" and outs[1][14:] == b"\xAA"        # AA0000: default
    assert outs[2][12:14] == b"\x00\x00"
    assert outs[3][12:14] == b"\x00\x00"
    _same_on_simple_switch(config, PAYLOADS, tmp_path)


@pytest.mark.parametrize("payload", [b"\xAA\xBB", b""])
def test_lookahead_into_a_field_past_the_end_is_packet_too_short(payload, tmp_path) -> None:
    config = _program(lookahead_as_key=False)
    [out] = _outputs(config, [payload])
    assert out[12:14] == PACKET_TOO_SHORT.to_bytes(2, "big") and out[14:] == payload
    _same_on_simple_switch(config, [payload], tmp_path)
