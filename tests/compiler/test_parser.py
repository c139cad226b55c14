"""Stage 2: lexer and parser (typed nodes, precedence, P4's ambiguities)."""

from __future__ import annotations

import pytest

from p4switch.compiler import CompileError
from p4switch.compiler import ast as A

from .helpers import V1MODEL_PRELUDE, parse_text


def parse_expr(text: str) -> A.Expr:
    prog = parse_text(f"const bit<32> X = {text};")
    return prog.decls[0].value


def shape(e) -> str:
    if isinstance(e, A.Binary):
        return f"({shape(e.left)} {e.op} {shape(e.right)})"
    if isinstance(e, A.Unary):
        return f"({e.op}{shape(e.expr)})"
    if isinstance(e, A.IntLit):
        return str(e.value)
    if isinstance(e, A.Name):
        return e.name
    if isinstance(e, A.Ternary):
        return f"({shape(e.cond)} ? {shape(e.then)} : {shape(e.other)})"
    if isinstance(e, A.Cast):
        return f"(cast {shape(e.expr)})"
    if isinstance(e, A.Member):
        return f"{shape(e.expr)}.{e.name}"
    if isinstance(e, A.Slice):
        return f"{shape(e.expr)}[{shape(e.hi)}:{shape(e.lo)}]"
    return type(e).__name__


@pytest.mark.parametrize("text, expected", [
    ("1 + 2 * 3", "(1 + (2 * 3))"),
    ("a & b == c", "((a & b) == c)"),          # P4: & binds tighter than ==
    ("a << 2 + 1", "(a << (2 + 1))"),
    ("a >> 2", "(a >> 2)"),
    ("a ++ b + c", "((a ++ b) + c)"),
    ("a |+| b |-| c", "((a |+| b) |-| c)"),
    ("!a && b || c", "(((!a) && b) || c)"),
    ("a < b ? c : d", "((a < b) ? c : d)"),
    ("-a * b", "((-a) * b)"),
    ("(bit<8>)a + 1", "((cast a) + 1)"),
    ("x.y[7:0]", "x.y[7:0]"),
])
def test_precedence(text, expected):
    assert shape(parse_expr(text)) == expected


def test_width_literals_keep_width_and_sign():
    e = parse_expr("8w255")
    assert (e.value, e.width, e.signed) == (255, 8, False)
    e = parse_expr("4s3")
    assert (e.value, e.width, e.signed) == (3, 4, True)
    assert parse_expr("0x1_0").value == 16
    assert parse_expr("0b101").value == 5


def test_declarations_and_statements_are_told_apart_by_type_names():
    prog = parse_text(V1MODEL_PRELUDE + """
        typedef bit<8> byte_t;
        control C(inout byte_t v) {
            apply {
                byte_t t = v;      // declaration: byte_t is a type
                v = t + 1;         // assignment
                bit<8> w;
                w = (byte_t)v;
            }
        }""")
    ctrl = prog.decls[-1]
    kinds = [type(s).__name__ for s in ctrl.apply.stmts]
    assert kinds == ["VarDecl", "Assign", "VarDecl", "Assign"]
    assert isinstance(ctrl.apply.stmts[3].rhs, A.Cast)


def test_generic_call_versus_less_than():
    prog = parse_text(V1MODEL_PRELUDE + """
        parser P(packet_in p, out bit<8> x) {
            state start {
                x = p.lookahead<bit<8>>();
                transition select(x < 4) { true: accept; default: reject; }
            }
        }""")
    state = prog.decls[-1].states[0]
    call = state.stmts[0].rhs
    assert isinstance(call, A.Call) and len(call.type_args) == 1
    assert isinstance(state.transition.select[0], A.Binary)


def test_nested_generic_closes_with_two_greater_than():
    prog = parse_text(V1MODEL_PRELUDE + "control C() { register<bit<32>>(4) r; apply { } }")
    inst = prog.decls[-1].locals[0]
    assert isinstance(inst, A.InstanceDecl) and inst.type_ref.name == "register"


def test_table_properties_and_entries():
    prog = parse_text(V1MODEL_PRELUDE + """
        control C(inout bit<8> k) {
            action a(bit<8> v) { k = v; }
            table t {
                key = { k : ternary @name("key0"); }
                actions = { a; @defaultonly NoAction; }
                const entries = {
                    8w1 &&& 8w0xF : a(3);
                    _ : a(4);
                }
                size = 16;
                const default_action = NoAction();
            }
            apply { t.apply(); }
        }""")
    table = prog.decls[-1].locals[1]
    props = {p.name: p for p in table.properties}
    assert props["key"].value[0].annotations[0].name == "name"
    assert [r.annotations[0].name for r in props["actions"].value if r.annotations] == ["defaultonly"]
    entries = props["entries"].value
    assert isinstance(entries[0].keys[0], A.Mask) and isinstance(entries[1].keys[0], A.DontCare)
    assert props["default_action"].const


def test_select_with_tuples_ranges_and_masks():
    prog = parse_text(V1MODEL_PRELUDE + """
        parser P(packet_in p, out bit<8> a, out bit<8> b) {
            state start {
                transition select(a, b) {
                    (1, 2): accept;
                    (0x10 &&& 0xF0, 3 .. 7): accept;
                    (_, default): reject;
                }
            }
        }""")
    cases = prog.decls[-1].states[0].transition.cases
    assert isinstance(cases[1].keyset.items[0], A.Mask)
    assert isinstance(cases[1].keyset.items[1], A.Range)
    assert isinstance(cases[2].keyset.items[0], A.DontCare)


def test_annotations_keep_their_arguments():
    prog = parse_text('@controller_header("packet_in") header h_t { @field_list(1, 2) bit<8> f; }')
    h = prog.decls[0]
    assert h.annotations[0].args[0].value == "packet_in"
    assert [a.value for a in h.fields[0].annotations[0].args] == [1, 2]


@pytest.mark.parametrize("text, message, col", [
    ("const bit<8> X = ;", "expected an expression, found ';'", 18),
    ("header h { bit<8> f }", "expected ';', found '}'", 21),
    ("control C() { apply { x = 1 } }", "expected ';', found '}'", 29),
    ("control C() { }", "control 'C' has no apply block", 9),
    ("const bit<8> X = 1 $ 2;", "unexpected character '$'", 20),
])
def test_syntax_errors_point_at_the_token(text, message, col):
    with pytest.raises(CompileError) as info:
        parse_text(text)
    _, line, got_col, got = info.value.diagnostics[0]
    assert got == message and line == 1 and got_col == col
