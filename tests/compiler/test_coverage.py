"""Language and extern coverage: a program using most constructs compiles to JSON the runtime
loads, and the lowered pieces are the BMv2 forms simple_switch implements."""

from __future__ import annotations

from pathlib import Path

import pytest

from p4switch.compiler import compile_file

PROGRAM = Path(__file__).parent / "compile_only" / "kitchen_sink.p4"


@pytest.fixture(scope="module")
def bmv2():
    return compile_file(PROGRAM).bmv2


def ops(bmv2) -> list[str]:
    return [p["op"] for a in bmv2["actions"] for p in a["primitives"]]


def test_loads_into_the_runtime(bmv2):
    from p4switch.runtime import Switch
    sw = Switch(bmv2)
    assert "Ing.inner.inner_t" in sw.tables() and "Ing.metered_tbl" in sw.tables()


def test_extern_primitives(bmv2):
    found = set(ops(bmv2))
    assert {"execute_meter", "modify_field_rng_uniform", "generate_digest", "log_msg", "assert",
            "resubmit", "truncate", "recirculate", "clone_egress_pkt_to_egress", "push",
            "add_header", "assign_header", "exit"} <= found


def test_field_lists_learn_lists_and_vsets(bmv2):
    assert [(f["id"], f["name"]) for f in bmv2["field_lists"]] == [(1, "field_list1"), (2, "field_list2")]
    assert bmv2["learn_lists"][0]["name"] == "learn_t"
    fields = [e["value"] for e in bmv2["learn_lists"][0]["elements"]]   # temporaries, as p4c
    sources = {p["parameters"][0]["value"][1]: p["parameters"][1]["value"]
               for a in bmv2["actions"] for p in a["primitives"]
               if p["op"] == "assign" and p["parameters"][0]["value"][0] == "scalars"}
    assert [sources[name] for _, name in fields] == [["eth", "src"],
                                                      ["standard_metadata", "ingress_port"]]
    assert bmv2["parse_vsets"] == [{"name": "vs", "id": 0, "compressed_bitwidth": 16}]
    start = bmv2["parsers"][0]["parse_states"][0]
    assert start["transitions"][0]["type"] == "parse_vset"


def test_unions_varbit_and_lookahead(bmv2):
    assert bmv2["header_unions"][0]["name"] == "ab"
    assert bmv2["header_union_types"][0]["headers"] == [["a", "a_t"], ["b", "b_t"]]
    states = {s["name"]: s for s in bmv2["parsers"][0]["parse_states"]}
    opt_ops = [o["op"] for o in states["parse_opt"]["parser_ops"]]
    assert opt_ops == ["set", "advance", "extract_VL"]
    assert states["parse_opt"]["parser_ops"][0]["parameters"][1] == {"type": "lookahead", "value": [0, 8]}
    assert states["parse_b"]["parser_ops"][1]["op"] == "verify"


def test_selector_profile_and_direct_meter(bmv2):
    ingress = bmv2["pipelines"][0]
    tables = {t["name"]: t for t in ingress["tables"]}
    assert tables["Ing.ecmp"]["type"] == "indirect_ws"
    assert [k["target"] for k in tables["Ing.ecmp"]["key"]] == [["eth", "dst"]]
    (profile,) = ingress["action_profiles"]
    assert profile["selector"]["algo"] == "crc16" and len(profile["selector"]["input"]) == 2
    meter = [m for m in bmv2["meter_arrays"] if m["is_direct"]][0]
    assert meter["binding"] == "Ing.metered_tbl" and meter["result_target"] == ["scalars", "meta_t.mcolor"]
    assert tables["Ing.metered_tbl"]["match_type"] == "lpm"
    assert tables["Ing.metered_tbl"]["entries"][0]["match_key"][1] == {
        "match_type": "lpm", "key": "0x0a0000000000", "prefix_length": 8}


def test_value_switch_becomes_conditionals(bmv2):
    conds = [c for c in bmv2["pipelines"][0]["conditionals"]]
    exprs = [c["expression"]["value"]["op"] for c in conds]
    assert "or" in exprs  # the case with two labels


def test_checksum_with_payload(bmv2):
    (calc,) = bmv2["calculations"]
    assert calc["input"][-1] == {"type": "payload", "value": None}
    assert bmv2["checksums"][0]["update"] and not bmv2["checksums"][0]["verify"]


def test_user_enum_listed(bmv2):
    assert bmv2["enums"] == [{"name": "Color", "entries": [["RED", 0], ["GREEN", 1], ["BLUE", 2]]}]
