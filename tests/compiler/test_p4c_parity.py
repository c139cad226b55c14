"""The front end accepts what real p4c accepts and refuses what it refuses (issue 10).

Accepted forms are run on packets by tests/p4 (compound_assign, for_loops, for_in_loops,
desugared_forms); here: the forms that only change the JSON's shape, and every refusal, each
located and naming the feature. Where the reference p4c is installed, each refused program is
also shown to be refused by p4c (skipped only when /opt/p4ref is absent).
"""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import pytest

from p4switch.compiler import CompileError, compile_source

from .helpers import program

P4C = Path("/opt/p4ref/bin/p4c-bm2-ss")
P4C_INCLUDE = Path("/opt/p4ref/share/p4c/p4include")


def compile_ok(src: str):
    return compile_source(src, "p.p4")


def refusal(src: str) -> tuple[int, str]:
    with pytest.raises(CompileError) as info:
        compile_source(src, "p.p4")
    _, line, _, message = info.value.diagnostics[0]
    return line, message


def tables(result) -> list[str]:
    return [t["name"] for t in result.bmv2["pipelines"][0]["tables"]]


# ---- accepted --------------------------------------------------------------------------------
def test_includes_define_the_guards_programs_test():
    src = program("apply { }", decls="#ifndef _CORE_P4_\n#error core\n#endif\n"
                                      "#ifndef _V1_MODEL_P4_\n#error v1model\n#endif")
    compile_ok(src)


def test_priority_annotation_goes_after_the_action():
    src = program("""
        action a(bit<9> p) { sm.egress_spec = p; }
        table t {
            key = { hdr.eth.ether_type : ternary; }
            actions = { a; }
            const entries = { 1 &&& 1 : a(1); 2 &&& 2 : a(2) @priority(5); }
        }
        apply { t.apply(); }""")
    entries = compile_ok(src).bmv2["pipelines"][0]["tables"]
    assert [e["priority"] for t in entries if t["name"] == "Ing.t" for e in t["entries"]] == [1, 5]


def test_direct_application_of_a_control_type_names_the_instance_after_the_type():
    src = program("apply { Sub.apply(hdr); }", decls="""
        control Sub(inout headers_t hdr) {
            action set(bit<48> v) { hdr.eth.dst = v; }
            table tb { key = { hdr.eth.src : exact; } actions = { set; } }
            apply { tb.apply(); }
        }""")
    result = compile_ok(src)
    assert "Ing.Sub.tb" in tables(result)
    assert 'name: "Ing.Sub.tb"' in result.p4info_text()


def test_field_list_ids_may_be_named_constants_and_enum_members():
    src = program("apply { clone_preserving_field_list(CloneType.I2E, 5, FL);"
                  " clone_preserving_field_list(CloneType.I2E, 5, (bit<8>)E.X); }",
                  decls="const bit<8> FL = 1; enum bit<8> E { X = 2 }",
                  meta_fields="@field_list(FL) bit<8> a; @field_list(E.X) bit<8> b;")
    lists = {f["id"]: f["elements"] for f in compile_ok(src).bmv2["field_lists"]}
    assert lists[1] == [{"type": "field", "value": ["scalars", "meta_t.a"]}]
    assert lists[2] == [{"type": "field", "value": ["scalars", "meta_t.b"]}]


def test_switch_in_a_function_is_accepted_as_by_p4c():
    compile_ok(program("apply { bit<8> r = f(hdr.eth.ether_type[7:0]); }",
                       decls="bit<8> f(in bit<8> x) { switch (x) { 1: { return 2; } } "
                             "return 1; }"))


def test_local_constants_of_type_int_fold():
    src = program("apply { const int k = 5; hdr.eth.ether_type = (bit<16>)k + 1; }")
    assert "0x0006" in str(compile_ok(src).bmv2["actions"])


def test_a_loop_may_set_a_variable_declared_before_it_which_keeps_its_last_value():
    src = program("apply { bit<8> p; for (p = 1; p < 9; p = p << 1) { } "
                  "hdr.eth.ether_type = (bit<16>)p; }")
    assert "0x10" in str(compile_ok(src).bmv2["actions"])


def test_lookahead_as_a_statement_and_inside_an_expression():
    src = program("apply { }").replace(
        "state start { pkt.extract(hdr.eth);",
        "state start { pkt.lookahead<bit<8>>(); meta.m = pkt.lookahead<bit<8>>() + 1; "
        "pkt.extract(hdr.eth);").replace("struct meta_t {  }", "struct meta_t { bit<8> m; }")
    ops = compile_ok(src).bmv2["parsers"][0]["parse_states"][0]["parser_ops"]
    assert [op["op"] for op in ops][:2] == ["set", "set"]


def test_conditional_operator_groups_to_the_left_as_in_p4c():
    # (true ? true : false) ? false : true is false; grouped to the right it would be true
    src = program("apply { hdr.eth.ether_type = (true ? true : false ? false : true) "
                  "? 16w1 : 16w2; }")
    assert "0x0002" in str(compile_ok(src).bmv2["actions"])
    _, message = refusal(program("apply { hdr.eth.ether_type = hdr.eth.ether_type == 1 ? 16w1 "
                                 ": hdr.eth.ether_type == 2 ? 16w2 : 16w3; }"))
    assert "different types: bit<16> and bool" in message

def test_an_unused_variable_in_the_deparser_is_dropped_as_by_p4c():
    src = program("apply { }").replace("apply { pkt.emit(hdr.eth); }",
                                       "apply { bit<8> x = 1; pkt.emit(hdr.eth); }")
    deparser = compile_ok(src).bmv2["deparsers"][0]
    assert deparser["order"] == ["eth"]


