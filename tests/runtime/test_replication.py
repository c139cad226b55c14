"""The packet replication engine: multicast, clones, resubmit, recirculation, instance types."""

from __future__ import annotations

import pytest

from p4switch.runtime import AlreadyExists, InvalidArgument, NotFound, Switch

from .bmv2 import Bmv2Program, assign, const, eth_frame, ethernet_program, fld, op, prim, std

NORMAL, I2E, E2E, REPLICATION = 0, 1, 2, 5


def _program(ingress_prims, egress_prims=(), field_lists=()) -> Bmv2Program:
    """eth + tag{itype, rid, count: 8 bits each}; ingress and egress each run one action.

    Egress always writes the instance type and rid it sees into the tag."""
    prog = ethernet_program()
    prog.header_type("tag_t", [("itype", 8), ("rid", 8), ("count", 8)])
    prog.header("tag", "tag_t")
    prog.scalar("keep", 8)
    for fid, fields in field_lists:
        prog.field_list(fid, fields)
    prog.state("start", [prog.extract("eth"), prog.extract("tag")])
    ing = prog.action("ing", list(ingress_prims))
    prog.run("ing", ing)
    egr = prog.action("egr", [assign(fld("tag", "itype"), std("instance_type")),
                              assign(fld("tag", "rid"), std("egress_rid"))] +
                      list(egress_prims))
    prog.run("egr", egr, pipeline="egress")
    return prog


def _frame(count=0) -> bytes:
    return eth_frame(ether_type=0x1234, payload=bytes([0, 0, count]))


def _tag(out: bytes) -> tuple[int, int, int]:
    return out[14], out[15], out[16]


def test_multicast_replicas_carry_rid_and_instance_type():
    sw = Switch(_program([assign(std("mcast_grp"), const(3))]).build())
    assert sw.receive(0, _frame()) == []          # unknown group: no copies
    sw.mc_group_create(3)
    n1 = sw.mc_node_create(10, [1, 2])
    n2 = sw.mc_node_create(20, [5])
    sw.mc_node_associate(3, n1)
    sw.mc_node_associate(3, n2)
    out = sw.receive(0, _frame())
    assert [(p, _tag(o)) for p, o in out] == [(1, (REPLICATION, 10, 0)),
                                              (2, (REPLICATION, 10, 0)),
                                              (5, (REPLICATION, 20, 0))]
    sw.mc_node_dissociate(3, n1)
    assert [p for p, _ in sw.receive(0, _frame())] == [5]
    sw.mc_group_set(3, [(7, 1), (8, 2)])
    assert sw.mc_group_get(3) == [(7, 1), (8, 2)]
    assert [(p, _tag(o)[1]) for p, o in sw.receive(0, _frame())] == [(7, 1), (8, 2)]
    with pytest.raises(AlreadyExists):
        sw.mc_group_create(3)
    with pytest.raises(InvalidArgument):
        sw.mc_node_create(1, [512])
    sw.mc_group_delete(3)
    assert sw.mc_groups() == [] and sw.receive(0, _frame()) == []


def test_a_group_set_and_removed_leaves_no_node_behind():
    """P4Runtime's view: a group owns its replicas' nodes. Removing it destroys them (BMv2's
    group delete keeps nodes, whose handles only `group_set` knew: a controller adding and
    removing jobs collected them, 4 per job, found by the soak)."""
    sw = Switch(_program([assign(std("mcast_grp"), const(3))]).build())
    for rids in ([(1, 1), (2, 1)], [(3, 2)], [(4, 1), (5, 2), (6, 3)]) * 10:
        sw.mc_group_set(3, rids)
        sw.mc_group_remove(3)
    assert sw.pre.nodes == {} and sw.mc_groups() == [] and sw.receive(0, _frame()) == []
    kept = sw.mc_node_create(1, [4])             # BMv2's delete: the node stays, ungrouped
    sw.mc_group_create(4)
    sw.mc_node_associate(4, kept)
    sw.mc_group_delete(4)
    assert list(sw.pre.nodes) == [kept] and sw.pre.nodes[kept].group is None
    with pytest.raises(NotFound):
        sw.mc_group_remove(4)


def test_multicast_to_the_drop_port_emits_nothing_there():
    sw = Switch(_program([assign(std("mcast_grp"), const(1))]).build())
    sw.mc_group_set(1, [(511, 0), (4, 0)])
    assert [p for p, _ in sw.receive(0, _frame())] == [4]


def test_ingress_clone_is_the_packet_as_received_with_field_list():
    prims = [assign(fld("tag", "count"), const(0x55)),        # modifies the original only
             assign(fld("scalars", "keep"), const(9)),
             assign(std("egress_spec"), const(1)),
             prim("clone_ingress_pkt_to_egress", const(4), const(1))]
    egress = [assign(fld("eth", "type"), fld("scalars", "keep"))]
    sw = Switch(_program(prims, egress, field_lists=[(1, [("scalars", "keep")])]).build())
    assert [p for p, _ in sw.receive(0, _frame(count=7))] == [1]   # no session: no clone
    sw.mirroring_add(4, port=6)
    out = sw.receive(0, _frame(count=7))
    assert [p for p, _ in out] == [6, 1]                 # the clone is queued first
    clone, original = out[0][1], out[1][1]
    assert _tag(clone) == (I2E, 0, 7) and clone[12:14] == b"\x00\x09"
    assert _tag(original) == (NORMAL, 0, 0x55)
    assert sw.mirroring_get(4) == {"port": 6, "mgid": None}
    sw.mirroring_delete(4)
    with pytest.raises(NotFound):
        sw.mirroring_delete(4)


