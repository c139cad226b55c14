"""Types made by `type` (P4_16 7.6) are distinct from what they rename, as in p4c.

Every form here was run through real p4c-bm2-ss (with P4Info) when written: the refused ones
fail there too, the accepted ones compile (re-checked below where /opt/p4ref is installed).
Packets through such types: tests/p4/new_types.p4.
"""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest

from p4switch.compiler import CompileError, compile_source

from .helpers import program

P4C = Path("/opt/p4ref/bin/p4c-bm2-ss")

DECLS = ("type bit<8> T; type bit<8> U; type T N; type bool TB; typedef T TT;\n"
         "header h_t { T f; }")
META = "T x; U y; N n; TT z; TB bb; bit<8> b; bit<16> w;"


def source(body: str, extra_decls: str = "", parser_state: str | None = None) -> str:
    src = program(body, decls=DECLS + "\n" + extra_decls, meta_fields=META,
                  header_fields="h_t h;")
    if parser_state is not None:
        src = src.replace("state start { pkt.extract(hdr.eth); transition accept; }",
                          parser_state)
    return src


TABLE_ON_X = "table t {{ key = {{ meta.x : {kind}; }} actions = {{ NoAction; }} {rest} }}\n" \
             "apply {{ t.apply(); }}"

REFUSED = {   # name: (ingress body, extra declarations, parser state, message)
    "arithmetic": ("apply { meta.x = meta.x + meta.x; }", "", None, "'+' is not defined on T"),
    "arithmetic_with_a_literal": ("apply { meta.x = meta.x + 1; }", "", None,
                                  "'+' is not defined on T"),
    "bitwise": ("apply { meta.x = meta.x & meta.x; }", "", None, "'&' is not defined on T"),
    "relational": ("apply { if (meta.x < meta.x) { sm.egress_spec = 1; } }", "", None,
                   "'<' is not defined on T"),
    "complement": ("apply { meta.x = ~meta.x; }", "", None, "'~' needs a number, not T"),
    "shift_amount": ("apply { meta.b = meta.b << meta.x; }", "", None, "'<<' needs numbers"),
    "shifted": ("apply { meta.x = meta.x << 2; }", "", None, "'<<' needs numbers"),
    "slice": ("apply { meta.b[3:0] = meta.x[3:0]; }", "", None, "cannot slice T"),
    "concatenation": ("apply { meta.w = meta.x ++ meta.b; }", "", None,
                      "'++' needs bit<> or int<> operands"),
    "compared_with_a_literal": ("apply { if (meta.x == 1) { sm.egress_spec = 1; } }", "", None,
                                "cannot compare T with int"),
    "literal_compared_with_it": ("apply { if (1 == meta.x) { sm.egress_spec = 1; } }", "",
                                 None, "cannot compare int with T"),
    "compared_with_another_new_type": (
        "apply { if (meta.x == meta.y) { sm.egress_spec = 1; } }", "", None,
        "cannot compare T with U"),
    "assigned_its_base_type": ("apply { meta.x = meta.b; }", "", None,
                               "cannot assign bit<8> to T"),
    "assigned_a_sized_literal": ("apply { meta.x = 8w3; }", "", None,
                                 "cannot assign bit<8> to T"),
    "literal_in_a_conditional": ("apply { meta.x = meta.b == 1 ? meta.x : 2; }", "", None,
                                 "operands have different types: T and int"),
    "cast_to_another_new_type": ("apply { meta.y = (U)meta.x; }", "", None,
                                 "cannot cast T to U"),
    "cast_to_a_wider_base": ("apply { meta.w = (bit<16>)meta.x; }", "", None,
                             "cannot cast T to bit<16>"),
    "cast_past_two_renamings": ("apply { meta.b = (bit<8>)meta.n; }", "", None,
                                "cannot cast N to bit<8>"),
    "cast_to_bool": ("apply { if ((bool)meta.x) { sm.egress_spec = 1; } }", "", None,
                     "cannot cast T to bool"),
    "literal_as_an_action_argument": (
        "action a(T v) { meta.x = v; }\napply { a(3); }", "", None, "cannot pass int as T"),
    "literal_as_a_function_argument": ("apply { g(3); }", "void g(in T v) { }", None,
                                       "cannot pass int as T"),
    "new_type_as_a_bit_argument": ("apply { f(meta.x); }", "void f(in bit<8> v) { }", None,
                                   "cannot pass T as bit<8>"),
    "literal_as_an_entry_key": (
        TABLE_ON_X.format(kind="exact", rest="const entries = { 5 : NoAction(); }"), "", None,
        "a key of type T needs a value of that type, not int"),
    "mask_on_a_new_type": (
        TABLE_ON_X.format(kind="ternary",
                          rest="const entries = { (T)5 &&& (T)7 : NoAction(); }"), "", None,
        "'&&&' is not defined on T"),
    "select_on_a_new_type": (
        "apply { }", "", "state start { pkt.extract(hdr.eth); pkt.extract(hdr.h); "
                         "transition select(hdr.h.f) { (T)1 : accept; default: accept; } }",
        "a select cannot match on T"),
    "bool_new_type_as_a_condition": ("apply { if (meta.bb) { sm.egress_spec = 1; } }", "", None,
                                     "condition must be bool, not TB"),
    "bool_new_type_negated": ("apply { meta.bb = !meta.bb; }", "", None,
                              "'!' needs a bool, not TB"),
    "bool_new_type_assigned_true": ("apply { meta.bb = true; }", "", None,
                                    "cannot assign bool to TB"),
    "renamed_struct": ("apply { }", "struct S { bit<8> a; } type S TS;", None,
                       "'type' can only rename bit<>, int<>, bool or another such type, not "
                       "struct S"),
    "renamed_varbit": ("apply { }", "type varbit<8> TV;", None,
                       "'type' can only rename bit<>, int<>, bool or another such type"),
    "renamed_enum": ("apply { }", "enum bit<8> E { A = 1 } type E TE;", None,
                     "'type' can only rename"),
    "translation_without_a_width": (
        "action a(Q v) { }\ntable t { key = { meta.b : exact; } actions = { a; } }\n"
        "apply { t.apply(); }", '@p4runtime_translation("u") type bit<9> Q;',
                                    None, "@p4runtime_translation needs a URI string"),
}