def test_static_asserts_that_hold_are_true_and_leave_nothing_behind():
    src = program("apply { static_assert(true); f(); if (OK) { sm.egress_spec = 1; } }",
                  decls='const bool OK = static_assert(V1MODEL_VERSION >= 20160101, "old");\n'
                        'void f() { static_assert(static_assert(true, "")); }')
    result = compile_ok(src)
    ingress = next(p for p in result.bmv2["pipelines"] if p["name"] == "ingress")
    assert all("static_assert" not in str(a) for a in result.bmv2["actions"])
    assert ingress["conditionals"] == []      # OK folded to true


def test_a_free_form_annotation_may_hold_characters_p4_has_no_token_for():
    src = program("apply { }", decls="@scrabble(\n  - That's it. ` $ 0xdeadbeef\n)\n"
                                      "header q_t { bit<8> a; }")
    compile_ok(src)
    line, message = refusal(program("apply { sm.egress_spec = 1 $ 2; }"))
    assert (line, message) == (12, "unexpected character '$'")


def test_an_unknown_table_property_is_ignored_with_a_warning_as_by_p4c():
    result = compile_ok(program("table t { actions = { NoAction; } junk = 1; }\n"
                                "apply { t.apply(); }"))
    assert any("unknown table property 'junk'" in w for w in map(str, result.warnings))


POSITIONAL_MAIN = "V1Switch(P(), VC(), Ing(), Eg(), CC(), Dep()) main;"


def with_main(main: str) -> str:
    return program("apply { sm.egress_spec = 3; }").replace(POSITIONAL_MAIN, main)


def test_named_package_arguments_in_any_order_are_the_positional_ones():
    named = compile_ok(with_main("V1Switch(dep = Dep(), ig = Ing(), p = P(), eg = Eg(),\n"
                                 "         vr = VC(), ck = CC()) main;"))
    positional = compile_ok(with_main(POSITIONAL_MAIN))
    assert named.bmv2 == positional.bmv2

# ---- refused, as p4c refuses them ------------------------------------------------------------
TABLE = """
        action a(bit<9> p) {{ sm.egress_spec = p; }}
        table t {{
            key = {{ hdr.eth.ether_type : ternary; }}
            actions = {{ a; }}
            const entries = {{ {entries} }}
        }}
        apply {{ t.apply(); }}"""

SUB = "control Sub(inout bit<16> t)(bit<16> v) { apply { t = v; } }"
TOP = ("control Top(inout headers_t hdr, inout meta_t meta, inout standard_metadata_t sm)"
       "\n(bit<9> port) { apply { sm.egress_spec = port; } }")

PARSER_EXTERNS = """register<bit<16>>(4) r;
    counter(4, CounterType.packets) c;
    state start {"""
DIGEST16 = """bit<16> digest16(in bit<48> v) {
    bit<16> h; hash(h, HashAlgorithm.crc16, 16w0, {v}, 17w65536); return h;
}"""


def in_parser_start(stmt: str) -> str:
    return program("apply { }", decls=DIGEST16).replace(
        "    state start {", PARSER_EXTERNS).replace(
        "pkt.extract(hdr.eth); transition", f"pkt.extract(hdr.eth); {stmt} transition")


def in_checksum_control(stmt: str, control: str = "CC") -> str:
    """The skeleton with `stmt` as the apply block of its checksum control `control` (VC, on
    line 10, or CC, on line 15)."""
    empty = f"control {control}(inout headers_t hdr, inout meta_t meta) {{ apply {{ }} }}"
    return program("apply { }").replace(empty, empty.replace("{ }", f"{{ {stmt} }}"))


LOG_DECLS = "struct in_t { bit<4> a; }\nstruct s_t { bit<8> x; in_t y; }"


def log_program(values: str) -> str:
    return program(f'apply {{ log_msg("h={{}} s={{}}", {values}); }}', decls=LOG_DECLS,
                   meta_fields="s_t s; in_t n;")


