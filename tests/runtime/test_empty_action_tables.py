"""A keyed table whose actions do nothing, without counters or meters (runtime/pygen/controlgen.py):
the generated code only looks it up to choose between hit and miss, or skips it when both
lead to the same node. Checked against the traced variant (which keeps the full lookup, action
dispatch and events) and against expected ports."""

from __future__ import annotations

from p4switch.runtime import ExactKey, PacketTrace, Switch

from .bmv2 import assign, const, eth_frame, ethernet_program, fld, std


def _program(hit_miss: bool) -> dict:
    prog = ethernet_program()
    prog.state("start", [prog.extract("eth")])
    noop_a, noop_b = prog.action("noop_a"), prog.action("noop_b")
    to1 = prog.action("to1", [assign(std("egress_spec"), const(1))])
    to2 = prog.action("to2", [assign(std("egress_spec"), const(2))])
    hit_node = prog.run("hit", to1)
    miss_node = prog.run("miss", to2)
    table = prog.table("known", keys=[("exact", ["eth", "dst"])], actions=[noop_a, noop_b],
                       default=noop_b)
    if hit_miss:
        table["next_tables"] = {"__HIT__": hit_node["name"], "__MISS__": miss_node["name"]}
    else:
        table["next_tables"] = {"noop_a": hit_node["name"], "noop_b": hit_node["name"]}
    prog.start("known")
    return prog.build()


def test_hit_or_miss_decides_the_next_node():
    for hit_miss in (True, False):
        fast, traced = Switch(_program(hit_miss)), Switch(_program(hit_miss))
        traced.trace = PacketTrace()
        for sw in (fast, traced):
            sw.table_add("known", [ExactKey(7)], "noop_a")
            sw.table_add("known", [ExactKey(9)], "noop_b")
        source = fast.program.untraced.source
        assert ("exact_" in source) == hit_miss          # no lookup when it cannot matter
        for dst, port in ((7, 1), (9, 1), (8, 2 if hit_miss else 1)):
            frame = eth_frame(dst=dst, payload=bytes(8))
            got = fast.receive(0, frame)
            assert got == traced.receive(0, frame)
            assert [p for p, _ in got] == [port]
