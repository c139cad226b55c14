"""Multicast replicas add the checksum terms egress cannot change once per packet
(runtime/pygen/deparsergen.py, calcgen.py): an IPv4-like header whose destination egress sets per
replica (rid), a second checksummed header that egress makes invalid on some replicas, and a
field the deparser itself writes. Every replica's bytes must be what the traced variant
(which computes each checksum whole, replica by replica) emits."""

from __future__ import annotations

import random

from p4switch.runtime import PacketTrace, Switch

from .bmv2 import assign, const, eth_frame, ethernet_program, fld, op, prim, std


def _program() -> dict:
    prog = ethernet_program()
    prog.header_type("ip_t", [("a", 4), ("b", 4), ("c", 8), ("len", 16), ("flags", 3),
                              ("frag", 13), ("csum", 16), ("src", 32), ("dst", 32)])
    prog.header("ip", "ip_t")
    prog.header_type("x_t", [("x", 16), ("y", 32)])
    prog.header("x", "x_t")
    prog.header_type("z_t", [("z", 32)])
    prog.header("z", "z_t")                 # nothing changes it: shared by the replicas
    prog.state("start", [prog.extract("eth"), prog.extract("ip"), prog.extract("x"),
                         prog.extract("z")])
    prog.run("to_group", prog.action("to_group", [assign(std("mcast_grp"), const(1))]))
    rid = std("egress_rid")
    prog.run("per_replica", prog.action("per_replica", [
        assign(fld("ip", "dst"), op("+", fld("ip", "dst"), rid)),
        assign(fld("eth", "type"), op("&", op("+", fld("eth", "type"), rid), const(0xFFFF)))]),
        pipeline="egress")
    egress = prog.doc["pipelines"][1]
    drop_x = prog.action("drop_x", [prim("remove_header", {"type": "header", "value": "x"})])
    prog.run("odd", drop_x, pipeline="egress")
    prog.conditional("odd_rid", op("==", op("&", rid, const(1)), const(1)), "odd", None,
                     pipeline="egress")
    egress["tables"][0]["base_default_next"] = "odd_rid"
    egress["tables"][0]["next_tables"] = {"per_replica": "odd_rid"}
    fields = [["ip", n] for n in ("a", "b", "c", "len", "flags", "frag", "src", "dst")] + \
        [["x", "x"], ["x", "y"]]
    prog.calculation("sum", "csum16", [{"type": "field", "value": v} for v in fields])
    prog.checksum("ip_csum", ["ip", "csum"], "sum", verify=False)
    return prog.build()


def test_replicas_match_the_traced_checksums():
    doc = _program()
    fast, traced = Switch(doc), Switch(doc)
    traced.trace = PacketTrace()
    for sw in (fast, traced):
        sw.mc_group_set(1, [(1, 0), (2, 1), (3, 2), (4, 3), (5, 0xFFFF)])
    source = fast.program.untraced.source
    assert "memo[" in source and "s += " in source        # the split sum is in use
    rng = random.Random(2)
    for n in range(60):
        body = bytes(rng.getrandbits(8) for _ in range(20 + 6 + 4))
        frame = eth_frame(ether_type=rng.choice([0x0800, 0xFFFF]), payload=body + b"pay")
        got = fast.receive(0, frame)
        assert got == traced.receive(0, frame), f"frame {n}"
        assert len({data for _, data in got}) == 5
