"""Priorities of a table's initial entries (`entries` in the JSON, BMv2's lower-wins numbers):
one fixed mapping to the API's P4Runtime priorities, the one simple_switch_grpc uses
(P4Runtime priority = 2**31 - 1 - BMv2 priority), whatever the smallest JSON priority is."""

from __future__ import annotations

import pytest

from p4switch.runtime import ConfigError, Switch, TernaryKey
from p4switch.runtime.state.tables import BMV2_PRIORITY_PIVOT, priority_from_bmv2, priority_to_bmv2

from .bmv2 import assign, eth_frame, ethernet_program, fld, param

PIVOT = 2**31 - 1


def _entry(value: int, mask: int, src: int, priority: int | None) -> dict:
    entry = {"match_key": [{"match_type": "ternary", "key": f"{value:#014x}",
                            "mask": f"{mask:#014x}"}],
             "action_entry": {"action_id": 0, "action_data": [f"{src:#014x}"]}}
    if priority is not None:
        entry["priority"] = priority
    return entry


def _switch(entries: list[dict]) -> Switch:
    prog = ethernet_program()
    prog.state("start", [prog.extract("eth")])
    set_src = prog.action("C.set_src", [assign(fld("eth", "src"), param(0))], [("v", 48)])
    prog.table("C.t", [("ternary", ["eth", "dst"])], [set_src], default=(set_src, [0]),
               entries=entries)
    return Switch(prog.build())


def _winner(sw: Switch, dst: int) -> int:
    out = sw.receive(0, eth_frame(dst=dst))
    return int.from_bytes(out[0][1][6:12], "big")


# JSON priorities 5 < 7 < 9 (5 wins); the smallest is not 1, as with p4c's `@priority(n)` or a
# compiler mapping P4 priorities that do not start at 1
ENTRIES = [_entry(0x0A, 0xFF, 0x55, 5), _entry(0x0A, 0x0F, 0x77, 7), _entry(0, 0, 0x99, 9)]


def test_the_mapping_is_simple_switch_grpcs_fixed_pivot():
    assert BMV2_PRIORITY_PIVOT == PIVOT
    assert priority_from_bmv2(1) == PIVOT - 1 and priority_from_bmv2(0) == PIVOT
    assert all(priority_to_bmv2(priority_from_bmv2(p)) == p for p in (0, 1, 5, 1000, PIVOT - 1))
    assert priority_from_bmv2(5) > priority_from_bmv2(7)      # lower BMv2 number, higher priority


def test_reported_priorities_do_not_depend_on_the_other_entries():
    sw = _switch(ENTRIES)
    reported = {e.params[0]: e.priority for e in sw.table_entries("t")}
    assert reported == {0x55: PIVOT - 5, 0x77: PIVOT - 7, 0x99: PIVOT - 9}
    alone = _switch([_entry(0x0A, 0x0F, 0x77, 7)])              # same entry, other neighbours
    assert [e.priority for e in alone.table_entries("t")] == [PIVOT - 7]
    for src, priority in reported.items():                       # read back -> found by key
        entry = next(e for e in sw.table_entries("t") if e.params[0] == src)
        assert sw.table_find("t", entry.keys, priority) == entry.handle
    assert _winner(sw, 0x0A) == 0x55 and _winner(sw, 0x1A) == 0x77 and _winner(sw, 0x1B) == 0x99


def test_a_control_plane_entry_between_initial_ones_is_ranked_between():
    """What a P4Runtime client does: read the entries, write one at a priority in between.
    BMv2 makes a table with JSON entries immutable, so the write goes to the same Table with
    its const flag lifted (as a P4_16 non-const `entries` table would be)."""
    sw = _switch(ENTRIES)
    sw.program.tables["C.t"].const = False
    between = PIVOT - 6                                          # BMv2 6: after 5, before 7
    sw.table_add("t", [TernaryKey(0x0A, 0x0F)], "set_src", [0x66], priority=between)
    assert _winner(sw, 0x0A) == 0x55       # 5 still wins where it matches
    assert _winner(sw, 0x1A) == 0x66       # the new entry beats 7 ...
    assert _winner(sw, 0x1B) == 0x99       # ... and does not match where only 9 does
    lowest = sw.table_add("t", [TernaryKey(0x1B, 0xFF)], "set_src", [0x11], priority=1)
    assert _winner(sw, 0x1B) == 0x99       # priority 1 ranks after BMv2 9
    sw.table_delete("t", lowest)
    top = sw.table_add("t", [TernaryKey(0x0A, 0xFF)], "set_src", [0xEE], priority=PIVOT)
    assert _winner(sw, 0x0A) == 0xEE and top is not None         # BMv2 0 beats BMv2 5


def test_equal_initial_priorities_keep_the_jsons_order():
    sw = _switch([_entry(0, 0, 0x01, 3), _entry(0x0A, 0xFF, 0x02, 3)])
    assert _winner(sw, 0x0A) == 0x01
    assert {e.priority for e in sw.table_entries("t")} == {PIVOT - 3}


def test_an_entry_without_a_priority_ranks_last():
    sw = _switch([_entry(0, 0, 0x01, None), _entry(0x0A, 0xFF, 0x02, 40)])
    assert _winner(sw, 0x0A) == 0x02
    assert sorted(e.priority for e in sw.table_entries("t")) == [1, PIVOT - 40]


@pytest.mark.parametrize("bad", [-1, PIVOT, 2**40, "3", 1.5])
def test_a_priority_outside_what_bmv2_accepts_is_a_config_error(bad):
    with pytest.raises(ConfigError, match=r"tables\[0\]\.entries\[1\]\.priority"):
        _switch([_entry(0, 0, 0x01, 1), _entry(0x0A, 0xFF, 0x02, bad)])