REFUSED = {
    "priority_annotation_before_the_keys": (
        program(TABLE.format(entries="1 &&& 1 : a(1);\n@priority(5) 2 &&& 2 : a(2);")), 18,
        "annotations on a table entry go after its action"),
    "switch_in_an_action": (
        program("action a() { switch (hdr.eth.ether_type) { 1: { } default: { } } }\n"
                "table t { actions = { a; } default_action = a(); }\napply { t.apply(); }"), 12,
        "a switch statement is not allowed in an action"),
    "for_loop_in_a_parser": (
        program("apply { }").replace(
            "state start {", "state start { bit<8> k = 0; for (bit<8> i = 0; i < 3; "
                             "i = i + 1) { k = k + i; }"), 8,
        "a for loop is not allowed in a parser state"),
    "int_variable": (program("apply { int x = 5; hdr.eth.ether_type = (bit<16>)x; }"), 12,
                     "variable 'x' cannot have type int"),
    "typedef_declared_twice": (program("apply { }", decls="typedef bit<8> T;\ntypedef bit<8> T;"),
                               5, "'T' is declared twice"),
    # p4c_samples sweep (session 56): these two were accepted, the first 'default' winning
    "switch_with_two_default_labels": (
        program("apply { switch (hdr.eth.ether_type) { 1: { } default: { }\n"
                "default: { sm.egress_spec = 1; } } }"), 13,
        "switch has more than one 'default' label"),
    "action_called_in_a_parser": (
        program("apply { }", decls="action mark(inout bit<16> t) { t = 1; }").replace(
            "state start { pkt.extract(hdr.eth);",
            "state start { pkt.extract(hdr.eth); mark(hdr.eth.ether_type);"), 8,
        "action 'mark' cannot be called in a parser"),
    "int_parameter_with_a_direction": (
        program("action a(in int v) { hdr.eth.ether_type = hdr.eth.ether_type + v; }\n"
                "apply { a(2); }"), 12, "parameter 'v' of type int cannot have a direction"),
    "defaultonly_action_in_an_entry": (
        program(TABLE.replace("actions = {{ a; }}", "actions = {{ @defaultonly a; }}")
                .format(entries="1 &&& 1 : a(1);")), 17,
        "action 'a' is listed @defaultonly: it cannot be an entry"),
    "tableonly_action_as_the_default": (
        program("action a() { }\ntable t { actions = { @tableonly a; }\ndefault_action = a(); }\n"
                "apply { t.apply(); }"), 14,
        "action 'a' is listed @tableonly: it cannot be the default action"),
    "parser_that_never_ends": (
        program("apply { }").replace(
            "state start { pkt.extract(hdr.eth); transition accept; }",
            "state start { pkt.extract(hdr.eth); transition again; }\n"
            "    state again { transition start; }"), 7,
        "parser 'P' never reaches the accept or reject state"),
    "shift_of_an_int_by_a_run_time_amount": (
        program("apply { hdr.eth.ether_type = (1 << hdr.eth.ether_type[3:0]) + 16w2; }"), 12,
        "of an int without a width by an amount known only at run time"),
    "shift_of_an_int_constant_by_a_run_time_amount": (
        program("const int K = 4;\napply { hdr.eth.ether_type = K << hdr.eth.ether_type[3:0]; }"),
        13, "of an int without a width by an amount known only at run time"),
    "two_actions_of_a_table_with_one_control_plane_name": (   # (p4c fails on an assertion)
        program("@name(\".foo\") action a1() { }\n@name(\".foo\") action a2() { }\n"
                "table t { actions = { a1; a2; } default_action = a1(); }\n"
                "apply { t.apply(); }"), 14,
        "table 't' lists actions 'a1' and 'a2', which have the same control-plane name '.foo'"),
    "key_expression_without_a_name": (
        program("action a() { }\ntable t { key = { (bit<8>)hdr.eth.ether_type : exact; }\n"
                "actions = { a; } default_action = a(); }\napply { t.apply(); }"), 13,
        "this key expression needs a @name annotation"),
    "key_sum_without_a_name": (
        program("action a() { }\ntable t { key = { hdr.eth.ether_type + 1 : exact; }\n"
                "actions = { a; } default_action = a(); }\napply { t.apply(); }"), 13,
        "this key expression needs a @name annotation"),
    "hash_of_a_single_field": (
        program("apply { hash(hdr.eth.ether_type, HashAlgorithm.crc16, 16w0, hdr.eth.src, "
                "16w1024); }"), 12, "hash(): the data must be a list { ... }, a struct or a header"),
    "headers_type_that_is_a_header": (
        program("apply { }").replace("out headers_t hdr", "out ethernet_t hdr")
        .replace("pkt.extract(hdr.eth)", "pkt.extract(hdr)")
        .replace("inout headers_t hdr", "inout ethernet_t hdr")
        .replace("in headers_t hdr", "in ethernet_t hdr").replace("pkt.emit(hdr.eth)",
                                                                  "pkt.emit(hdr)"), 7,
        "the parser's headers parameter must be a struct, not header ethernet_t"),
    "error_constant_key_without_a_name": (
        program("action a() { }\ntable t { key = { error.NoError : exact; }\n"
                "actions = { a; } default_action = a(); }\napply { t.apply(); }"), 13,
        "this key expression needs a @name annotation"),
    # session 57: keyset values of another type than their key (p4c's 'SelectExpression' and
    # 'Entry' type errors), error values as keys, and what P4Info cannot describe
    "select_case_wider_than_its_key": (
        program("apply { }").replace("transition accept; }", "transition select("
                                     "hdr.eth.ether_type) { 8w1 : accept; default : accept; } }"),
        8, "a value of type bit<8> cannot match a key of type bit<16>"),
    "select_mask_wider_than_its_key": (
        program("apply { }").replace("transition accept; }", "transition select("
                                     "hdr.eth.ether_type) { 1 &&& 32w3 : accept; default : "
                                     "accept; } }"),
        8, "a value of type bit<32> cannot match a key of type bit<16>"),
    "select_on_a_bool_with_an_int_case": (
        program("apply { }").replace("transition accept; }", "transition select("
                                     "hdr.eth.ether_type == 1) { 1 : accept; default : accept; "
                                     "} }"),
        8, "a value of type int cannot match a key of type bool"),
    "value_set_narrower_than_its_key": (
        program("apply { }").replace("state start {", "value_set<bit<8>>(4) pvs;\n"
                                     "    state start {").replace(
            "transition accept; }", "transition select(hdr.eth.ether_type) { pvs : accept; "
                                    "default : accept; } }"),
        9, "a value of type bit<8> cannot match a key of type bit<16>"),
    "value_set_struct_with_a_struct_field": (
        program("apply { }", decls="struct In { bit<16> a; } struct VS { bit<16> f; In i; }")
        .replace("state start {", "value_set<VS>(4) pvs;\n    state start {").replace(
            "transition accept; }", "transition select(hdr.eth.ether_type, hdr.eth.ether_type) "
                                    "{ pvs : accept; default : accept; } }"),
        8, "value set 'pvs': field 'i' of struct VS is struct In"),
    "select_on_an_error": (
        program("apply { }", meta_fields="error e;").replace(
            "transition accept; }", "transition select(meta.e) { error.NoError : accept; "
                                    "default : accept; } }"),
        8, "a select cannot match on an error value"),
    "entry_wider_than_its_key": (
        program(TABLE.format(entries="32w1 &&& 1 : a(1);")), 17,
        "a value of type bit<32> cannot match a key of type bit<16>"),
    "entry_int_for_an_enum_key": (
        program("table t { key = { meta.s : exact; } actions = { NoAction; }\n"
                "const entries = { 1 : NoAction(); } }\napply { t.apply(); }",
                decls="enum bit<16> SE { A = 1 }", meta_fields="SE s;"), 13,
        "a value of type int cannot match a key of type enum SE"),
    "entry_matching_an_error": (
        program("table t { key = { meta.e : exact; } actions = { NoAction; }\n"
                "const entries = { error.NoError : NoAction(); } }\napply { t.apply(); }",
                meta_fields="error e;"), 13, "an entry cannot match an error value"),
    "table_key_of_an_enum_without_a_width": (
        program("table t { key = { meta.k : exact; } actions = { NoAction; } }\n"
                "apply { t.apply(); }", decls="enum K { X, Y }", meta_fields="K k;"), 12,
        "a table key of enum K has no width P4Runtime can name"),
    "actions_of_two_controls_with_one_control_plane_name": (
        program('@name("._drop") action drop_in() { mark_to_drop(sm); }\n'
                "table t { actions = { drop_in; } default_action = drop_in(); }\n"
                "apply { t.apply(); }").replace(
            "control Eg(inout headers_t hdr, inout meta_t meta, inout standard_metadata_t sm) "
            "{ apply { } }",
            "control Eg(inout headers_t hdr, inout meta_t meta, inout standard_metadata_t sm) {\n"
            '@name("._drop") action drop_out() { mark_to_drop(sm); }\n'
            "table u { actions = { drop_out; } default_action = drop_out(); }\n"
            "apply { u.apply(); } }"), 17,
        "has the control-plane name '_drop', as another action has"),
    "bool_action_data": (
        program("action a(bool b) { }\ntable t { key = { hdr.eth.dst : exact; } actions = { a; } }"
                "\napply { t.apply(); }"), 13,
        "action 'a' takes 'b' of type bool from the control plane"),
    "exit_in_a_function_called_by_a_function": (
        program("apply { g(); }", decls="void f() { if (true) { exit; } }\nvoid g() { f(); }"),
        4, "'exit' is not allowed in a function ('f')"),
    "static_assert_that_fails": (
        program('apply { static_assert(1 == 2, "one is not two"); }'), 12,
        "static assertion failed: one is not two"),
    "static_assert_known_only_at_run_time": (
        program("apply { static_assert(hdr.eth.isValid()); }"), 12,
        "static_assert needs a condition known at compile time"),
    # a sub-control's or sub-parser's arguments were not checked against its parameters
    "sub_control_argument_of_another_width": (
        program("Sub() s;\napply { s.apply(hdr.eth.ether_type, 16w1); }",
                decls="control Sub(inout bit<16> v, in bit<8> w) { apply { } }"), 13,
        "cannot assign bit<16> to bit<8>"),
    "sub_control_with_too_few_arguments": (
        program("apply { Sub.apply(hdr.eth.ether_type); }",
                decls="control Sub(inout bit<16> v, in bit<8> w) { apply { } }"), 12,
        "control 'Sub' takes 2 arguments, not 1"),
    "sub_parser_with_too_many_arguments": (
        program("apply { }", decls="parser Tag(packet_in pkt, out ethernet_t e) { "
                                   "state start { pkt.extract(e); transition accept; } }")
        .replace("state start { pkt.extract(hdr.eth);",
                 "state start { Tag.apply(pkt, hdr.eth, 8w1);"), 8,
        "parser 'Tag' takes 2 arguments, not 3"),
    "action_out_argument_that_is_a_constant": (
        program("action a(out bit<8> x) { x = 1; }\napply { a(8w1); }"), 13,
        "this expression cannot be assigned to"),
    "package_arguments_partly_named": (
        with_main("V1Switch(P(), vr = VC(), ig = Ing(), eg = Eg(), ck = CC(), dep = Dep()) main;"),
        17, "arguments must be all named or all positional"),
    "package_argument_of_no_parameter": (
        with_main("V1Switch(p = P(), vr = VC(), ig = Ing(), eg = Eg(), ck = CC(), zz = Dep()) "
                  "main;"), 17, "'V1Switch' has no parameter named 'zz'"),
    "package_argument_named_twice": (
        with_main("V1Switch(p = P(), p = P(), ig = Ing(), eg = Eg(), ck = CC(), dep = Dep()) "
                  "main;"), 17, "an argument is named twice"),
    "package_argument_missing": (
        with_main("V1Switch(p = P(), vr = VC(), ig = Ing(), eg = Eg(), ck = CC()) main;"), 17,
        "no argument for parameter 'dep' of 'V1Switch'"),
    "table_applied_in_two_branches_going_on_differently": (
        program("table t { key = { hdr.eth.dst : exact; } actions = { NoAction; } }\n"
                "apply { if (hdr.eth.src == 0) { t.apply(); sm.egress_spec = 1; }\n"
                "else { t.apply(); } }"), 14,
        "table 't' is applied more than once, with different code after each apply"),
    "register_of_bools": (
        program("register<bool>(2) r;\napply { r.write(0, true); }"), 12,
        "register of bool: BMv2 registers hold only bit<> or int<> values"),
    "register_of_a_struct": (
        program("register<S>(2) r;\napply { }", decls="struct S { bit<8> x; }"), 12,
        "register of struct S: BMv2 registers hold only bit<> or int<> values"),
    # constructors (session 58): top-level instances and constructor arguments were unchecked
    "control_instantiated_at_the_top_level": (
        with_main("Ing() ig;\nV1Switch(P(), VC(), ig, Eg(), CC(), Dep()) main;"), 17,
        "a control cannot be instantiated at the top level"),
    "parser_instantiated_at_the_top_level": (
        with_main("P() p;\nV1Switch(p, VC(), Ing(), Eg(), CC(), Dep()) main;"), 17,
        "a parser cannot be instantiated at the top level"),
    "constructor_argument_missing": (
        program("Sub() s;\napply { s.apply(hdr.eth.ether_type); }", decls=SUB), 12,
        "the constructor of 'Sub' takes 1 arguments, not 0"),
    "constructor_argument_too_many": (
        program("Sub(1, 2) s;\napply { s.apply(hdr.eth.ether_type); }", decls=SUB), 12,
        "the constructor of 'Sub' takes 1 arguments, not 2"),
    "constructor_argument_of_another_width": (
        program("Sub(8w1) s;\napply { s.apply(hdr.eth.ether_type); }", decls=SUB), 12,
        "cannot assign bit<8> to bit<16>"),
    "constructor_argument_named_wrongly": (
        program("Sub(w = 1) s;\napply { s.apply(hdr.eth.ether_type); }", decls=SUB), 12,
        "'Sub' has no constructor parameter named 'w'"),
    "constructor_argument_not_a_constant": (
        program("bit<16> x = 1;\nSub(x) s;\napply { s.apply(hdr.eth.ether_type); }",
                decls=SUB), 13,
        "constructor argument for 'v' must be a compile-time constant"),
    "package_argument_constructor_argument_missing": (
        with_main("V1Switch(P(), VC(), Top(), Eg(), CC(), Dep()) main;").replace(
            "V1Switch(", TOP + "\nV1Switch("), 19,
        "the constructor of 'Top' takes 1 arguments, not 0"),
    # extern calls in a parser state (session 58): p4c's BMv2 back end converts none
    "register_write_in_a_parser": (
        in_parser_start("r.write(0, hdr.eth.ether_type);"), 12,
        "calls an extern ('register_write') that cannot run in a parser"),
    "counter_in_a_parser": (
        in_parser_start("c.count(0);"), 12, "calls an extern ('count') that cannot run"),
    "mark_to_drop_in_a_parser": (
        in_parser_start("mark_to_drop(sm);"), 12,
        "calls an extern ('mark_to_drop') that cannot run in a parser"),
    "hash_in_a_parser_through_a_function": (
        in_parser_start("hdr.eth.ether_type = digest16(hdr.eth.src);"), 12,
        "calls an extern ('modify_field_with_hash_based_offset') that cannot run"),
    # log_msg's values (session 58): p4c's BMv2 back end types these lists' fields as unknown
    "log_msg_of_a_bare_value": (log_program("8w3"), 13, "must be a list expression"),
    "log_msg_of_a_header_among_other_values": (
        log_program("{hdr.eth, 8w1}"), 13, "a header in a list only as its sole item"),
    "log_msg_of_a_struct_in_a_list": (
        log_program("{meta.n}"), 13, "a struct in log_msg's list is not supported"),
    "log_msg_of_a_nested_struct": (
        log_program("meta.s"), 13, "a struct holding a struct or header is refused by p4c"),
    "package_block_parameter_of_another_direction": (
        program("apply { }").replace("control VC(inout headers_t hdr", "control VC(in headers_t hdr"),
        10, "parameter 'hdr' of the verify checksum control must be 'inout'"),
    "loop_variable_as_a_slice_bound": (
        program("apply { for (bit<8> i = 0; i < 8; i = i + 1) { hdr.eth.src[i:i] = 1; } }"),
        12, "the loop variable 'i' is not"),
    "deprecated_resubmit_with_data": (program("apply { resubmit({sm.ingress_port}); }"), 12,
                                      "'resubmit' (deprecated in v1model.p4) is not implemented"),
    "deprecated_clone3": (program("apply { clone3(CloneType.I2E, 32w5, {sm.ingress_port}); }"),
                          12, "'clone3' (deprecated in v1model.p4) is not implemented"),
    "unterminated_string": (program('apply { log_msg("no end); }'), 12,
                            "unterminated string literal"),
    "update_checksum_data_reads_its_field": (
        in_checksum_control("update_checksum(true, { hdr.eth.src, hdr.eth.ether_type }, "
                            "hdr.eth.ether_type, HashAlgorithm.csum16);"), 15,
        "update_checksum's data reads the field it updates"),
    "update_checksum_data_computed": (
        in_checksum_control("update_checksum(true, { hdr.eth.src[7:0] }, hdr.eth.ether_type, "
                            "HashAlgorithm.csum16);"), 15,
        "computations are not supported in update_checksum's data"),
    "verify_checksum_data_boolean": (
        in_checksum_control("verify_checksum(true, { hdr.eth.src, true }, hdr.eth.ether_type, "
                            "HashAlgorithm.csum16);", "VC"), 10,
        "computations are not supported in verify_checksum's data"),
    "switch_label_after_default": (
        program("apply { switch (hdr.eth.ether_type) { default: { }\n"
                "1: { sm.egress_spec = 1; } } }"), 13,
        "switch label after the 'default' label"),
}


