"""BMv2 JSON in p4c's shape: our output for the shared fixtures compared with p4c's, part by part.

Ids and the order of some lists differ from p4c's (they are internal); names, header layout,
parse graph, tables, keys, default entries, const entries and externs must agree.
"""

from __future__ import annotations

import json

import pytest

from p4switch.compiler import compile_file, compile_source

from tests.conftest import SHARED_FIXTURES
from .helpers import program

FIXTURES = sorted(SHARED_FIXTURES.glob("*/*.json")) if SHARED_FIXTURES.is_dir() else []


def by_name(items):
    return {i["name"]: i for i in items}


@pytest.fixture(params=FIXTURES, ids=[p.stem for p in FIXTURES])
def pair(request):
    expected = json.loads(request.param.read_text())
    got = compile_file(request.param.with_suffix(".p4")).bmv2
    return got, expected


def test_top_level_keys(pair):
    got, expected = pair
    assert set(got) == set(expected)


def test_header_types_and_instances(pair):
    got, expected = pair
    exp_types = {t["name"]: t["fields"] for t in expected["header_types"] if t["name"] != "scalars_0"}
    got_types = {t["name"]: t["fields"] for t in got["header_types"] if t["name"] != "scalars_0"}
    assert got_types == exp_types
    strip = lambda hs: sorted((h["name"], h["header_type"], h["metadata"]) for h in hs)
    assert strip(got["headers"]) == strip(expected["headers"])
    assert [(s["name"], s["size"]) for s in got["header_stacks"]] == \
        [(s["name"], s["size"]) for s in expected["header_stacks"]]
    assert got["errors"] == expected["errors"]
    assert got["field_aliases"] == expected["field_aliases"]


def test_parse_graph(pair):
    got, expected = pair
    g, e = got["parsers"][0], expected["parsers"][0]
    assert g["init_state"] == e["init_state"]
    strip = lambda st: (st["parser_ops"], st["transitions"], st["transition_key"])
    assert {s["name"]: strip(s) for s in g["parse_states"]} == \
        {s["name"]: strip(s) for s in e["parse_states"]}
    assert got["deparsers"][0]["order"] == expected["deparsers"][0]["order"]


def test_user_tables(pair):
    got, expected = pair
    for g_pipe, e_pipe in zip(got["pipelines"], expected["pipelines"]):
        g_tables = by_name(t for t in g_pipe["tables"] if not t["name"].startswith("tbl_"))
        e_tables = by_name(t for t in e_pipe["tables"] if not t["name"].startswith("tbl_"))
        assert set(g_tables) == set(e_tables)
        for name, e in e_tables.items():
            g = g_tables[name]
            for field in ("key", "match_type", "type", "max_size", "with_counters",
                          "direct_meters", "actions"):
                assert sorted(g[field]) == sorted(e[field]) if field == "actions" else \
                    g[field] == e[field], (name, field)
            assert set(g["next_tables"]) == set(e["next_tables"])
            g_default = dict(g["default_entry"], action_id=None)
            e_default = dict(e["default_entry"], action_id=None)
            assert g_default == e_default
            strip = lambda entries: [(x["match_key"], x["action_entry"]["action_data"],
                                      x["priority"]) for x in entries]
            assert strip(g.get("entries", [])) == strip(e.get("entries", []))


def test_externs_and_checksums(pair):
    got, expected = pair
    strip = lambda arrays: sorted((a["name"], a.get("size"), a["is_direct"], a.get("binding"))
                                  for a in arrays)
    assert strip(got["counter_arrays"]) == strip(expected["counter_arrays"])
    assert [(r["name"], r["size"], r["bitwidth"]) for r in got["register_arrays"]] == \
        [(r["name"], r["size"], r["bitwidth"]) for r in expected["register_arrays"]]
    strip = lambda cs: [(c["name"], c["target"], c["verify"], c["update"], c["if_cond"])
                        for c in cs]
    assert strip(got["checksums"]) == strip(expected["checksums"])
    assert [(c["name"], c["algo"]) for c in got["calculations"]] == \
        [(c["name"], c["algo"]) for c in expected["calculations"]]


