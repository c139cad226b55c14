"""Match-action tables: every match kind, priorities, defaults, const entries, the API's errors."""

from __future__ import annotations

import pytest

from p4switch.runtime import (AlreadyExists, ExactKey, InvalidArgument, LpmKey, NotFound,
                              OptionalKey, PermissionDenied, RangeKey, ResourceExhausted, Switch,
                              TernaryKey)

from .bmv2 import assign, eth_frame, ethernet_program, fld, param, prim, std


def _switch(keys, max_size=1024, entries=None, next_tables=None, extra_tables=None) -> Switch:
    """eth extracted; table `t` keyed on `keys`; `set_src(v)` writes eth.src, `port(p)`."""
    prog = ethernet_program()
    prog.state("start", [prog.extract("eth")])
    set_src = prog.action("C.set_src", [assign(fld("eth", "src"), param(0))], [("v", 48)])
    port = prog.action("C.port", [assign(std("egress_spec"), param(0))], [("p", 9)])
    drop = prog.action("C.drop", [prim("mark_to_drop", {"type": "header",
                                                        "value": "standard_metadata"})])
    prog.table("C.t", keys, [set_src, port, drop], default=(port, [1]), max_size=max_size,
               entries=entries, next_tables=next_tables)
    if extra_tables:
        extra_tables(prog)
    return Switch(prog.build())


def _src_out(sw: Switch, frame: bytes) -> int | None:
    out = sw.receive(0, frame)
    return int.from_bytes(out[0][1][6:12], "big") if out else None


def test_exact_hit_and_miss():
    sw = _switch([("exact", ["eth", "dst"])])
    sw.table_add("t", [ExactKey(5)], "set_src", [0xAB])
    assert _src_out(sw, eth_frame(dst=5)) == 0xAB
    assert _src_out(sw, eth_frame(dst=6, src=7)) == 7


def test_two_field_exact_key_packs_fields():
    sw = _switch([("exact", ["eth", "dst"]), ("exact", ["eth", "type"])])
    sw.table_add("t", [ExactKey(5), ExactKey(0x0800)], "set_src", [1])
    sw.table_add("t", [ExactKey(5), ExactKey(0x86DD)], "set_src", [2])
    assert _src_out(sw, eth_frame(dst=5, ether_type=0x86DD)) == 2
    assert _src_out(sw, eth_frame(dst=5, ether_type=0x0800)) == 1


def test_lpm_longest_prefix_wins_and_delete_falls_back():
    sw = _switch([("lpm", ["eth", "dst"])])
    sw.table_add("t", [LpmKey(0x0A0000000000, 8)], "set_src", [8])
    h24 = sw.table_add("t", [LpmKey(0x0A0102000000, 24)], "set_src", [24])
    sw.table_add("t", [LpmKey(0, 0)], "set_src", [0x99])
    assert _src_out(sw, eth_frame(dst=0x0A0102030405)) == 24
    assert _src_out(sw, eth_frame(dst=0x0A0902030405)) == 8
    assert _src_out(sw, eth_frame(dst=0x0B0000000000)) == 0x99
    sw.table_delete("t", h24)
    assert _src_out(sw, eth_frame(dst=0x0A0102030405)) == 8


def test_lpm_with_exact_field():
    sw = _switch([("exact", ["eth", "type"]), ("lpm", ["eth", "dst"])])
    sw.table_add("t", [ExactKey(0x0800), LpmKey(0x0A0000000000, 8)], "set_src", [4])
    sw.table_add("t", [ExactKey(0x86DD), LpmKey(0x0A0000000000, 16)], "set_src", [6])
    assert _src_out(sw, eth_frame(dst=0x0A0000000001, ether_type=0x0800)) == 4
    assert _src_out(sw, eth_frame(dst=0x0A0000000001, ether_type=0x86DD)) == 6
    assert _src_out(sw, eth_frame(dst=0x0A0100000001, ether_type=0x86DD, src=3)) == 3


def test_ternary_higher_priority_wins_and_bits_outside_mask_ignored():
    sw = _switch([("ternary", ["eth", "dst"])])
    sw.table_add("t", [TernaryKey(0xFF00, 0xFF00)], "set_src", [1], priority=10)
    sw.table_add("t", [TernaryKey(0xFFFF, 0x00FF)], "set_src", [2], priority=20)
    assert _src_out(sw, eth_frame(dst=0xFFFF)) == 2
    assert _src_out(sw, eth_frame(dst=0xFF00)) == 1
    # same key, different value bits outside the mask: the same entry
    assert sw.table_find("t", [TernaryKey(0x00FF, 0x00FF)], priority=20) is not None
    with pytest.raises(AlreadyExists):
        sw.table_add("t", [TernaryKey(0x12FF, 0x00FF)], "set_src", [3], priority=20)