@pytest.mark.parametrize("name", sorted(REFUSED))
def test_refusals_are_located_and_name_the_feature(name):
    src, line, message = REFUSED[name]
    got_line, got = refusal(src)
    assert message in got and got_line == line, (got_line, got)


@pytest.mark.skipif(not P4C.exists(), reason="reference p4c not installed")
@pytest.mark.parametrize("name", sorted(REFUSED))
def test_real_p4c_refuses_them_too(name, tmp_path):
    path = tmp_path / "p.p4"
    path.write_text(REFUSED[name][0])
    done = subprocess.run([str(P4C), "-I", str(P4C_INCLUDE), "-o", str(tmp_path / "p.json"),
                           "--p4runtime-files", str(tmp_path / "p.p4info.txtpb"), str(path)],
                          capture_output=True, text=True, timeout=120)   # (inaemu makes both)
    assert done.returncode != 0, done.stderr


@pytest.mark.parametrize("key", [
    "hdr.eth.ether_type & 0xff", "hdr.eth.ether_type[7:0]", "hdr.eth.isValid()", "16w5",
    "sm.ingress_port", "hdr.eth.ether_type[7:0] & 0xf", "hdr.s[hdr.eth.ether_type[0:0]].f",
    "hdr.eth.ether_type + 1 : exact @name(\"sum\")",
    "(bit<8>)hdr.eth.ether_type : exact @name(\"c\")",
    "error.NoError : exact @name(\"k\")", "sm.parser_error"])
