"""Initial entry priorities (P4_16 §14.2.1.4; p4c's `@priority` where the spec is silent).

The behaviour on packets is covered by programs/entry_priorities.p4 + .stf; these check the BMv2
ranks (the smaller wins) and the errors.
"""

from __future__ import annotations

import argparse

import pytest

from p4switch.compiler import CompileError, compile_source

from .helpers import program


def ranks(entries: str, props: str = "", kind: str = "ternary") -> list[int]:
    src = program(f"""
        action a(bit<9> p) {{ sm.egress_spec = p; }}
        table t {{
            key = {{ hdr.eth.ether_type : {kind}; }}
            actions = {{ a; }}
            {props}
            {entries}
        }}
        apply {{ t.apply(); }}""")
    tables = compile_source(src, "p.p4").bmv2["pipelines"][0]["tables"]
    return [e["priority"] for t in tables if t["name"] == "Ing.t" for e in t["entries"]]


def error(entries: str, props: str = "", kind: str = "ternary") -> tuple[int, str]:
    with pytest.raises(CompileError) as info:
        ranks(entries, props, kind)
    _, line, _, message = info.value.diagnostics[0]
    return line, message


THREE = "1 &&& 1 : a(1); 2 &&& 2 : a(2); 4 &&& 4 : a(3);"


@pytest.mark.parametrize("props", ["", "largest_priority_wins = false;", "priority_delta = 7;"])
def test_without_priorities_the_first_entry_wins(props):
    assert ranks(f"const entries = {{ {THREE} }}", props) == [1, 2, 3]


def test_entries_without_a_priority_follow_the_previous_one_by_delta():
    # P4 priorities 50, 40, 100, 90: BMv2 ranks 100 - p + 1
    text = ("entries = { priority = 50: 1 &&& 1 : a(1); 2 &&& 2 : a(2); "
            "priority = 100: 4 &&& 4 : a(3); 8 &&& 8 : a(4); }")
    assert ranks(text, "priority_delta = 10;") == [51, 61, 1, 11]


def test_smallest_priority_wins_counts_upwards():
    # P4 priorities 30, 31, 5, 6: the smallest wins, ranks p - 5 + 1
    text = ("const entries = { priority = 30: 1 &&& 1 : a(1); 2 &&& 2 : a(2); "
            "priority = 5: 4 &&& 4 : a(3); 8 &&& 8 : a(4); }")
    assert ranks(text, "largest_priority_wins = false;") == [26, 27, 1, 2]


def test_priority_annotation_is_a_bmv2_priority_as_in_p4c():
    text = "const entries = { 1 &&& 1 : a(1); 2 &&& 2 : a(2) @priority(5); _ : a(3) @priority(0); }"
    assert ranks(text) == [1, 5, 0]


@pytest.mark.parametrize("entries, props, kind, line, message", [
    ("const entries = { 1 &&& 1 : a(1); priority = 3: 2 &&& 2 : a(2); }", "", "ternary", 18,
     "the first entry of table 't' needs an explicit priority, because other entries have one"),
    ("const entries = { priority = 3: 1 : a(1); 2 : a(2); }", "", "exact", 18,
     "table 't' has only exact/lpm keys, so its entries take no priority"),
    ("const entries = { priority = 3: 1 &&& 1 : a(1); }", "priority_delta = 0;", "ternary", 17,
     "'priority_delta' must be a positive integer, not 0"),
    ("const entries = { priority = 3: 1 &&& 1 : a(1); }", "largest_priority_wins = 1;",
     "ternary", 17, "'largest_priority_wins' must be a compile-time boolean constant"),
    ("const entries = { priority = 0: 1 &&& 1 : a(1); 2 &&& 2 : a(2); }", "", "ternary", 18,
     "this entry's priority would be -1 (previous 0 - priority_delta 1 is below 0)"),
    ("const entries = { priority = 1: 1 &&& 1 : a(1); 2 &&& 2 : a(2) @priority(2); }", "",
     "ternary", 18, "table 't' mixes '@priority' annotations with 'priority ='"),
])
def test_priority_errors_are_located(entries, props, kind, line, message):
    got_line, got = error(entries, props, kind)
    assert message in got and got_line == line, (got_line, got)


def warnings(entries: str, props: str = "") -> list[tuple[int, str]]:
    src = program(f"""
        action a(bit<9> p) {{ sm.egress_spec = p; }}
        table t {{
            key = {{ hdr.eth.ether_type : ternary; }}
            actions = {{ a; }}
            {props}
            {entries}
        }}
        apply {{ t.apply(); }}""")
    return [(w.location.line, w.message) for w in compile_source(src, "p.p4").warnings]


def test_duplicate_and_out_of_order_priorities_warn():
    got = warnings("const entries = { priority = 5: 1 &&& 1 : a(1); priority = 5: 2 &&& 2 : a(2);\n"
                   "priority = 9: 4 &&& 4 : a(3); }")
    assert len(got) == 2
    assert got[0][0] == 18 and "has the same priority 5 as the one at line 18" in got[0][1]
    assert got[1][0] == 19 and "(priority 9) wins over the one before it (priority 5)" in got[1][1]


def test_warnings_follow_the_convention_and_can_be_silenced():
    assert warnings("const entries = { priority = 1: 1 &&& 1 : a(1); 2 &&& 2 : a(2); }",
                    "largest_priority_wins = false;") == []
    silenced = ('@noWarn("duplicate_priorities") @noWarn("entries_out_of_priority_order")\n'
                "const entries = { priority = 5: 1 &&& 1 : a(1); priority = 5: 2 &&& 2 : a(2);"
                " priority = 9: 4 &&& 4 : a(3); }")
    assert warnings(silenced) == []


def test_cli_prints_warnings_and_still_compiles(tmp_path, capsys):
    from p4switch.compiler.cli import add_arguments, run
    prog = tmp_path / "w.p4"
    prog.write_text(program("""
        action a(bit<9> p) { sm.egress_spec = p; }
        table t {
            key = { hdr.eth.ether_type : ternary; }
            actions = { a; }
            const entries = { priority = 1: 1 &&& 1 : a(1); priority = 2: 2 &&& 2 : a(2); }
        }
        apply { t.apply(); }"""))
    parser = argparse.ArgumentParser()
    add_arguments(parser)
    args = parser.parse_args([str(prog), "-o", str(tmp_path / "w.json")])
    assert run(args) == 0
    err = capsys.readouterr().err
    assert "w.p4:17:" in err and "warning: this entry of table 't' (priority 2) wins" in err
    assert (tmp_path / "w.json").exists()
