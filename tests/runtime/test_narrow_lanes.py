"""Narrow lanes (lanes.py): banks and vector runs held as native uint<W> where every lane
group computes modulo 2**W, int64 wherever some group needs exact values. Each program runs
vectorised and scalar on the same packets (outputs and every register must agree); the
dtypes chosen are checked too, so a change that silently went back to int64 (or made a
program narrow that needs exact sums) shows."""

from __future__ import annotations

import random
import re
from pathlib import Path

import numpy as np
import pytest

from p4switch.runtime import Switch

from .bmv2 import assign, const, eth_frame, fld, op, prim
from .test_lane_vectors import L, _compare, _frames, _program, both, ex, same_state
from .bmv2_agreement import assert_agrees_with_simple_switch


def _bank_dtype(switch: Switch, register: str = "r0") -> np.dtype:
    return switch.program.registers[register].cells.array.dtype


def _run_narrow(switch: Switch) -> bool:
    return any(run.narrow for runs in switch.program.vector_runs.values() for run in runs)


def _add_lane(width: int):
    mask = (1 << width) - 1

    def lane(j, regs, t, idx):
        a = fld("h", f"a{j}")
        return [prim("register_read", t, regs[j], idx),
                assign(a, ex(op("&", op("+", a, t), const(mask)))),
                prim("register_write", regs[j], idx, a)]
    return lane


@pytest.mark.parametrize("width", [8, 16, 32])
def test_modular_add_runs_in_the_lanes_own_width(width):
    """ina.p4's shape (read, add, mask, write): uint<width> bank and run, no mask, no int64
    conversion at parse."""
    fast, _ = _compare(_program(_add_lane(width), width=width, scratch_width=width), True,
                       width=width)
    assert _bank_dtype(fast) == np.dtype(f"uint{width}")
    assert _run_narrow(fast)
    source = fast.program.untraced.source
    assert "astype(_np_int64)" not in source.split("def ingress")[0]    # the parser
    assert re.search(r"_vv_t\d+ = \(f\[_vh\d+\] \+ _vv_t\d+\)\n", source)   # no mask
    assert "_lc" not in source


def test_wrapping_operations_stay_narrow():
    """- ~ * << wrap modulo 2**32 and are masked before they are stored: uint32 gives the
    stored values exactly."""
    def lane(j, regs, t, idx):
        a, b = fld("h", f"a{j}"), fld("h", f"b{j}")
        m = const(0xFFFFFFFF)
        return [prim("register_read", t, regs[j], idx),
                assign(b, ex(op("&", op("-", t, a), m))),
                prim("register_write", regs[j], idx,
                     ex(op("&", op("+", op("~", None, a), op("<<", t, const(3))), m))),
                assign(t, ex(op("&", op("*", op("&", a, const(0xFFFF)), t), m))),
                assign(a, ex(op("^", b, op("&", op("+", a, t), const(0xFF00)))))]
    fast, _ = _compare(_program(lane), True)
    assert _bank_dtype(fast) == np.dtype(np.uint32)


def test_a_compared_sum_keeps_int64():
    """b = (a + t > 0xFFFFFFFF) ? 1 : 0 needs the sum's 33rd bit: the group must not wrap, so
    its bank and runs stay int64 (a uint32 add would always compare false)."""
    def lane(j, regs, t, idx):
        a, b = fld("h", f"a{j}"), fld("h", f"b{j}")
        carry = op(">", op("+", a, t), const(0xFFFFFFFF))
        return [prim("register_read", t, regs[j], idx),
                assign(b, ex(op("?", const(1), const(0), carry))),
                prim("register_write", regs[j], idx, ex(op("&", op("+", a, t),
                                                              const(0xFFFFFFFF))))]
    fast, outs = _compare(_program(lane), True)
    assert _bank_dtype(fast) == np.dtype(np.int64)
    assert not _run_narrow(fast)
    # a carry must have been seen somewhere, or the test proves nothing
    assert any(any(out[15 + 4 * (L + j):15 + 4 * (L + j) + 4] == bytes([0, 0, 0, 1])
                   for j in range(L)) for got in outs for _, out in got)


def test_a_shifted_down_sum_keeps_int64():
    """(a + t) >> 1 brings the carry into the value: exact values needed."""
    def lane(j, regs, t, idx):
        a = fld("h", f"a{j}")
        return [prim("register_read", t, regs[j], idx),
                assign(a, ex(op(">>", op("+", a, t), const(1)))),
                prim("register_write", regs[j], idx, a)]
    fast, _ = _compare(_program(lane), True)
    assert _bank_dtype(fast) == np.dtype(np.int64)