def test_keys_p4c_names_or_that_carry_a_name_are_accepted(key):
    element = key if " : " in key else f"{key} : exact"
    compile_ok(program("action a() { }\n"
                       f"table t {{ key = {{ {element}; }} actions = {{ a; }} "
                       "default_action = a(); }\napply { t.apply(); }",
                       decls="header s_t { bit<8> f; }", header_fields="s_t[2] s;"))


@pytest.mark.parametrize("data", ["hdr.eth", "{ hdr.eth.src, hdr.eth.dst }", "hdr",
                                  "{ hdr.eth.src }"])
def test_hash_data_p4c_takes_is_accepted(data):
    compile_ok(program(f"apply {{ hash(hdr.eth.ether_type, HashAlgorithm.crc16, 16w0, {data}, "
                       "16w1024); }"))


@pytest.mark.parametrize("stmt", [
    "update_checksum(true, { hdr.eth }, hdr.eth.ether_type, HashAlgorithm.csum16);",
    "update_checksum(true, { { hdr.eth.src }, hdr.eth.dst }, hdr.eth.ether_type, "
    "HashAlgorithm.csum16);",
    "update_checksum_with_payload(true, { hdr.eth.src, hdr.eth.ether_type }, "
    "hdr.eth.ether_type, HashAlgorithm.csum16);",
    "update_checksum(hdr.eth.ether_type == 0, { hdr.eth.src, 8w1, (-8s3) }, hdr.eth.ether_type, "
    "HashAlgorithm.csum16);"])
