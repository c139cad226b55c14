"""The shapes of lane code that keep numpy's per-call cost down (runtime/pygen/lanes.py), each
against the scalar code of the same program (outputs and registers equal):

- a select of a comparison's two sides is one `maximum`/`minimum` call (4 orientations);
- constant operands next to vectors are read-only 0-d arrays (`_lc...`), which numpy 2
  combines ~0.25 µs faster per call than Python ints; shared code keeps them;
- a bank row read is not copied when all that is used of it after the bank write is its last
  lane (a shared scratch field's final value): that lane is read before the write;
- a vector run zeroed by setValid (the int 0) compared with a constant and turned into data
  (b2d): the comparison was a Python bool, which has no `.astype` (AttributeError).
"""

from __future__ import annotations

import pytest

from p4switch.runtime import Switch
from p4switch.runtime.share import codeshare

from .bmv2 import assign, const, eth_frame, fld, hdr, op, prim
from .test_lane_vectors import L, _compare, _frames, _program, both, ex, same_state

MASK = 0xFFFFFFFF


@pytest.mark.parametrize("relation,then_a,expected", [
    (">", True, "_np_maximum"), (">=", False, "_np_minimum"),
    ("<", True, "_np_minimum"), ("<=", False, "_np_maximum")])
def test_select_of_a_comparison_is_max_or_min(relation, then_a, expected):
    """a_j = (a_j REL t) ? (a_j : t) : (t : a_j); r_j = a_j."""
    def lane(j, regs, t, idx):
        a = fld("h", f"a{j}")
        picked = (a, t) if then_a else (t, a)
        return [prim("register_read", t, regs[j], idx),
                assign(a, op("?", picked[0], picked[1], op(relation, a, t))),
                prim("register_write", regs[j], idx, a)]
    fast, _ = _compare(_program(lane), True)
    assert expected in fast.program.untraced.source


def test_constant_operands_are_shared_read_only_arrays():
    """Shifts, signed wrap-around, comparisons with constants, masks: one 0-d array per
    constant; two switches of the same JSON share the code (nothing refused)."""
    def lane(j, regs, t, idx):
        a, b = fld("h", f"a{j}"), fld("h", f"b{j}")
        return [prim("register_read", t, regs[j], idx),
                assign(a, op("two_comp_mod", op("+", op("<<", a, const(3)), t), const(16))),
                assign(b, ex(op("b2d", None, op(">", b, const(0x7FFF))))),
                prim("register_write", regs[j], idx, op("&", op("-", t, const(5)),
                                                        const(0xFFFF)))]
    program = _program(lane, width=16, signed=True, reg_width=16, scratch_width=16)
    fast, _ = _compare(program, True, width=16)
    source = fast.program.untraced.source
    assert "_lc3" in source and "_lc32768" in source and "_lc65535" in source
    constant = fast.program.untraced.namespace["_lc65535"]
    assert constant.ndim == 0 and not constant.flags.writeable
    codeshare.REFUSED.clear()
    first, second = Switch(program), Switch(program)
    assert not codeshare.REFUSED
    frames = _frames(7, 40, 16)
    assert [first.receive(0, x) for x in frames] == [second.receive(0, x) for x in frames]


def test_last_lane_read_before_the_bank_write_instead_of_a_copy():
    """ina.p4's add: t = r_j; a_j = a_j + t; r_j = a_j; the scratch t ends as the last
    lane's old cell, which `out` shows."""
    def lane(j, regs, t, idx):
        a = fld("h", f"a{j}")
        return [prim("register_read", t, regs[j], idx),
                assign(a, ex(op("&", op("+", a, t), const(MASK)))),
                prim("register_write", regs[j], idx, a)]
    fast, outs = _compare(_program(lane), True)
    source = fast.program.untraced.source
    assert ".copy()" not in source and "_last = " in source
    scratch = [int.from_bytes(out[0][1][-4:], "big") for out in outs if out]
    assert any(scratch)                  # the old cells came out through the scratch field


def test_zeroed_vector_run_compared_with_a_constant():
    """setValid(h2) zeroes h2's lanes (the int 0 in the PHV), then c_j = b2d(c_j > 5) and
    the register gets it: a Python bool came out of the comparison and `.astype` failed."""
    program = _program(lambda j, regs, t, idx: [])
    h2_fields = [[f"c{j}", 32, False] for j in range(L)]
    program["header_types"].append({"name": "h2_t", "id": len(program["header_types"]),
                                    "fields": h2_fields})
    program["headers"].append({"name": "h2", "id": len(program["headers"]),
                               "header_type": "h2_t", "metadata": False})
    program["deparsers"][0]["order"].append("h2")
    prims = [prim("add_header", hdr("h2"))]
    action = program["actions"][0]
    registers = [{"type": "register_array", "value": r["name"]}
                 for r in program["register_arrays"]]
    for j in range(L):
        c = fld("h2", f"c{j}")
        prims += [assign(c, ex(op("b2d", None, op(">", c, const(5))))),
                  prim("register_write", registers[j], fld("h", "idx"), c)]
    action["primitives"] = prims + action["primitives"]
    fast, plain = both(program)
    assert "_vh" in fast.program.untraced.source
    for n, frame in enumerate(_frames(11, 30)):
        got = fast.receive(0, frame)
        assert got == plain.receive(0, frame), f"packet {n}"
        assert got and len(got[0][1]) == len(frame) + 4 * L
    same_state(fast, plain)


def test_helpers_exist():
    """The names the generated code uses are bound in every program's namespace."""
    fast, _ = both(_program(lambda j, regs, t, idx: [
        prim("register_read", t, regs[j], idx),
        assign(fld("h", f"a{j}"), op("?", fld("h", f"a{j}"), t,
                                     op(">", fld("h", f"a{j}"), t)))]))
    namespace = fast.program.untraced.namespace
    assert "_np_maximum" in namespace and "_np_minimum" in namespace
    frame = eth_frame(ether_type=0x1234, payload=bytes(1 + 8 * L + 4))
    assert fast.receive(0, frame)