ACCEPTED = {   # name: (ingress body, extra declarations)
    "equality_of_one_new_type": ("apply { if (meta.x == meta.x) { sm.egress_spec = 1; } "
                                 "if (meta.x != (T)1) { sm.egress_spec = 2; } }", ""),
    "a_literal_assigned_or_initialized": (
        "apply { T v = 3; meta.x = v; meta.x = 4; meta.x = -1; meta.x = 1 + 2; }", ""),
    "a_constant_and_a_return": ("apply { meta.x = C; meta.x = h(); }",
                                "const T C = 3; T h() { return 3; }"),
    "casts_to_and_from_the_base": ("apply { meta.x = (T)meta.b; meta.b = (bit<8>)meta.x; "
                                   "meta.x = (T)8w3; meta.n = (N)meta.x; meta.x = (T)meta.n; "
                                   "meta.b = (bit<8>)meta.x + 1; }", ""),
    "a_typedef_of_it_is_the_same_type": ("apply { meta.z = meta.x; meta.x = meta.z; }", ""),
    "a_conditional_of_one_new_type": ("apply { meta.x = meta.b == 1 ? meta.x : (T)2; }", ""),
    "table_keys_and_cast_entries": (
        TABLE_ON_X.format(kind="exact", rest="const entries = { (T)5 : NoAction(); }"), ""),
    "ternary_and_lpm_keys": (
        "table t { key = { meta.x : ternary; meta.n : lpm; } actions = { NoAction; } }\n"
        "apply { t.apply(); }", ""),
    "action_parameters_and_cast_arguments": (
        "action a(T v) { meta.x = v; }\n"
        "table t { key = { meta.b : exact; } actions = { a; } default_action = a((T)3); }\n"
        "apply { t.apply(); a((T)4); }", ""),
    "register_of_a_new_type": ("register<T>(4) r;\n"
                               "apply { r.write(0, meta.x); r.read(meta.x, 1); }", ""),
    "function_parameter_of_a_new_type": ("apply { g(meta.x); }", "void g(in T v) { }"),
    "a_signed_base": ("apply { Q q = { (TI)8s5 }; meta.b = (bit<8>)(int<8>)q.i; }",
                      "type int<8> TI; struct Q { TI i; }"),
    "translated_types": ("apply { }", '@p4runtime_translation("u", 32) type bit<9> P1;\n'
                                      '@p4runtime_translation("u", bit<32>) type bit<9> P2;\n'
                                      '@p4runtime_translation("u", string) type bit<9> P3;'),
}


