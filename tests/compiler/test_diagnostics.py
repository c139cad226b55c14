"""Diagnostics for one-token slips: each names the construct, points at the right token and,
for braces, says which block is open (see parse_errors.py and ExpressionChecker.value_problem).

Found by mutating the project's programs one token at a time and reading the messages."""

from __future__ import annotations

import pytest

from p4switch.compiler import CompileError, compile_source

from .helpers import program

BASE = program("""
    register<bit<8>>(4) regs;
    action a(bit<8> v) { hdr.eth.ether_type = (bit<16>)v; }
    table t { key = { hdr.eth.dst : exact; } actions = { a; } }
    apply { t.apply(); }""")


def diagnose(text: str) -> tuple[str, str, int]:
    """(message, the reported source line from the column on, line number)"""
    with pytest.raises(CompileError) as info:
        compile_source(text, "p.p4")
    _, line, col, message = info.value.diagnostics[0]
    lines = text.splitlines()
    return message, lines[line - 1][col - 1:] if line <= len(lines) else "", line


def edit(old: str, new: str, text: str = BASE) -> str:
    assert old in text
    return text.replace(old, new, 1)


@pytest.mark.parametrize("old, new, message, at", [
    # braces: the message says which block is open, or that none is
    ("apply { t.apply(); }\n}", "apply { t.apply(); }\n",
     "expected a declaration in control 'Ing', found 'control' (inside the '{' of line 11: is "
     "a '}' missing before it?)", "control Eg"),
    ("apply { pkt.emit(hdr.eth); } }", "apply { pkt.emit(hdr.eth); }",
     "control 'Dep' is not closed: expected '}', found end of input (the '{' at line", ""),
    ("V1Switch(", "}\nV1Switch(",
     "unexpected '}' (this '}' closes no block: is there one too many, or a '{' missing?)", "}"),
    ("actions = { a; } }", "actions = { a; } } }",
     "control 'Ing' has no apply block (its body ends at line 15: is there a '}' too many "
     "before?)", "Ing("),
    ("apply { t.apply(); }", "apply { t.apply()); }",
     "expected ';' after the statement, found ')' (this ')' closes no '(': is there one too "
     "many?)", "); }"),
    ("(bit<16>)v;", "(bit<16>)hdr..eth;",
     "(is a member name missing between '.' and '.'?)", "..eth"),
    # statements and declarations in the wrong place
    ("apply { t.apply(); }", "if (true) { } apply { t.apply(); }",
     "expected a declaration in control 'Ing', found 'if': statements belong inside "
     "'apply { }'", "if (true)"),
    ("apply { t.apply(); }", "apply { action b() { } t.apply(); }",
     "expected a statement, found 'action': actions, tables and states are declared outside "
     "blocks", "action b"),
    ("apply { t.apply(); }", "apply { else { } }",
     "'else' without a matching 'if'", "else"),
    ("state start { pkt.extract(hdr.eth); transition accept; }",
     "state start { pkt.extract(hdr.eth); { transition accept; } }",
     "'transition' must be the last statement of a parser state, outside any block",
     "transition accept"),
    ("apply { t.apply(); }", "{ t.apply(); }",
     "expected a declaration in control 'Ing', found '{': is 'apply' missing before it?", "{ t"),
    ("apply { t.apply(); }", "7 { t.apply(); }",
     "expected a declaration or 'apply' in control 'Ing', found '7'", "7 {"),
    ("state start {", "start {",
     "expected a declaration or a state in parser 'P', found 'start {': is 'state' missing "
     "before 'start'?", "start {"),
    ("bit<16> ether_type; }", "bit<16> ether_type; ; }",
     "expected a field (a type and a name) in header 'ethernet_t', found ';'", "; }"),
    ("V1Switch(P()", "(P()",
     "expected a declaration (header, struct, control, parser, const, an instance, ...), "
     "found '('", "(P()"),
    # names that are not values
    ("(bit<16>)v;", "(bit<16>)ethernet_t;", "'ethernet_t' is a type, not a value",
     "ethernet_t;"),
    ("(bit<16>)v;", "(bit<16>)v + regs;", "'regs' is an instance of extern register, not a value",
     "regs;"),
    ("apply { t.apply(); }", "apply { hdr.eth.dst = t; }",
     "'t' is a table (apply it with .apply()), not a value", "t; }"),
    ("(bit<16>)v;", "(bit<16>)bit.x;", "'bit' is a type, not a value: it has no member 'x'",
     "bit.x"),
    ("apply { t.apply(); }", "apply { hdr.eth.dst = hdr; }",
     "cannot assign struct headers_t to bit<48>", "hdr; }"),
])
def test_slips_get_messages_that_point_at_the_cause(old, new, message, at):
    got, where, _ = diagnose(edit(old, new))
    assert message in got, got
    assert where.startswith(at), where


def test_no_cast_advice_for_values_that_cannot_be_cast():
    got, _, _ = diagnose(edit("apply { t.apply(); }", "apply { hdr.eth.dst = hdr; }"))
    assert "use a cast" not in got
