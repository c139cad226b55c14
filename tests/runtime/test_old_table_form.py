"""BMv2 JSON's older table form (p4c-bm's), which simple_switch still loads: actions by name,
and an indirect table's own profile (`act_prof_name`, its selector inside the table). The runtime
read only `action_ids`, so such a table loaded with no actions at all (every call then refused
its actions), and an old indirect table was refused. BMv2's own CLI tests use such files
(scripts/bmv2_cli_tests.py)."""

from __future__ import annotations

import copy
from pathlib import Path

import pytest

from p4switch.compiler import compile_file
from p4switch.runtime import ConfigError, ExactKey, Switch

PROGRAM = Path(__file__).resolve().parents[1] / "thrift" / "runtime_objects.p4"


@pytest.fixture(scope="module")
def new_form() -> dict:
    return compile_file(PROGRAM).bmv2


def old_form(doc: dict) -> dict:
    """The same program as p4c-bm would have written its tables."""
    doc = copy.deepcopy(doc)
    names = {a["id"]: a["name"] for a in doc["actions"]}
    for pipeline in doc["pipelines"]:
        profiles = {p["name"]: p for p in pipeline.pop("action_profiles", [])}
        for table in pipeline["tables"]:
            table["actions"] = [names[i] for i in table.pop("action_ids")]
            if "action_profile" in table:
                profile = profiles[table.pop("action_profile")]
                table["act_prof_name"] = profile["name"]
                if "selector" in profile:
                    table["selector"] = profile["selector"]
    return doc


def test_an_old_form_program_loads_as_the_new_one(new_form):
    old, new = Switch(old_form(new_form)), Switch(new_form)
    assert old.tables() == new.tables()
    for table in new.tables():
        assert old.table_info(table).actions == new.table_info(table).actions, table
        assert old.table_info(table).action_profile == new.table_info(table).action_profile
    assert sorted(old.action_profiles()) == sorted(new.action_profiles())
    frame = b"\x00" * 5 + b"\x01" + b"\x02" * 6 + b"\x88\xb5" + bytes([2, 1, 0, 0]) + bytes(4)
    for sw in (old, new):
        sw.table_add("I.dmac", [ExactKey(1)], "I.to_port_counted", [0])
        member = sw.act_prof_add_member("I.pick", "I.to_port", [6])
        group = sw.act_prof_create_group("I.pick")
        sw.act_prof_add_member_to_group("I.pick", member, group)
        sw.table_add_group("I.balanced", [ExactKey(1)], group)
    assert old.receive(0, frame) == new.receive(0, frame) == [(6, frame)]


def test_the_callers_document_is_not_changed(new_form):
    doc = old_form(new_form)
    before = copy.deepcopy(doc)
    Switch(doc)
    assert doc == before


@pytest.mark.parametrize("change, where, message", [
    (lambda t, d: t.__setitem__("actions", ["I.nowhere"]), "actions", "no action named"),
    (lambda t, d: d["actions"].append(dict(d["actions"][0], id=999)), "actions",
     "2 actions named"),
])
def test_an_old_form_action_that_names_no_single_action_is_refused(new_form, change, where,
                                                                    message):
    doc = old_form(new_form)
    table = next(t for t in doc["pipelines"][0]["tables"] if t["name"] == "I.dmac")
    table["actions"] = [doc["actions"][0]["name"]]
    change(table, doc)
    with pytest.raises(ConfigError, match=message) as info:
        Switch(doc)
    assert info.value.path.startswith("pipelines[0].tables[") and info.value.path.endswith(where)