def refusal(src: str) -> tuple[int, str]:
    with pytest.raises(CompileError) as info:
        compile_source(src, "p.p4")
    return info.value.diagnostics[0][1], info.value.diagnostics[0][3]


def refused_source(name: str) -> str:
    body, extra, state, _ = REFUSED[name]
    return source(body, extra, state)


@pytest.mark.parametrize("name", sorted(REFUSED))
def test_what_p4c_refuses_on_a_new_type_is_refused_and_named(name):
    _, message = refusal(refused_source(name))
    assert REFUSED[name][3] in message, message


@pytest.mark.parametrize("name", sorted(ACCEPTED))
def test_what_p4c_accepts_on_a_new_type_compiles(name):
    compile_source(source(*ACCEPTED[name]), "p.p4")


def p4c_compiles(src: str, tmp_path: Path) -> subprocess.CompletedProcess:
    path = tmp_path / "p.p4"
    path.write_text(src)
    return subprocess.run([str(P4C), "-o", str(tmp_path / "p.json"), "--p4runtime-files",
                           str(tmp_path / "p.p4info.txtpb"), str(path)],
                          capture_output=True, text=True, timeout=120)


@pytest.mark.skipif(not P4C.exists(), reason="reference p4c not installed")
@pytest.mark.parametrize("name", sorted(REFUSED))
def test_real_p4c_refuses_the_same_forms(name, tmp_path):
    assert p4c_compiles(refused_source(name), tmp_path).returncode != 0


@pytest.mark.skipif(not P4C.exists(), reason="reference p4c not installed")
@pytest.mark.parametrize("name", sorted(ACCEPTED))
def test_real_p4c_accepts_the_same_forms(name, tmp_path):
    done = p4c_compiles(source(*ACCEPTED[name]), tmp_path)
    assert done.returncode == 0, done.stderr


P4INFO_PROGRAM = source(
    "register<T>(4) r;\n"
    "action a(T v, N n, PortT p) { meta.x = v; r.write(0, v); }\n"
    "table t { key = { meta.x : exact; meta.n : exact; meta.p : exact; } actions = { a; } }\n"
    "apply { t.apply(); digest<D>(1, {meta.x, meta.p}); }",
    '@p4runtime_translation("p4.org/psa/v1/PortId_t", 32) type bit<9> PortT;\n'
    "struct D { T x; PortT p; }\n"
    '@controller_header("packet_in") header pin_t { PortT port; T x; bit<7> pad; }').replace(
    "T x; U y;", "PortT p; T x; U y;").replace("h_t h;", "h_t h; pin_t pin;")


def test_p4info_names_new_types_and_describes_them():
    info = compile_source(P4INFO_PROGRAM, "p.p4").p4info
    (table,) = info.tables
    assert [(m.bitwidth, m.type_name.name) for m in table.match_fields] == \
        [(8, "T"), (8, "N"), (32, "PortT")]      # a translated type: its SDN width
    action = next(a for a in info.actions if a.preamble.name.endswith(".a"))
    assert [(p.bitwidth, p.type_name.name) for p in action.params] == \
        [(8, "T"), (8, "N"), (32, "PortT")]
    assert info.registers[0].type_spec.new_type.name == "T"
    (meta,) = info.controller_packet_metadata
    assert [(m.bitwidth, m.type_name.name) for m in meta.metadata] == \
        [(32, "PortT"), (8, "T"), (7, "")]
    new = info.type_info.new_types
    assert new["T"].original_type.bitstring.bit.bitwidth == 8
    assert new["N"].original_type.bitstring.bit.bitwidth == 8   # under both renamings
    assert new["PortT"].translated_type.uri == "p4.org/psa/v1/PortId_t"
    assert new["PortT"].translated_type.sdn_bitwidth == 32
    members = info.type_info.structs["D"].members
    assert [m.type_spec.new_type.name for m in members] == ["T", "PortT"]


@pytest.mark.skipif(not P4C.exists(), reason="reference p4c not installed")
def test_p4info_with_new_types_is_p4cs_byte_for_byte(tmp_path):
    done = p4c_compiles(P4INFO_PROGRAM, tmp_path)
    assert done.returncode == 0, done.stderr
    ours = compile_source(P4INFO_PROGRAM, "p.p4").p4info_text()
    assert ours == (tmp_path / "p.p4info.txtpb").read_text()