def test_checksum_data_p4c_takes_is_accepted(stmt):
    """The whole header holding the updated field, a nested list, the updated field in a
    `_with_payload` list, the field in the condition: p4c's BMv2 back end takes them all."""
    compile_ok(in_checksum_control(stmt))


def test_verify_checksum_data_may_hold_the_field_it_checks():
    compile_ok(in_checksum_control("verify_checksum(true, { hdr.eth.src, hdr.eth.ether_type }, "
                                   "hdr.eth.ether_type, HashAlgorithm.csum16);", "VC"))


def test_a_local_action_may_share_a_global_actions_plain_name():
    compile_ok(program("@name(\"foo\") action a1() { }\n"
                       "table t { actions = { a1; foo; } default_action = a1(); }\n"
                       "apply { t.apply(); }", decls="action foo() { }"))


@pytest.mark.parametrize("shift", ["16w1 << hdr.eth.ether_type[3:0]", "1 << 3",
                                   "(bit<16>)1 << hdr.eth.ether_type[3:0]",
                                   "hdr.eth.ether_type << (2 + 1)"])
def test_shifts_p4c_accepts_are_accepted(shift):
    compile_ok(program(f"apply {{ hdr.eth.ether_type = {shift}; }}"))


@pytest.mark.parametrize("transition", [
    "transition select(hdr.eth.ether_type) { 1: again; }",      # no match: reject
    "transition select(hdr.eth.ether_type) { 1: again; default: accept; }",
])
def test_a_parser_that_can_end_only_through_a_select_is_accepted(transition):
    compile_ok(program("apply { }").replace(
        "state start { pkt.extract(hdr.eth); transition accept; }",
        "state start { pkt.extract(hdr.eth); transition again; }\n"
        f"    state again {{ {transition} }}"))


# ---- refused where inaemu unrolls or desugars: the limits -----------------------------------
@pytest.mark.parametrize("body, line, message", [
    ("for (bit<8> i = 0; i < hdr.eth.ether_type[7:0]; i = i + 1) { }", 12,
     "its condition is not a compile-time constant"),
    ("for (bit<8> i = 0; i < 4; i = i + 1) { i = 3; }", 12,
     "the body assigns the loop variable 'i'"),
    ("for (bit<16> i = 0; i < 2000; i = i + 1) { }", 12, "runs more than 1024 times"),
    ("break;", 12, "'break' outside a for loop"),
])
def test_loop_limits_are_located(body, line, message):
    got_line, got = refusal(program(f"apply {{ {body} }}"))
    assert message in got and got_line == line, (got_line, got)


