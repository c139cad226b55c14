"""Multicast replicas run one after another on the ingress PHV (fastpath.py): before each
replica the slots egress wrote are restored, but only those egress or the deparser may read
(and egress_spec); a slot egress only writes needs no restoring. Every replica must still see
ingress's values."""

from __future__ import annotations

from p4switch.runtime import Switch
from p4switch.runtime.pygen.fastpath import _multicast_source

from .bmv2 import assign, const, eth_frame, ethernet_program, fld, op, std


def _program():
    prog = ethernet_program()
    prog.header_type("tag_t", [("count", 8), ("rid", 8)])
    prog.header("tag", "tag_t")
    prog.scalar("keep", 8)
    prog.scalar("junk", 8)
    prog.state("start", [prog.extract("eth"), prog.extract("tag")])
    ing = prog.action("ing", [assign(fld("scalars", "keep"), const(5)),
                              assign(std("mcast_grp"), const(3))])
    prog.run("ing", ing)
    keep = fld("scalars", "keep")
    egr = prog.action("egr", [
        assign(keep, op("&", op("+", keep, std("egress_rid")), const(0xFF))),
        assign(fld("tag", "count"), keep),
        assign(fld("tag", "rid"), std("egress_rid")),
        assign(fld("scalars", "junk"), std("egress_rid"))])
    prog.run("egr", egr, pipeline="egress")
    return prog.build()


def test_every_replica_sees_ingress_values():
    sw = Switch(_program())
    sw.mc_group_set(3, [(1, 10), (2, 20), (4, 30)])
    frame = eth_frame(ether_type=0x1234, payload=bytes([0, 0]))
    for _ in range(2):
        out = sw.receive(0, frame)
        assert [(p, o[14], o[15]) for p, o in out] == [(1, 15, 10), (2, 25, 20), (4, 35, 30)]
    source = _multicast_source(sw._engine)
    slot = {name: s for name, s in ((n, sw.program.layout.field("scalars", n, None).slot)
                                     for n in ("keep", "junk"))}
    loop = source.split("for i,")[1]
    assert f"f[{slot['keep']}] = r" in loop
    assert f"f[{slot['junk']}] = r" not in loop
