"""Bad BMv2 JSON gives a ConfigError naming the JSON path, never a Python traceback."""

from __future__ import annotations

import copy
import json
import random

import pytest

from p4switch.runtime import ConfigError, P4SwitchError, Switch, TernaryKey, load_bmv2_json

from tests.conftest import SHARED_FIXTURES
from .bmv2 import assign, const, eth_frame, ethernet_program, fld, op, param, prim, std


def _program() -> dict:
    prog = ethernet_program()
    prog.header_type("h_t", [("x", 8), ("y", 8)])
    prog.stack("st", "h_t", 2)
    prog.state("start", [prog.extract("eth")], key=[fld("eth", "type")],
               transitions=[(0x1234, 0xFFFF, "more"), (None, None, None)])
    prog.state("more", [{"op": "extract", "parameters": [{"type": "stack", "value": "st"}]}])
    prog.register("r", 4, 8)
    prog.counter("c", 4)
    prog.calculation("calc", "crc32", [fld("eth", "src")])
    set_src = prog.action("C.set", [
        assign(fld("eth", "src"), param(0)),
        prim("register_write", {"type": "register_array", "value": "r"}, const(1), const(2)),
        prim("count", {"type": "counter_array", "value": "c"}, const(1)),
        prim("modify_field_with_hash_based_offset", fld("eth", "type"), const(0),
             {"type": "calculation", "value": "calc"}, const(16))], [("v", 48)])
    port = prog.action("C.port", [assign(std("egress_spec"), const(1))])
    prog.table("C.t", [("ternary", ["eth", "dst"])], [set_src, port], default=port,
               next_tables={"C.set": "cond", "C.port": None})
    prog.conditional("cond", op("==", fld("eth", "type"), const(3)), None, None)
    return prog.build()


def test_unknown_match_type_names_the_path():
    doc = _program()
    doc["pipelines"][0]["tables"][0]["key"][0]["match_type"] = "fuzzy"
    with pytest.raises(ConfigError, match=r"pipelines\[0\]\.tables\[0\]\.key\[0\]\.match_type: "
                                          "unknown match type 'fuzzy'"):
        Switch(doc)


@pytest.mark.parametrize("mutate, where", [
    (lambda d: d["actions"][0]["primitives"].append({"op": "teleport", "parameters": []}),
     r"actions\[0\]\.primitives\[4\]\.op: unsupported primitive 'teleport'"),
    (lambda d: d["actions"][0]["primitives"][0]["parameters"][0].update(value=["eth", "nope"]),
     r"header 'eth' has no field 'nope'"),
    (lambda d: d["parsers"][0]["parse_states"][0]["transitions"][0].update(next_state="gone"),
     r"unknown parse state 'gone'"),
    (lambda d: d["pipelines"][0]["tables"][0].update(next_tables={"C.set": "nowhere"}),
     r"unknown control node 'nowhere'"),
    (lambda d: d["calculations"][0].update(algo="md5"), r"unsupported hash algorithm 'md5'"),
    (lambda d: d["headers"][2].update(header_type="missing_t"), r"unknown header type"),
    (lambda d: d.update(__meta__={"version": [3, 0]}), r"unsupported major version 3"),
    (lambda d: d.pop("parsers"), r"parsers: missing or empty"),
])
def test_specific_errors(mutate, where):
    doc = _program()
    mutate(doc)
    with pytest.raises(ConfigError, match=where):
        Switch(doc)


def test_not_json_at_all():
    with pytest.raises(ConfigError, match="not valid JSON"):
        load_bmv2_json("{nope")
    with pytest.raises(ConfigError, match="top level must be a JSON object"):
        load_bmv2_json("[1, 2]")
    with pytest.raises(ConfigError, match="cannot read"):
        Switch.from_json_file("/nonexistent/prog.json")


JUNK = [None, 7, -1, "x", "0xZZ", [], {}, [1, 2], True, 1.5]


def _paths(doc, prefix=()):
    yield prefix
    if isinstance(doc, dict):
        for key, value in doc.items():
            yield from _paths(value, prefix + (key,))
    elif isinstance(doc, list):
        for i, value in enumerate(doc):
            yield from _paths(value, prefix + (i,))


def _documents() -> list[dict]:
    docs = [_program()]
    for name in ("source_route", "replicate", "ipv4_lpm"):
        path = SHARED_FIXTURES / name / f"{name}.json"
        if path.exists():
            docs.append(json.loads(path.read_text()))
    return docs


def test_random_corruptions_raise_only_config_errors():
    rng = random.Random(1234)
    for doc in _documents():
        paths = [p for p in _paths(doc) if p]
        for _ in range(150):
            broken = copy.deepcopy(doc)
            path = rng.choice(paths)
            parent = broken
            for key in path[:-1]:
                parent = parent[key]
            if rng.random() < 0.3:
                del parent[path[-1]]
            else:
                parent[path[-1]] = copy.deepcopy(rng.choice(JUNK))
            try:
                sw = Switch(broken)
            except P4SwitchError:
                continue
            for frame in (eth_frame(), eth_frame(ether_type=0x1234, payload=b"\x01\x02"), b""):
                sw.receive(0, frame)


def test_failed_load_keeps_the_previous_program():
    sw = Switch(_program())
    sw.table_add("t", [TernaryKey(1, 1)], "set", [5],
                 priority=1)
    broken = _program()
    broken["header_types"][1]["fields"] = [
        f for f in broken["header_types"][1]["fields"] if f[0] != "egress_spec"]
    with pytest.raises(ConfigError, match="needs standard_metadata.egress_spec"):
        sw.load_config(broken)
    assert len(sw.table_entries("t")) == 1
