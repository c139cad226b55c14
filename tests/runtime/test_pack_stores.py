"""Runs of stores of action data or constants into consecutive PHV slots become one slice
store (runtime/pygen/localize.py `pack_simple_stores`), in untraced action bodies only."""

from __future__ import annotations

from p4switch.runtime import ExactKey, PacketTrace, Switch
from p4switch.runtime.pygen.localize import pack_simple_stores

from .bmv2 import assign, const, eth_frame, ethernet_program, fld, param, std


def test_only_runs_of_three_consecutive_simple_stores():
    lines = ["f[7] = p[0]", "f[8] = p[1]", "f[9] = 0", "f[10] = -3", "x = 1",
             "f[20] = p[2]", "f[21] = p[3]", "f[23] = p[4]", "f[24] = 5", "f[25] = 6",
             "    f[30] = 1", "    f[31] = 2", "    f[32] = 3", "f[40] = f[39]", "f[41] = 1",
             "f[42] = p[0] & 255", "f[43] = 1"]
    assert pack_simple_stores(lines) == [
        "f[7:11] = (p[0], p[1], 0, -3,)", "x = 1", "f[20] = p[2]", "f[21] = p[3]",
        "f[23:26] = (p[4], 5, 6,)", "    f[30] = 1", "    f[31] = 2", "    f[32] = 3",
        "f[40] = f[39]", "f[41] = 1", "f[42] = p[0] & 255", "f[43] = 1"]


def test_packed_stores_match_the_traced_variant():
    prog = ethernet_program()
    prog.header_type("h_t", [("a", 8), ("b", 16), ("c", 32), ("d", 8)])
    prog.header("h", "h_t")
    prog.state("start", [prog.extract("eth"), prog.extract("h")])
    act = prog.action("fill", [assign(fld("h", "a"), param(0)), assign(fld("h", "b"), param(1)),
                               assign(fld("h", "c"), const(7)), assign(fld("h", "d"), param(2)),
                               assign(std("egress_spec"), const(1))],
                      params=[("x", 8), ("y", 16), ("z", 8)])
    prog.table("t", keys=[("exact", ["eth", "dst"])], actions=[act])
    doc = prog.build()
    fast, traced = Switch(doc), Switch(doc)
    traced.trace = PacketTrace()
    for sw in (fast, traced):
        sw.table_add("t", [ExactKey(2)], "fill", (0xAB, 0x1234, 0x5A))
    assert "f[" in fast.program.untraced.source and ":" in fast.program.untraced.source
    frame = eth_frame(payload=bytes(8) + b"tail")
    got = fast.receive(0, frame)
    assert got == traced.receive(0, frame)
    assert got[0][1][14:22] == bytes([0xAB, 0x12, 0x34, 0, 0, 0, 7, 0x5A])