def test_synthesized_names_follow_p4c():
    got = compile_source(program("""
        action drop() { mark_to_drop(sm); }
        apply {
            if (hdr.eth.ether_type == 0x800) {
                drop();
            } else {
                sm.egress_spec = 2;
                hdr.eth.ether_type = 1;
            }
        }"""), "prog.p4").bmv2
    ingress = got["pipelines"][0]
    names = [t["name"] for t in ingress["tables"]]
    assert "tbl_drop" in names and any(n.startswith("tbl_prog") for n in names)
    cond = ingress["conditionals"][0]
    assert cond["name"].startswith("node_") and ingress["init_table"] == cond["name"]
    synth = [a for a in got["actions"] if a["name"].startswith("prog")][0]
    assert [p["op"] for p in synth["primitives"]] == ["assign", "assign"]
    assert synth["primitives"][0]["source_info"]["source_fragment"] == "sm.egress_spec = 2"


def test_hit_miss_and_action_run_next_tables():
    got = compile_source(program("""
        action a() { } action b() { }
        table t1 { key = { hdr.eth.dst : exact; } actions = { a; b; } }
        table t2 { key = { hdr.eth.src : exact; } actions = { a; b; } }
        apply {
            if (t1.apply().hit) { sm.egress_spec = 1; }
            switch (t2.apply().action_run) { a: { sm.egress_spec = 2; } default: { } }
        }"""), "p.p4").bmv2
    tables = by_name(got["pipelines"][0]["tables"])
    assert set(tables["Ing.t1"]["next_tables"]) == {"__HIT__", "__MISS__"}
    assert tables["Ing.t1"]["next_tables"]["__MISS__"] == "Ing.t2"
    nt = tables["Ing.t2"]["next_tables"]
    assert nt["Ing.a"] is not None and nt["Ing.a"].startswith("tbl_") and nt["Ing.b"] is None


def test_arithmetic_is_masked_and_signed_is_wrapped():
    got = compile_source(program("""
        apply {
            meta.u = meta.u + 1;
            meta.s = meta.s - 1;
        }""", meta_fields="bit<8> u; int<8> s;"), "p.p4").bmv2
    prims = [p for a in got["actions"] for p in a["primitives"]]
    u_expr, s_expr = prims[0]["parameters"][1]["value"]["value"], prims[1]["parameters"][1]["value"]["value"]
    assert u_expr["op"] == "&" and u_expr["right"]["value"] == "0xff"
    assert s_expr["op"] == "two_comp_mod" and s_expr["right"]["value"] == "0x08"
    scalars = {f[0]: f for t in got["header_types"] if t["name"] == "scalars_0" for f in t["fields"]}
    assert scalars["meta_t.s"] == ["meta_t.s", 8, True]


def test_entry_priorities_become_bmv2_order():
    got = compile_source(program("""
        action a(bit<9> p) { sm.egress_spec = p; }
        table t {
            key = { hdr.eth.dst : ternary; }
            actions = { a; }
            const entries = {
                priority = 10: 48w1 &&& 48w1 : a(1);
                priority = 30: 48w2 &&& 48w2 : a(2);
            }
        }
        table u {
            key = { hdr.eth.src : ternary; }
            actions = { a; }
            const entries = { 48w1 &&& 48w1 : a(1); 48w2 &&& 48w2 : a(2); }
        }
        apply { t.apply(); u.apply(); }"""), "p.p4").bmv2
    tables = by_name(got["pipelines"][0]["tables"])
    # P4: the larger priority wins; BMv2: the smaller number wins
    assert [e["priority"] for e in tables["Ing.t"]["entries"]] == [21, 1]
    # without priorities, the first entry wins
    assert [e["priority"] for e in tables["Ing.u"]["entries"]] == [1, 2]
    assert [e["action_entry"]["action_data"] for e in tables["Ing.u"]["entries"]] == [["0x1"], ["0x2"]]


def test_table_action_and_conditional_names_match_p4c(pair):
    got, expected = pair
    for g_pipe, e_pipe in zip(got["pipelines"], expected["pipelines"]):
        assert sorted(t["name"] for t in g_pipe["tables"]) == \
            sorted(t["name"] for t in e_pipe["tables"])
        assert len(g_pipe["conditionals"]) == len(e_pipe["conditionals"])
        assert (g_pipe["init_table"] is None) == (e_pipe["init_table"] is None)
    # p4c copies an action per table that uses it; the set of names is the same
    assert {a["name"] for a in got["actions"]} == {a["name"] for a in expected["actions"]}