def test_a_maximum_of_wrapped_sums_keeps_int64():
    """max(a + t, t): a select of a comparison's sides over a wrapped sum."""
    def lane(j, regs, t, idx):
        a = fld("h", f"a{j}")
        s = op("&", op("+", a, t), const(0xFFFFFFFF))
        raw = op("+", a, t)
        return [prim("register_read", t, regs[j], idx),
                assign(a, ex(op("?", raw, t, op(">", raw, t)))),
                prim("register_write", regs[j], idx, ex(s))]
    fast, _ = _compare(_program(lane), True)
    assert _bank_dtype(fast) == np.dtype(np.int64)


def test_a_scalar_wider_than_the_lanes():
    """16-bit lanes plus a 32-bit header field: numpy must not cast the field to uint16
    (it raises for values that do not fit); the sum goes through int64, exact."""
    def lane(j, regs, t, idx):
        a = fld("h", f"a{j}")
        return [prim("register_read", t, regs[j], idx),
                assign(a, ex(op("&", op("+", op("+", a, t), fld("h", "out")),
                                const(0xFFFF)))),
                prim("register_write", regs[j], idx, a)]
    program = _program(lane, width=16, scratch_width=16)
    fast, plain = both(program)
    assert _bank_dtype(fast) == np.dtype(np.uint16)
    rng = random.Random(8)
    for n, frame in enumerate(_frames(4, 120, width=16)):
        frame = frame[:-4] + rng.choice([0x1FFFF, 0xFFFFFFFF, 5]).to_bytes(4, "big")
        assert fast.receive(0, frame) == plain.receive(0, frame), f"packet {n}"
    same_state(fast, plain)


def test_signed_lanes_keep_int64():
    def lane(j, regs, t, idx):
        a = fld("h", f"a{j}")
        return [prim("register_read", t, regs[j], idx),
                assign(a, op("two_comp_mod", op("+", a, t), const(16))),
                prim("register_write", regs[j], idx, a)]
    fast, _ = _compare(_program(lane, width=16, signed=True, reg_width=16, scratch_width=16),
                       True, width=16)
    assert not _run_narrow(fast)


def test_narrow_registers_through_the_register_api():
    fast, _ = both(_program(_add_lane(16), width=16, scratch_width=16))
    assert _bank_dtype(fast, "r2") == np.dtype(np.uint16)
    fast.register_write("r2", 1, 0xFFFF)
    assert fast.register_read("r2", 1) == 0xFFFF
    body = bytes([1]) + b"".join((3).to_bytes(2, "big") for _ in range(2 * L)) + bytes(4)
    [(_, out)] = fast.receive(0, eth_frame(ether_type=0x1234, payload=body))
    assert fast.register_read("r2", 1) == 2                      # 0xFFFF + 3 wraps
    assert out[15 + 4:15 + 6] == bytes([0, 2])
    assert all(isinstance(x, int) for x in fast.register_read_all("r2"))


@pytest.mark.skipif(not Path("/opt/p4ref/bin/simple_switch").exists(),
                    reason="needs real simple_switch (/opt/p4ref)")
@pytest.mark.parametrize("width", [8, 16])
def test_narrow_lanes_agree_with_simple_switch(width, tmp_path):
    import json

    program = _program(_add_lane(width), width=width, scratch_width=width)
    fast = Switch(program)
    assert _bank_dtype(fast) == np.dtype(f"uint{width}")
    frames = _frames(13, 24, width=width)
    assert_agrees_with_simple_switch(program, fast, frames, tmp_path)


def test_a_byte_sum_inside_a_32_bit_sum_keeps_its_carry():
    """(a + a) over 8-bit lanes wraps at 8 bits when computed narrow; added to a 32-bit
    register and masked to 32 bits it needs its 9th bit: the mask of a uint32 result must not
    be taken for 'exact' when a part of it wrapped narrower (the group stays int64)."""
    def lane(j, regs, t, idx):
        a = fld("h", f"a{j}")
        return [prim("register_read", t, regs[j], idx),
                prim("register_write", regs[j], idx,
                     ex(op("&", op("+", op("+", a, a), t), const(0xFFFFFFFF))))]
    fast, _ = _compare(_program(lane, width=8, reg_width=32, scratch_width=32), True, width=8)
    assert any(x > 0xFF for x in fast.register_read_all("r0"))