def test_whole_header_comparison_with_a_call_operand_is_refused():
    src = program("apply { if (hdr.eth == mk()) { } }",
                  decls="ethernet_t mk() { ethernet_t e; return e; }")
    _, got = refusal(src)
    assert "contains a call" in got


def test_a_stacks_last_copied_as_a_whole_header_is_refused_with_the_reason():
    """p4c accepts `h = stack.last` in a parser, but its JSON aborts simple_switch (an
    assign_header from a stack_field 'last'); inaemu refuses and says what works instead."""
    src = program("apply { }", header_fields="ethernet_t[2] tags; ethernet_t copy;").replace(
        "pkt.extract(hdr.eth);", "pkt.extract(hdr.eth); pkt.extract(hdr.tags.next); "
                                 "hdr.copy = hdr.tags.last;")
    line, message = refusal(src)
    assert line == 8 and "a stack's .last cannot be copied as a whole header" in message
    assert "lastIndex" in message


def test_a_varbit_variable_lives_in_a_one_field_local_header():
    src = program("apply { varbit<64> saved = hdr.body.data; hdr.copy.data = saved; }",
                  decls="header body_t { varbit<64> data; }",
                  header_fields="body_t body; body_t copy;")
    bmv2 = compile_ok(src).bmv2
    headers = {h["name"]: h["header_type"] for h in bmv2["headers"]}
    box = next(t for t in bmv2["header_types"] if t["name"] == headers["saved"])
    assert box["fields"] == [["value", "*"]]
    copies = [p["parameters"] for a in bmv2["actions"] for p in a["primitives"]]
    assert [{"type": "field", "value": ["saved", "value"]},
            {"type": "field", "value": ["body", "data"]}] in copies


def test_tuple_variables_become_one_variable_per_element():
    src = program("apply { tuple<bit<8>, bit<16>> t = {1, 2}; hdr.eth.ether_type = t[1]; }")
    fields = [f[0] for t in compile_ok(src).bmv2["header_types"] if t["name"] == "scalars_0"
              for f in t["fields"]]
    assert "t_0" in fields and "t_1" in fields


def test_a_tuple_variable_may_hold_a_header_stack():
    """Its element is a local stack `t_0` (this was an internal error: the declaration the
    desugaring wrote for the element had no form for a stack type)."""
    src = program("apply { tuple<ethernet_t[2]> t; t[0][1].ether_type = 7;\n"
                  "hdr.eth.ether_type = t[0][1].ether_type; }")
    stacks = [st["name"] for st in compile_ok(src).bmv2["header_stacks"]]
    assert stacks == ["t_0"]


def _log_msgs(bmv2: dict) -> list:
    return [p["parameters"] for a in bmv2["actions"] for p in a["primitives"]
            if p["op"] == "log_msg"]


@pytest.mark.parametrize("values, text, count", [
    ("{hdr.eth}", "h=(dst:{},src:{},ether_type:{}) s={}", 3),   # a list's sole header
    ("hdr.eth", "h={} s={}", 3),                                # a bare header: its fields
    ("meta.n", "h={} s={}", 1),                                 # a bare flat struct
    ("{8w1, meta.n.a}", "h={} s={}", 2),
])
def test_log_msg_values_are_what_p4c_makes_of_them(values, text, count, tmp_path):
    """A header or struct among log_msg's values is its fields, a list's sole header's `{}`
    written `(f:{},...)`, as p4c writes them (a header was refused before)."""
    src = log_program(values)
    (got_text, got_values), = _log_msgs(compile_ok(src).bmv2)
    assert got_text["value"] == text and len(got_values["value"]) == count
    if P4C.exists():
        path = tmp_path / "p.p4"
        path.write_text(src)
        subprocess.run([str(P4C), "-I", str(P4C_INCLUDE), "-o", str(tmp_path / "p.json"),
                        str(path)], check=True, capture_output=True, timeout=120)
        (p4c_text, p4c_values), = _log_msgs(json.loads((tmp_path / "p.json").read_text()))
        assert p4c_text == got_text and len(p4c_values["value"]) == count


def test_a_varbit_in_the_metadata_struct_is_refused_at_its_field():
    """p4c places it in a JSON header of a field named '*'; inaemu refuses it, located at
    the field, where it was an internal error."""
    line, message = refusal(program("apply { }", meta_fields="varbit<8> v;"))
    assert line == 6 and "field 'v' of meta_t" in message
    assert "cannot lay out a varbit<8>" in message


@pytest.mark.skipif(not P4C.exists(), reason="reference p4c not installed")
def test_entry_priorities_agree_with_p4c_on_simple_switch(tmp_path):
    """programs/entry_priorities uses `priority =` in `const entries`, which p4c refuses (the
    spec allows it); with plain `entries` p4c takes it, and p4c's JSON on real simple_switch
    passes the same STF, so inaemu's priorities (and `@priority`) are p4c's."""
    from p4switch.reference import compile_p4, find_toolchain, run_stf_bmv2
    programs = Path(__file__).parent / "programs"
    source = (programs / "entry_priorities.p4").read_text()
    variant = tmp_path / "entry_priorities.p4"
    variant.write_text(source.replace("const entries = {", "entries = {"))
    toolchain = find_toolchain()
    built = compile_p4(toolchain, variant, cache_dir=tmp_path / "p4c")
    assert built.ok, built.stderr
    outcome = run_stf_bmv2(built.json_path, programs / "entry_priorities.stf", toolchain=toolchain)
    assert outcome.passed, outcome.report


