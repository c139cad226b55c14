"""Lane groups next to look-alike statements, and accumulators (runtime/pygen/lanegroups.py,
lanes.py).

Regressions from ina.p4's block exponent and packed formats (issue 15), which cost ina.p4 its
vector code (k = 256: ~9 -> ~75 µs per contribution in-process):
- a statement copy shaped like a lane just before the lanes (the exponent's read-max-write)
  made the longest run start one copy early or mid-copy, and the whole run was refused;
- with p4c's JSON that copy is a jump diamond outside every group, and one jump outside the
  groups sent the whole action to the scalar jump loop;
- the packed add ORs every lane's overflow bits into one field (an accumulator), which the
  independence check refused, and its scalar code then blocked vector headers for all actions.
Each program runs vectorised and scalar on the same packets (outputs and registers equal).
"""

from __future__ import annotations

import json
import random
from pathlib import Path

import pytest

from p4switch.compiler import compile_file
from p4switch.runtime import ExactKey, Switch
from tests.ina.packets import CONTRIB, Endpoint, ina_packet, ip

from .bmv2 import assign, const, eth_frame, ethernet_program, fld, op, prim, std
from .test_lane_vectors import L, _add_scalar, _compare, _frames, _program, both, ex, same_state
from .bmv2_agreement import assert_agrees_with_simple_switch

ROOT = Path(__file__).resolve().parents[2]
MASK = 0xFFFFFFFF


def _add_lane(j, regs, t, idx):
    a = fld("h", f"a{j}")
    return [prim("register_read", t, regs[j], idx),
            assign(a, ex(op("&", op("+", a, t), const(MASK)))),
            prim("register_write", regs[j], idx, a)]


def test_lookalike_copy_before_the_lanes():
    """Lane 0 reads through its own scratch field: 17 copies of one shape, 16 lanes."""
    def lane(j, regs, t, idx):
        return _add_lane(j, regs, fld("scalars", "m") if j == 0 else t, idx)
    program = _program(lane, lanes_n=L + 1)
    _add_scalar(program, "m", 32)
    _compare(program, True, lanes_n=L + 1)


def test_lookalike_copy_makes_the_run_start_mid_copy():
    """Copy 0 combines with xor, the lanes add: the longest run of one shape starts at copy
    0's register write (ina.p4's `ina_add` after its exponent max)."""
    def lane(j, regs, t, idx):
        if j > 0:
            return _add_lane(j, regs, t, idx)
        m, a = fld("scalars", "m"), fld("h", "a0")
        return [prim("register_read", m, regs[0], idx), assign(a, ex(op("^", a, m))),
                prim("register_write", regs[0], idx, a)]
    program = _program(lane, lanes_n=L + 1)
    _add_scalar(program, "m", 32)
    _compare(program, True, lanes_n=L + 1)


def _diamond(j, regs, scratch, idx, base):
    """p4c's `a = r > a ? r : a` as _jump_if_zero / assign / _jump / assign."""
    a, t = fld("h", f"a{j}"), fld("scalars", "t")
    return [prim("register_read", t, regs[j], idx),
            prim("_jump_if_zero", ex(op("b2d", None, op(">", t, a))), const(base + 4)),
            assign(scratch, t),
            prim("_jump", const(base + 5)),
            assign(scratch, a),
            assign(a, scratch),
            prim("register_write", regs[j], idx, a)]


def test_jump_diamond_outside_the_lanes_keeps_their_vector_code():
    """p4c's shape: copy 0 is a jump diamond of its own scratch; it runs as a jump loop, the
    16 lanes after it as numpy code."""
    def lane(j, regs, t, idx):
        return _diamond(j, regs, fld("scalars", "m0" if j == 0 else "m"), idx, j * 7)
    program = _program(lane, lanes_n=L + 1)
    _add_scalar(program, "m", 32)
    _add_scalar(program, "m0", 32)
    fast, _ = _compare(program, True, lanes_n=L + 1)
    source = fast.program.untraced.source
    assert "_np_where" in source and "while True:" in source


# ---------------------------------------------------------------------------- accumulators
def _accumulating_program(operator: str, read_elsewhere: bool = False) -> dict:
    """Lane j: t = r_j[idx]; s = (t & ~a_j) + a_j; acc = acc op (s ^ t); a_j = s; r_j = s.
    acc starts as h.a31, h.out = acc at the end. With `read_elsewhere`, the copy also stores acc in the register."""
    prog = ethernet_program()
    prog.header_type("h_t", [("idx", 8)] + [(f"a{j}", 32, False) for j in range(2 * L)]
                     + [("out", 32)])
    prog.header("h", "h_t")
    t, s, acc = prog.scalar("t", 32), prog.scalar("s", 32), prog.scalar("acc", 32)
    prog.state("start", [prog.extract("eth"), prog.extract("h")])
    regs = [prog.register(f"r{j}", 4, 32) for j in range(L)]
    idx = fld("h", "idx")
    prims = [assign(acc, fld("h", f"a{2 * L - 1}"))]      # not a lane field
    for j in range(L):
        a = fld("h", f"a{j}")
        prims += [prim("register_read", t, regs[j], idx),
                  assign(s, ex(op("&", op("+", op("&", t, op("^", a, const(MASK))), a),
                                  const(MASK)))),
                  assign(acc, ex(op(operator, acc, op("^", s, t)))),
                  assign(a, s),
                  prim("register_write", regs[j], idx, acc if read_elsewhere else s)]
    prims += [assign(fld("h", "out"), acc), assign(std("egress_spec"), const(1))]
    prog.run("lanes", prog.action("lanes", prims))
    return prog.build()


