"""A header ending in lane fields is laid out last (runtime/phv/layout.py); when its lanes are a
vector run, the untraced PHV ends with the run's slot (`engine.phv_length`): every packet
copies ~k slots fewer. Checked against the scalar code (outputs, registers) with the header
valid and invalid (multicast replicas zero invalid headers: `clear_invalid` on the short
PHV), and with packets waiting in an egress queue while a trace is attached or detached
(their PHV grows to the traced layout and back)."""

from __future__ import annotations

import random

import pytest

from p4switch.runtime import PacketTrace

from .bmv2 import assign, const, eth_frame, ethernet_program, fld, op, prim, std
from .test_lane_vectors import both, ex, same_state

L = 16
MASK = 0xFFFFFFFF


def _program() -> dict:
    """eth, then h {idx, out, a0..a15} when eth.type is 0x1234; every lane adds its register
    cell (out = the last old cell); multicast to group 1."""
    prog = ethernet_program()
    prog.header_type("h_t", [("idx", 8), ("out", 32)] + [(f"a{j}", 32) for j in range(L)])
    prog.header("h", "h_t")
    t = prog.scalar("t", 32)
    prog.state("start", [prog.extract("eth")], key=[fld("eth", "type")],
               transitions=[(0x1234, None, "parse_h"), (None, None, None)])
    prog.state("parse_h", [prog.extract("h")])
    regs = [prog.register(f"r{j}", 4, 32) for j in range(L)]
    idx = fld("h", "idx")
    prims = []
    for j in range(L):
        a = fld("h", f"a{j}")
        prims += [prim("register_read", t, regs[j], idx),
                  assign(a, ex(op("&", op("+", a, t), const(MASK)))),
                  prim("register_write", regs[j], idx, a)]
    prims += [assign(fld("h", "out"), t), assign(std("mcast_grp"), const(1))]
    prog.run("lanes", prog.action("lanes", prims))
    return prog.build()


def _frames(seed: int, count: int) -> list[bytes]:
    rng = random.Random(seed)
    frames = []
    for _ in range(count):
        if rng.random() < 0.3:
            frames.append(eth_frame(ether_type=0x0800, payload=bytes(30)))
            continue
        body = bytes([rng.choice([0, 1, 3, 9])]) + bytes(4) + b"".join(
            rng.getrandbits(32).to_bytes(4, "big") for _ in range(L))
        frames.append(eth_frame(ether_type=0x1234, payload=body + b"tail"))
    return frames


def _configured():
    fast, plain = both(_program())
    for sw in (fast, plain):
        sw.mc_group_set(1, [(1, 0), (2, 1)])
    return fast, plain


def test_untraced_phv_ends_at_the_vector_run():
    fast, plain = _configured()
    [run] = [r for runs in fast.program.vector_runs.values() for r in runs]
    layout = fast.program.layout
    assert run.first + run.count == layout.num_slots          # the header is laid out last
    assert len(fast._engine.init_fields) == run.first + 1
    assert len(plain._engine.init_fields) == layout.num_slots
    for n, frame in enumerate(_frames(3, 200)):
        got = fast.receive(3, frame)
        assert got == plain.receive(3, frame), f"packet {n}"
        assert len(got) == 2
    same_state(fast, plain)


@pytest.mark.parametrize("attach", [True, False], ids=["attach-trace", "detach-trace"])
def test_queued_short_phvs_survive_a_trace_switch(attach):
    outs = []
    for sw in _configured():
        now = [0.0]
        sw.clock = lambda: now[0]
        if not attach:
            sw.trace = PacketTrace()
        sw.set_queue_rate(1, 1)
        got = [sw.receive(3, frame) for frame in _frames(5, 6)]
        assert sw.queues.waiting > 0
        sw.trace = PacketTrace() if attach else None
        now[0] = 100.0
        outs.append((got, sw.release_queued()))
    assert outs[0] == outs[1]
