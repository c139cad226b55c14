"""The `exit` primitive marks the packet; simple_switch still runs the rest of the action and
ends the control after the table (runtime_bugs.md #2). Hand-written JSON (p4c and inaemu's
compiler follow an `exit` by a `_jump` to the action's end); each case also runs on real
simple_switch when it is installed and must give the same packets."""

from __future__ import annotations

import json

import pytest

from p4switch.runtime import Switch

from .bmv2 import Bmv2Program, assign, const, fld, op, prim, std

SET_B, SET_C = assign(fld("h", "b"), const(1)), assign(fld("h", "c"), const(2))
BODIES = {
    # b = 1; exit; c = 2
    "straight": [SET_B, prim("exit"), SET_C],
    # the same with a jump-based body (an `if (h.a != 0)` around the exit)
    "with_jumps": [SET_B,
                   prim("_jump_if_zero", {"type": "expression",
                                          "value": op("b2d", None,
                                                      op("!=", fld("h", "a"), const(0)))},
                        {"type": "hexstr", "value": "0x4"}),  # index in act
                   prim("exit"), SET_C],
}


def _program(body) -> dict:
    prog = Bmv2Program()
    prog.header_type("h_t", [("a", 8), ("b", 8), ("c", 8), ("d", 8)])
    prog.header("h", "h_t")
    prog.state("start", [prog.extract("h")])
    prog.doc["deparsers"][0]["order"] = ["h"]
    later = prog.action("later", [assign(fld("h", "d"), const(3))])
    act = prog.action("act", [assign(std("egress_spec"), const(1))] + body)
    prog.run("t_act", act, next_node="t_later")
    prog.run("t_later", later)
    return prog.build()


@pytest.mark.parametrize("body, packet, out", [
    ("straight", "00000000", "00010200"),       # c still set; t_later skipped
    ("with_jumps", "05000000", "05010200"),     # exit taken: c set, t_later skipped
    ("with_jumps", "00000000", "00010203"),     # exit jumped over: d set by t_later
])
def test_exit_runs_the_rest_of_the_action(body, packet, out, tmp_path):
    config = _program(BODIES[body])
    assert Switch(config).receive(0, bytes.fromhex(packet)) == [(1, bytes.fromhex(out))]

    from p4switch.reference import find_toolchain, run_stf_bmv2
    toolchain = find_toolchain()
    if toolchain is None:
        return                       # the runtime's own expectations above still ran
    path = tmp_path / "prog.json"
    path.write_text(json.dumps(config))
    real = run_stf_bmv2(path, f"packet 0 {packet}\n", toolchain=toolchain)
    assert real.error is None, real.error
    assert real.outputs == {1: [bytes.fromhex(out)]}