@pytest.mark.parametrize("operator", ["|", "&", "^"])
def test_accumulator_is_reduced(operator):
    fast, outs = _compare(_accumulating_program(operator), True)
    source = fast.program.untraced.source
    assert {"|": "_np_or_reduce", "&": "_np_and_reduce", "^": "_np_xor_reduce"}[operator] \
        in source
    if operator != "&":      # an and of 16 mixed values is nearly always 0
        assert len({data[-4:] for out in outs for _, data in out}) > 5   # acc really varies


def test_accumulator_read_elsewhere_stays_scalar():
    _compare(_accumulating_program("|", read_elsewhere=True), False)


@pytest.mark.skipif(not Path("/opt/p4ref/bin/simple_switch").exists(),
                    reason="needs real simple_switch (/opt/p4ref)")
@pytest.mark.parametrize("operator", ["|", "^"])
def test_accumulator_agrees_with_simple_switch(operator, tmp_path):
    program = _accumulating_program(operator)
    fast = Switch(program)
    assert "_np_" in fast.program.untraced.source
    frames = _frames(5, 24)
    assert_agrees_with_simple_switch(program, fast, frames, tmp_path)


# ---------------------------------------------------------------------------- ina.p4 formats
K, N, JOB = 32, 3, 1
AGG = Endpoint(0x000000000100, ip("10.0.0.254"))
HOSTS = [Endpoint(0x080000000000 | (w + 1), ip(f"10.0.{w + 1}.1")) for w in range(N)]
FLAGS_OFFSET = 14 + 20 + 8 + 1
FORMATS = (0x00, 0x04, 0x08)       # int32, int16 x2, int8 x4 per lane (flags bits 2-3)


def _ina_switches(program: dict) -> tuple[Switch, Switch]:
    fast, plain = both(program)
    for sw in (fast, plain):
        sw.table_add("ina_aggregator_addresses", [ExactKey(AGG.addr)], "ina_aggregate_here")
        sw.table_add("ina_jobs", [ExactKey(AGG.addr), ExactKey(JOB)], "ina_root_job",
                     (0, 8, N, JOB, N))
        for w in range(N):
            sw.table_add("ina_workers", [ExactKey(JOB), ExactKey(w)], "ina_worker_port",
                         (w + 1,))
            sw.table_add("ina_result_addresses", [ExactKey(JOB), ExactKey(w)],
                         "ina_address_result", (HOSTS[w].mac, HOSTS[w].addr))
        sw.mc_group_set(JOB, [(w + 1, w) for w in range(N)])
    return fast, plain


def _run_formats(program: dict) -> Switch:
    fast, plain = _ina_switches(program)
    source = fast.program.untraced.source
    assert "_np_or_reduce" in source and "_vh" in source     # packed add and vector header
    rng = random.Random(7)
    outputs = 0
    for n in range(400):
        w, slot = rng.randrange(N), rng.randrange(8)
        values = [rng.getrandbits(32) if rng.random() < 0.5 else rng.randrange(-3, 3) & MASK
                  for _ in range(K)]
        frame = bytearray(ina_packet(HOSTS[w], AGG, kind=CONTRIB, job=JOB, worker=w, slot=slot,
                                     ver=rng.randrange(2), values=values))
        frame[FLAGS_OFFSET] |= rng.choice(FORMATS)
        got = fast.receive(w + 1, bytes(frame))
        assert got == plain.receive(w + 1, bytes(frame)), f"packet {n}"
        outputs += len(got)
    assert outputs > 50
    same_state(fast, plain)
    return fast


def test_ina_packed_formats_vector_equals_scalar():
    _run_formats(compile_file(str(ROOT / "p4src" / "ina.p4"), defines={"INA_K": str(K)}).bmv2)


@pytest.mark.skipif(not Path("/opt/p4ref/bin/p4c-bm2-ss").exists(),
                    reason="needs real p4c (/opt/p4ref)")
def test_ina_packed_formats_p4c_json_vector_equals_scalar():
    from p4switch.reference import compile_p4, find_toolchain
    result = compile_p4(find_toolchain(), ROOT / "p4src" / "ina.p4",
                        defines={"INA_K": str(K)}, p4runtime=False)
    assert result.ok, result.stderr
    fast = _run_formats(json.loads(result.json_path.read_text()))
    assert "while True:" in fast.program.untraced.source   # the exponent's diamond