def test_ternary_needs_priority():
    sw = _switch([("ternary", ["eth", "dst"])])
    with pytest.raises(InvalidArgument):
        sw.table_add("t", [TernaryKey(1, 1)], "set_src", [1])


def test_range_and_optional_keys():
    sw = _switch([("range", ["eth", "type"]), ("optional", ["eth", "dst"])])
    sw.table_add("t", [RangeKey(0x100, 0x1FF), OptionalKey(None)], "set_src", [1], priority=1)
    sw.table_add("t", [RangeKey(0x100, 0x1FF), OptionalKey(7)], "set_src", [2], priority=2)
    assert _src_out(sw, eth_frame(dst=7, ether_type=0x150)) == 2
    assert _src_out(sw, eth_frame(dst=8, ether_type=0x1FF)) == 1
    assert _src_out(sw, eth_frame(dst=8, ether_type=0x200, src=9)) == 9
    with pytest.raises(InvalidArgument):
        sw.table_add("t", [RangeKey(5, 4), OptionalKey(None)], "set_src", [1], priority=3)


def test_ternary_cache_is_invalidated_by_changes():
    sw = _switch([("ternary", ["eth", "dst"])])
    assert _src_out(sw, eth_frame(dst=3, src=1)) == 1
    h = sw.table_add("t", [TernaryKey(3, 0xFF)], "set_src", [5], priority=1)
    assert _src_out(sw, eth_frame(dst=3, src=1)) == 5
    sw.table_modify("t", h, "set_src", [6])
    assert _src_out(sw, eth_frame(dst=3, src=1)) == 6
    sw.table_delete("t", h)
    assert _src_out(sw, eth_frame(dst=3, src=1)) == 1


def test_valid_match_kind():
    sw = _switch([("valid", "eth")])
    sw.table_add("t", [ExactKey(1)], "set_src", [0x77])
    assert _src_out(sw, eth_frame()) == 0x77


def test_default_action_set_reset_get_and_entries_listing():
    sw = _switch([("exact", ["eth", "dst"])])
    assert sw.table_get_default("t") == ("C.port", (1,))
    sw.table_set_default("t", "port", [3])
    assert sw.receive(0, eth_frame())[0][0] == 3
    sw.table_reset_default("t")
    assert sw.receive(0, eth_frame())[0][0] == 1
    sw.table_set_default("t", "drop")
    assert sw.receive(0, eth_frame()) == []
    h = sw.table_add("t", [ExactKey(9)], "port", [4])
    [entry] = sw.table_entries("t")
    assert (entry.handle, entry.keys, entry.action, entry.params) == \
        (h, (ExactKey(9),), "C.port", (4,))
    info = sw.table_info("t")
    assert info.keys == (("eth.dst", "exact", 48),) and info.actions[0] == "C.set_src"
    sw.table_clear("t")
    assert sw.table_entries("t") == []


def test_api_errors_change_nothing():
    sw = _switch([("exact", ["eth", "dst"])], max_size=1)
    with pytest.raises(InvalidArgument):
        sw.table_add("t", [ExactKey(1 << 48)], "port", [1])       # key too wide
    with pytest.raises(InvalidArgument):
        sw.table_add("t", [ExactKey(1)], "port", [512])           # param too wide
    with pytest.raises(InvalidArgument):
        sw.table_add("t", [ExactKey(1)], "port", [])              # param count
    with pytest.raises(InvalidArgument):
        sw.table_add("t", [ExactKey(1), ExactKey(2)], "port", [1])  # key count
    with pytest.raises(InvalidArgument):
        sw.table_add("t", [LpmKey(1, 3)], "port", [1])            # wrong key kind
    with pytest.raises(NotFound):
        sw.table_add("t", [ExactKey(1)], "no_such_action", [1])
    with pytest.raises(NotFound):
        sw.table_add("no_such_table", [ExactKey(1)], "port", [1])
    assert sw.table_entries("t") == []
    sw.table_add("t", [ExactKey(1)], "port", [2])
    with pytest.raises(ResourceExhausted):
        sw.table_add("t", [ExactKey(2)], "port", [2])
    with pytest.raises(NotFound):
        sw.table_delete("t", 12345)
    with pytest.raises(NotFound):
        sw.table_modify("t", 12345, "port", [1])