def test_clone_to_multicast_session():
    prims = [prim("mark_to_drop", {"type": "header", "value": "standard_metadata"}),
             prim("clone_ingress_pkt_to_egress", const(2))]
    sw = Switch(_program(prims).build())
    sw.mc_group_set(9, [(3, 30), (4, 40)])
    sw.mirroring_add(2, mgid=9)
    out = sw.receive(0, _frame())
    assert [(p, _tag(o)) for p, o in out] == [(3, (I2E, 30, 0)), (4, (I2E, 40, 0))]


def test_egress_clone_carries_egress_changes_and_runs_egress_again():
    egress = [assign(fld("tag", "count"), op("&", op("+", fld("tag", "count"), const(1)),
                                             const(0xFF))),
              prim("clone_egress_pkt_to_egress", const(5))]
    prog = _program([assign(std("egress_spec"), const(1))], egress)
    # only clone from the normal packet, or it would clone forever
    prog.doc["actions"][-1]["primitives"][-1] = prim("clone_egress_pkt_to_egress", op(
        "?", const(5), const(6), op("==", std("instance_type"), const(NORMAL))))
    sw = Switch(prog.build())
    sw.mirroring_add(5, port=2)
    out = dict(sw.receive(0, _frame(count=1)))
    assert _tag(out[1]) == (NORMAL, 0, 2)
    assert _tag(out[2]) == (E2E, 0, 3)   # cloned after egress's +1, then +1 again


def test_resubmit_runs_ingress_again_with_original_bytes_and_field_list():
    prims = [assign(fld("tag", "count"), const(0xAA)),
             assign(std("egress_spec"), const(1)),
             assign(fld("eth", "type"), fld("scalars", "keep")),
             assign(fld("scalars", "keep"), op("&", op("+", fld("scalars", "keep"), const(1)),
                                              const(0xFF)))]
    prog = _program(prims, field_lists=[(1, [("scalars", "keep")])])
    resubmit = prog.action("again", [prim("resubmit", const(1))])
    prog.doc["pipelines"][0]["tables"][0]["next_tables"] = {"ing": "check"}
    prog.doc["pipelines"][0]["tables"][0]["base_default_next"] = "check"
    prog.conditional("check", op("==", std("instance_type"), const(NORMAL)), "again", None)
    prog.run("again", resubmit)
    sw = Switch(prog.build())
    [(port, out)] = sw.receive(0, _frame(count=3))
    assert port == 1
    assert out[12:14] == b"\x00\x01"          # keep was 1 after the first pass, preserved
    # as in BMv2, a unicast packet is NORMAL in egress, whatever ingress pass it came from
    assert _tag(out) == (NORMAL, 0, 0xAA)


def test_recirculate_feeds_deparsed_packet_back_with_field_list():
    ingress = [assign(fld("tag", "count"), op("&", op("+", fld("tag", "count"), const(1)),
                                              const(0xFF))),
               assign(std("egress_spec"), const(2))]
    prog = _program(ingress)
    again = prog.action("again", [prim("recirculate", const(0))])
    prog.doc["pipelines"][1]["tables"][0]["next_tables"] = {"egr": "more"}
    prog.conditional("more", op("<", fld("tag", "count"), const(3)), "again", None,
                     pipeline="egress")
    prog.run("again", again, pipeline="egress")
    prog.field_list(0, [])
    sw = Switch(prog.build())
    [(port, out)] = sw.receive(0, _frame(count=0))
    assert port == 2 and _tag(out) == (NORMAL, 0, 3)   # three ingress passes


def test_endless_recirculation_is_cut_off():
    prog = _program([assign(std("egress_spec"), const(2))], [prim("recirculate")])
    assert Switch(prog.build()).receive(0, _frame()) == []


def test_timestamps_and_packet_length_are_set():
    prog = ethernet_program()
    prog.header_type("ts_t", [("ing", 48), ("egr", 48), ("len", 32)])
    prog.header("ts", "ts_t")
    prog.state("start", [prog.extract("eth"), prog.extract("ts")])
    ing = prog.action("ing", [assign(fld("ts", "ing"), std("ingress_global_timestamp")),
                              assign(fld("ts", "len"), std("packet_length")),
                              assign(std("egress_spec"), const(1))])
    egr = prog.action("egr", [assign(fld("ts", "egr"), std("egress_global_timestamp"))])
    prog.run("ing", ing)
    prog.run("egr", egr, pipeline="egress")
    sw = Switch(prog.build())
    now = [10.0]
    sw.clock = lambda: now[0]
    now[0] = 10.5
    [(_, out)] = sw.receive(0, eth_frame(payload=bytes(16)))
    ing_ts = int.from_bytes(out[14:20], "big")
    egr_ts = int.from_bytes(out[20:26], "big")
    assert ing_ts == 500000 and egr_ts >= ing_ts
    assert int.from_bytes(out[26:30], "big") == 30


def test_no_program_drops_everything():
    sw = Switch(None)
    assert not sw.has_program and sw.receive(0, b"abc") == []
    assert isinstance(Bmv2Program().build(), dict)
