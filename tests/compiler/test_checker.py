"""Stage 3: name resolution, type checking and constant folding."""

from __future__ import annotations

import pytest

from p4switch.compiler import CompileError, compile_source
from p4switch.compiler import ast as A
from p4switch.compiler.constfold import fold
from p4switch.compiler.types import BOOL, BitT

from .helpers import V1MODEL_PRELUDE, check_text, program


def const_value(expr_text: str, type_text: str = "bit<8>"):
    prog, _ = check_text(V1MODEL_PRELUDE + f"const {type_text} X = {expr_text};")
    return fold(prog.decls[-1].value)


@pytest.mark.parametrize("expr, type_text, value", [
    ("250 + 10", "bit<8>", 4),              # wraps at the declared width
    ("8w3 - 8w5", "bit<8>", 254),
    ("8w200 |+| 8w100", "bit<8>", 255),     # saturating
    ("8w5 |-| 8w9", "bit<8>", 0),
    ("(int<8>)8w255", "int<8>", -1),
    ("4s7 |+| 4s7", "int<4>", 7),
    ("8w0xF0 >> 4", "bit<8>", 0x0F),
    ("(8w1 << 7) << 1", "bit<8>", 0),
    ("8w0xAB[7:4]", "bit<4>", 0xA),
    ("4w0xA ++ 4w0xB", "bit<8>", 0xAB),
    ("~8w0", "bit<8>", 255),
    ("true ? 8w1 : 8w2", "bit<8>", 1),
    ("7 / 2 + 7 % 2", "bit<8>", 4),
    ("(bit<8>)true", "bit<8>", 1),
])
def test_constant_folding(expr, type_text, value):
    assert const_value(expr, type_text) == value


def test_boolean_constants_fold():
    prog, _ = check_text(V1MODEL_PRELUDE + "const bool B = !(1 == 2) && (3 > 2);")
    assert fold(prog.decls[-1].value) is True


def test_constants_refer_to_earlier_constants_and_sizes():
    prog, _ = check_text(V1MODEL_PRELUDE + """
        const bit<8> A = 3;
        const bit<8> B = A * 2;
        header h_t { bit<(B + 2)> f; }""")
    assert fold(prog.decls[-2].value) == 6


def test_expressions_get_types():
    prog, _ = check_text(program("""
        action a() { meta.x = meta.x + 1; }
        apply { if (hdr.eth.isValid() && meta.x == 2) { a(); } }""", meta_fields="bit<12> x;"))
    ing = [d for d in prog.decls if isinstance(d, A.ControlDecl) and d.name == "Ing"][0]
    assign = ing.locals[0].body.stmts[0]
    assert assign.rhs.type == BitT(12)
    assert assign.rhs.right.type == BitT(12)      # the literal took its width from the context
    assert ing.apply.stmts[0].cond.type == BOOL


def test_enum_members_and_errors_are_constants():
    prog, checker = check_text(V1MODEL_PRELUDE + """
        enum bit<8> Kind { A = 1, B = 7 }
        error { MyError }
        const Kind K = Kind.B;
        const error E = error.MyError;""")
    assert fold(prog.decls[-2].value) == 7
    assert fold(prog.decls[-1].value) == checker.errors["MyError"] == 7


@pytest.mark.parametrize("ingress, message", [
    ("apply { meta.nope = 1; }", "struct meta_t has no field 'nope'"),
    ("apply { undefined_thing = 1; }", "'undefined_thing' is not declared"),
    ("apply { meta.x = hdr.eth.ether_type; }", "cannot assign bit<16> to bit<12> (use a cast)"),
    ("apply { if (meta.x) { } }", "condition must be bool, not bit<12>"),
    ("apply { meta.x = meta.x + 16w1; }", "operands have different types: bit<12> and bit<16> (use a cast)"),
    ("action a(bit<8> v) { } apply { a(); }", "action 'a' takes 1 arguments, not 0"),
    ("table t { key = { meta.x : fuzzy; } actions = { NoAction; } } apply { t.apply(); }",
     "unknown match kind 'fuzzy'"),
    ("table t { actions = { nothing; } } apply { t.apply(); }", "'nothing' is not an action"),
    ("action a() { } table t { actions = { NoAction; } default_action = a(); } apply { t.apply(); }",
     "default_action action 'a' is not in the table's actions list"),
    ("apply { hdr.eth.dst[50:0] = 0; }", "slice [50:0] is out of range for bit<48>"),
    ("apply { sm.ingress_port = 1; meta.x = hdr.eth.frobnicate(); }",
     "header ethernet_t has no field 'frobnicate'"),
    ("register<bit<8>>(4) r; apply { r.read(meta.x); }", "register.read() takes 2 arguments, not 1"),
    ("apply { bit<8> v = 4w1 ++ 8w1; }", "cannot assign bit<12> to bit<8> (use a cast)"),
    ("apply { meta.x = (bit<12>)\"str\"; }", "cannot cast string to bit<12>"),
    ("action a() { } action a() { } apply { }", "'a' is declared twice in this scope"),
    ("apply { mark_to_drop(sm, sm); }", "'mark_to_drop' takes 0 or 1 arguments, not 2"),
    ("apply { mark_to_drop(meta); }", "expected struct standard_metadata_t, not struct meta_t"),
    ("apply { hdr.eth.setValid(1); }", "setValid() takes no arguments"),
    ("apply { sm.egress_spec = true; }", "cannot assign bool to bit<9> (use a cast)"),
    ("table t { key = { hdr.eth.dst : exact; } actions = { NoAction; } }"
     " action a() { t.apply(); } apply { a(); }", "a table cannot be applied inside an action or function"),
    ("action a(in bit<8> v) { v = 1; } apply { a(1); }", "cannot assign to read-only parameter 'v'"),
    ("action a() { return 1; } apply { a(); }", "only functions can return a value"),
])
def test_type_errors(ingress, message):
    text = program(ingress, meta_fields="bit<12> x;")
    with pytest.raises(CompileError) as info:
        compile_source(text, "t.p4")
    assert info.value.diagnostics[0][3] == message


def test_parser_checks_states():
    text = program("apply { }").replace("transition accept;", "transition nowhere;", 1)
    with pytest.raises(CompileError) as info:
        compile_source(text, "t.p4")
    assert info.value.diagnostics[0][3] == "transition to unknown state 'nowhere'"
