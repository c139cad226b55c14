"""A further program of the same JSON is made from the state its first bound program read
(program.StateSpec on the codeshare template) without walking the JSON again: its tables (keys,
actions, defaults, const entries, direct meters, action profiles), registers, counters, meters,
value sets and field lists must be what a program built from the JSON has, and its own."""

from __future__ import annotations

import dataclasses
from pathlib import Path

import numpy as np
import pytest

from inaemu.compile_cache import compile_cached
from p4switch.runtime.program import Program
from p4switch.runtime.share import codeshare
from p4switch.runtime.state.regbanks import BankColumn

CORPUS = Path(__file__).resolve().parents[1] / "p4"
# const entries, direct counters/meters, value sets, action profiles, meters, field lists, keys
PROGRAMS = ["calc", "resources", "parser_select", "action_profile", "meters", "clone",
            "table_keys"]


def summary(value, depth=0):
    """Plain data for a state object graph; references to other state by name."""
    if depth > 6:
        return "..."
    if isinstance(value, (int, str, bytes, float, bool, type(None))):
        return value
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        return (type(value).__name__, tuple(summary(getattr(value, f.name), depth + 1)
                                            for f in dataclasses.fields(value)))
    if isinstance(value, dict):
        return {summary(k, depth + 1): summary(v, depth + 1) for k, v in value.items()}
    if isinstance(value, (list, tuple, BankColumn)):
        return [summary(v, depth + 1) for v in value]
    if isinstance(value, np.ndarray):
        return (str(value.dtype), value.tolist())
    if callable(value):
        return "callable"
    kind = type(value).__name__
    if depth > 0 and kind in ("MeterArray", "ActionProfile", "Table"):
        return (kind, value.name)
    return (kind, {k: summary(v, depth + 1) for k, v in sorted(vars(value).items())})


def state(program: Program) -> dict:
    return {attr: summary(getattr(program, attr)) for attr in
            ("registers", "counters", "meters", "vsets", "field_lists", "tables", "profiles")}


def objects(program: Program) -> list:
    found = []
    for table in program.tables.values():
        found += [table, table.key_fields, table.actions, table.entries, table.default,
                  *table.key_fields, *table.entries.values()]
    found += list(program.registers.values()) + list(program.counters.values())
    found += list(program.meters.values()) + list(program.vsets.values())
    found += list(program.field_lists.values()) + list(program.profiles.values())
    return found


@pytest.mark.parametrize("name", PROGRAMS)
def test_replayed_state_is_the_jsons_and_its_own(name):
    config = compile_cached(str(CORPUS / f"{name}.p4"), {}).bmv2_json
    codeshare.clear()
    alone = Program(config, share=False)
    first, second = Program(config), Program(config)
    key, _ = codeshare.content_key(config)
    template = codeshare.template_for(key, lambda: None)
    assert template is not None and template.state is not None     # read by `first`
    assert state(first) == state(alone) == state(second)
    assert second.tables
    if name == "calc":      # const entries and initial defaults were replayed
        assert any(t.const and t.entries for t in second.tables.values())
        assert any(t.initial_default for t in second.tables.values())
    shared = {id(x) for x in objects(first)} & {id(x) for x in objects(second)}
    assert not shared, "a replayed program shares state objects with another"


def test_a_const_entry_the_table_refuses_names_its_json_path(tmp_path):
    config = compile_cached(str(CORPUS / "calc.p4"), {}).bmv2_json
    import json
    doc = json.loads(config)
    table = next(t for p in doc["pipelines"] for t in p["tables"] if t.get("entries"))
    table["entries"].append(dict(table["entries"][0]))       # the same key twice
    from p4switch.runtime.errors import ConfigError
    with pytest.raises(ConfigError, match=r"tables\[\d+\]\.entries\[\d+\]"):
        Program(json.dumps(doc))