def test_ambiguous_suffix_lists_candidates():
    def two_more(prog):
        a = prog.action("D.noop")
        prog.table("A.same", actions=[a], default=a)
        prog.table("B.same", actions=[a], default=a)
    sw = _switch([("exact", ["eth", "dst"])], extra_tables=two_more)
    with pytest.raises(NotFound, match="A.same, B.same"):
        sw.table_info("same")
    assert sw.table_info("A.same").name == "A.same"


def test_const_entries_from_the_program_refuse_writes():
    entries = [{"match_key": [{"match_type": "ternary", "key": "0x05", "mask": "0xff"}],
                "action_entry": {"action_id": 0, "action_data": ["0x11"]}, "priority": 1},
               {"match_key": [{"match_type": "ternary", "key": "0x00", "mask": "0x00"}],
                "action_entry": {"action_id": 0, "action_data": ["0x22"]}, "priority": 2}]
    sw = _switch([("ternary", ["eth", "dst"])], entries=entries)
    assert _src_out(sw, eth_frame(dst=5)) == 0x11      # JSON priority 1 beats 2
    assert _src_out(sw, eth_frame(dst=6)) == 0x22
    assert sw.table_info("t").const
    with pytest.raises(PermissionDenied):
        sw.table_add("t", [TernaryKey(1, 1)], "set_src", [1], priority=5)
    handle = sw.table_entries("t")[0].handle
    with pytest.raises(PermissionDenied):
        sw.table_delete("t", handle)
    priorities = {e.params[0]: e.priority for e in sw.table_entries("t")}
    assert priorities[0x11] > priorities[0x22]  # reported with P4Runtime's convention


def test_hit_miss_next_tables():
    def after(prog):
        hit_action = prog.action("H.mark_hit", [assign(fld("eth", "type"), {"type": "hexstr",
                                                                             "value": "0x1111"})])
        miss_action = prog.action("H.mark_miss", [assign(fld("eth", "type"), {"type": "hexstr",
                                                                               "value": "0x2222"})])
        prog.run("on_hit", hit_action)
        prog.run("on_miss", miss_action)
    sw = _switch([("exact", ["eth", "dst"])],
                 next_tables={"__HIT__": "on_hit", "__MISS__": "on_miss"}, extra_tables=after)
    sw.table_add("t", [ExactKey(1)], "port", [2])
    hit = sw.receive(0, eth_frame(dst=1))
    miss = sw.receive(0, eth_frame(dst=9))
    assert hit[0][1][12:14] == b"\x11\x11" and miss[0][1][12:14] == b"\x22\x22"


def test_action_run_next_tables():
    def after(prog):
        mark = prog.action("N.mark", [assign(fld("eth", "type"), {"type": "hexstr",
                                                                  "value": "0x3333"})])
        prog.run("after_set_src", mark)
    sw = _switch([("exact", ["eth", "dst"])],
                 next_tables={"C.set_src": "after_set_src", "C.port": None, "C.drop": None},
                 extra_tables=after)
    sw.table_add("t", [ExactKey(1)], "set_src", [2])
    assert sw.receive(0, eth_frame(dst=1))[0][1][12:14] == b"\x33\x33"
    assert sw.receive(0, eth_frame(dst=2))[0][1][12:14] == b"\x08\x00"


def test_direct_counter_counts_hits_only():
    def bind(prog):
        prog.counter("C.hits", direct_table="C.t")
    sw = _switch([("exact", ["eth", "dst"])], extra_tables=bind)
    h = sw.table_add("t", [ExactKey(1)], "port", [2])
    for _ in range(3):
        sw.receive(0, eth_frame(dst=1, payload=bytes(10)))
    sw.receive(0, eth_frame(dst=2))
    assert sw.direct_counter_read("t", h) == (3, 3 * 24)
    sw.direct_counter_write("t", h, 0, 0)
    assert sw.direct_counter_read("t", h) == (0, 0)


def test_long_chains_of_conditionals_compile():
    """Hundreds of nested if/else nodes: deeper than Python's indentation limit if inlined."""
    sw = Switch(_program_with_chain(300).build())
    assert sw.receive(0, eth_frame(ether_type=299))[0][0] == 299
    assert sw.receive(0, eth_frame(ether_type=5))[0][0] == 5
    assert sw.receive(0, eth_frame(ether_type=300))[0][0] == 0


def _program_with_chain(n: int):
    from .bmv2 import const, op
    prog = ethernet_program()
    prog.state("start", [prog.extract("eth")])
    for i in range(n):
        act = prog.action(f"p{i}", [assign(std("egress_spec"), const(i))])
        prog.run(f"t{i}", act)
        prog.conditional(f"c{i}", op("==", fld("eth", "type"), const(i)), f"t{i}",
                         f"c{i + 1}" if i + 1 < n else None)
    prog.start("c0")
    return prog