@pytest.mark.skipif(not P4C.exists(), reason="reference p4c not installed")
@pytest.mark.parametrize("path", ["p4src/ina.p4", "tests/p4/ecn.p4", "tests/p4/firewall.p4",
                                  "tests/p4/header_struct_fields.p4",
                                  "tests/p4/p4runtime_annotations.p4",
                                  "tests/p4/p4info_order.p4"])
def test_p4info_text_is_p4cs_byte_for_byte(path, tmp_path):
    """Directly called actions (ecn, firewall), whole-byte values, p4c's ids and names;
    @pkginfo, @id on fields and parameters, documentation, selector sizes, a string over
    several lines, a removed table's direct counter (p4runtime_annotations); the order of
    tables and actions across sub-controls, direct invocations and top-level actions, and a
    `type`'s annotations (p4info_order)."""
    from p4switch.compiler import compile_file
    source = Path(__file__).resolve().parents[2] / path
    out = tmp_path / "p.p4info.txtpb"
    done = subprocess.run([str(P4C), "-I", str(P4C_INCLUDE), "-o", str(tmp_path / "p.json"),
                           "--p4runtime-files", str(out), str(source)],
                          capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    assert compile_file(str(source)).p4info_text() == out.read_text()


TYPE_SPECS = program("register<int<8>>(4) r;\nregister<E>(2) re;\n"
                     "apply { r.write(0, 8s1); re.write(0, E.A); digest<D>(1, {meta.a, meta.b}); }",
                     decls="enum bit<8> E { A = 1 }\nstruct D { int<8> a; bool b; }",
                     meta_fields="int<8> a; bool b;")


def test_registers_and_digest_fields_name_their_types_as_p4c_does(tmp_path):
    info = compile_ok(TYPE_SPECS).p4info
    specs = {r.preamble.name.split(".")[-1]: r.type_spec for r in info.registers}
    assert specs["r"].bitstring.int.bitwidth == 8              # signed, not bit<8>
    assert specs["re"].serializable_enum.name == "E"
    assert info.type_info.serializable_enums["E"].underlying_type.bitwidth == 8
    members = info.type_info.structs["D"].members
    assert members[0].type_spec.bitstring.int.bitwidth == 8
    assert members[1].type_spec.HasField("bool")
    if P4C.exists():
        path = tmp_path / "p.p4"
        path.write_text(TYPE_SPECS)
        done = subprocess.run([str(P4C), "-o", str(tmp_path / "p.json"), "--p4runtime-files",
                               str(tmp_path / "p.txtpb"), str(path)], capture_output=True,
                              text=True, timeout=120)
        assert done.returncode == 0, done.stderr
        assert compile_ok(TYPE_SPECS).p4info_text() == (tmp_path / "p.txtpb").read_text()


ANONYMOUS_PROFILES = program(
    "action a(bit<9> p) { sm.egress_spec = p; }\n"
    "table t { key = { hdr.eth.dst : exact; } actions = { a; }\n"
    "implementation = action_profile(32w16); }\n"
    "table u { key = { hdr.eth.src : exact; hdr.eth.dst : selector; } actions = { a; }\n"
    "implementation = action_selector(HashAlgorithm.crc16, 32w8, 32w14); }\n"
    "apply { u.apply(); t.apply(); }")


def test_an_implementation_without_a_name_has_bmv2_json_and_no_p4info():
    """p4c writes BMv2 JSON for it, naming the instances action_profile_<n> in the order of the
    JSON's tables (the order they are applied), selectors too, and
    refuses it only when asked for P4Info (session 59: inaemu refused it outright)."""
    result = compile_source(ANONYMOUS_PROFILES, "p.p4")
    pipeline = result.bmv2["pipelines"][0]
    assert [(t["name"], t.get("action_profile")) for t in pipeline["tables"]
            if t.get("action_profile")] == [("Ing.u", "action_profile_0"),
                                            ("Ing.t", "action_profile_1")]
    assert [(p["name"], p["id"]) for p in pipeline["action_profiles"]] == [
        ("action_profile_0", 0), ("action_profile_1", 1)]
    with pytest.raises(CompileError) as info:
        result.p4info
    assert "p.p4:14:" in str(info.value) and "without a name" in str(info.value)


@pytest.mark.skipif(not P4C.exists(), reason="reference p4c not installed")
def test_real_p4c_names_them_so_and_refuses_only_their_p4info(tmp_path):
    path = tmp_path / "p.p4"
    path.write_text(ANONYMOUS_PROFILES)
    base = [str(P4C), "-I", str(P4C_INCLUDE), "-o", str(tmp_path / "p.json"), str(path)]
    assert subprocess.run(base, capture_output=True, timeout=120).returncode == 0
    pipeline = json.loads((tmp_path / "p.json").read_text())["pipelines"][0]
    assert [(t["name"], t.get("action_profile")) for t in pipeline["tables"]
            if t.get("action_profile")] == [("Ing.u", "action_profile_0"),
                                            ("Ing.t", "action_profile_1")]
    with_p4info = base + ["--p4runtime-files", str(tmp_path / "p.p4info.txtpb")]
    assert subprocess.run(with_p4info, capture_output=True, timeout=120).returncode != 0
