"""Scan order of ternary/range/optional tables: kept by binary insertion (no re-sort per insert)
and always exactly `sorted(by -priority, then insertion)`, through inserts, deletes and clears;
packets see the same winner."""

from __future__ import annotations

import random

from p4switch.runtime import Switch, TernaryKey

from .bmv2 import assign, eth_frame, ethernet_program, fld, param


class NoSortList(list):
    """A scan list that refuses whole-table sorts: inserting must place one entry, not re-sort."""

    def sort(self, *args, **kwargs):
        raise AssertionError("the table was re-sorted on insert")


def _ternary_switch() -> Switch:
    prog = ethernet_program()
    prog.state("start", [prog.extract("eth")])
    set_src = prog.action("C.set_src", [assign(fld("eth", "src"), param(0))], [("v", 48)])
    prog.table("C.t", [("ternary", ["eth", "dst"])], [set_src], default=(set_src, [0]),
               max_size=100000)
    return Switch(prog.build())


def _winner(sw: Switch, dst: int) -> int:
    out = sw.receive(0, eth_frame(dst=dst))
    return int.from_bytes(out[0][1][6:12], "big")


def _expected_order(table) -> list[int]:
    return [e.handle for e in sorted(table.entries.values(),
                                     key=lambda e: (-e.priority, e.handle))]


def test_scan_order_matches_a_full_sort_through_inserts_and_deletes():
    sw = _ternary_switch()
    table = sw.program.tables["C.t"]
    table.ordered = NoSortList()
    rnd = random.Random(9)
    handles = []
    for step in range(1500):
        if handles and rnd.random() < 0.3:
            sw.table_delete("t", handles.pop(rnd.randrange(len(handles))))
        else:
            mask = rnd.choice([0, 0xFF, 0xFFFF, (1 << 48) - 1])
            key = TernaryKey(rnd.getrandbits(48) & mask, mask)
            priority = rnd.randint(1, 12)      # few priorities: many ties
            if sw.table_find("t", [key], priority) is None:
                handles.append(sw.table_add("t", [key], "set_src", [step + 1],
                                            priority=priority))
        if step % 100 == 0:
            assert [e.handle for e in table.ordered] == _expected_order(table)
    assert [e.handle for e in table.ordered] == _expected_order(table)
    assert len(table.ordered) == len(handles) == len(sw.table_entries("t"))


def test_ties_go_to_the_earlier_entry_and_priority_beats_insertion_order():
    sw = _ternary_switch()
    sw.program.tables["C.t"].ordered = NoSortList()
    sw.table_add("t", [TernaryKey(0, 0)], "set_src", [1], priority=5)
    sw.table_add("t", [TernaryKey(0x0A, 0xFF)], "set_src", [2], priority=5)
    assert _winner(sw, 0x0A) == 1                   # equal priority: inserted first wins
    third = sw.table_add("t", [TernaryKey(0x0A, 0x0F)], "set_src", [3], priority=6)
    assert _winner(sw, 0x0A) == 3                   # a later, higher priority wins
    sw.table_add("t", [TernaryKey(0x0A, 0x0F)], "set_src", [4], priority=4)
    sw.table_delete("t", third)
    assert _winner(sw, 0x0A) == 1
    assert _winner(sw, 0x1A) == 1
    sw.table_clear("t")
    sw.table_add("t", [TernaryKey(0x0A, 0xFF)], "set_src", [7], priority=1)
    assert _winner(sw, 0x0A) == 7 and _winner(sw, 0x0B) == 0
