"""Stage 1: the preprocessor (macros, conditionals, includes, line tracking)."""

from __future__ import annotations

import pytest

from p4switch.compiler import CompileError
from p4switch.compiler.preprocess import CondEvaluator

from .helpers import preprocess


def lines(text, **kw):
    return [t for t, _, _ in preprocess(text, **kw).lines]


def test_object_and_function_macros_expand():
    out = lines("#define W 16\n#define ADD(a, b) ((a) + (b))\nbit<W> x = ADD(1, W);\n")
    assert out[2] == "bit<16> x = ((1) + (16));"


def test_macro_does_not_expand_inside_identifiers_or_strings():
    out = lines('#define W 16\nbit<8> WIDTH = 1; log_msg("W");\n')
    assert out[1] == 'bit<8> WIDTH = 1; log_msg("W");'


def test_undef_removes_a_macro():
    assert lines("#define A 1\n#undef A\nA\n")[2] == "A"


def test_self_referencing_macro_does_not_loop():
    assert lines("#define A A + 1\nA\n")[1] == "A + 1"


@pytest.mark.parametrize("cond, taken", [
    ("1", True), ("0", False), ("defined(X)", True), ("!defined(X)", False),
    ("X == 3 && defined X", True), ("X > 5 || Y", False), ("(X << 2) == 12", True),
    ("X ? 0 : 1", False),
])
def test_if_expressions(cond, taken):
    out = lines(f"#define X 3\n#if {cond}\nyes\n#else\nno\n#endif\n")
    assert ("yes" in out) is taken and ("no" in out) is not taken


def test_elif_chain_takes_only_the_first_true_branch():
    text = "#if 0\na\n#elif 1\nb\n#elif 1\nc\n#else\nd\n#endif\n"
    assert [x for x in lines(text) if x] == ["b"]


def test_nested_conditionals_inside_a_false_branch_stay_off():
    text = "#ifdef NOPE\n#if 1\na\n#endif\n#else\nb\n#endif\n"
    assert [x for x in lines(text) if x] == ["b"]


def test_command_line_defines():
    assert "on" in lines("#ifdef FEATURE\non\n#endif\n", defines={"FEATURE": "1"})


def test_line_numbers_survive_directives_and_continuations():
    src = preprocess("#define LONG 1 + \\\n  2\nx\n")
    assert [(t, n) for t, _, n in src.lines if t] == [("x", 3)]


def test_line_directive_renumbers():
    src = preprocess('#line 100 "orig.p4"\nx\n')
    assert [(t, f, n) for t, f, n in src.lines if t] == [("x", "orig.p4", 100)]


def test_include_quoted_and_angle(tmp_path):
    (tmp_path / "inc").mkdir()
    (tmp_path / "inc" / "a.p4").write_text("const bit<8> A = 1;\n")
    (tmp_path / "local.p4").write_text("const bit<8> L = 2;\n")
    main = tmp_path / "main.p4"
    main.write_text('#include <a.p4>\n#include "local.p4"\n')
    from p4switch.compiler.errors import Reporter, SourceLines
    from p4switch.compiler.preprocess import Preprocessor
    src = Preprocessor(Reporter(SourceLines()), [tmp_path / "inc"]).run_file(str(main))
    text = [(t, f.rsplit("/", 1)[-1], n) for t, f, n in src.lines if t]
    assert text == [("const bit<8> A = 1;", "a.p4", 1), ("const bit<8> L = 2;", "local.p4", 1)]


def test_include_guards_prevent_double_inclusion():
    out = lines("#include <core.p4>\n#include <core.p4>\n")
    assert sum(1 for x in out if x.startswith("extern packet_in")) == 1


@pytest.mark.parametrize("text, message, line", [
    ("#error custom stop\n", "#error custom stop", 1),
    ("#if 1\nx\n", "unterminated #if", 1),
    ("#endif\n", "#endif without #if", 1),
    ('#include "missing.p4"\n', "cannot find include file 'missing.p4'", 1),
    ("#define F(a) a\nF(1, 2)\n", "macro 'F' takes 1 arguments, got 2", 2),
    ("#if 1 +\n#endif\n", "bad #if expression", 1),
    ("#frobnicate\n", "unknown preprocessor directive '#frobnicate'", 1),
])
def test_errors_are_located(text, message, line):
    with pytest.raises(CompileError) as info:
        preprocess(text)
    (file, got_line, _, got) = info.value.diagnostics[0]
    assert message in got and got_line == line and file == "test.p4"


def test_cond_evaluator_division_by_zero_is_an_error():
    with pytest.raises(ValueError):
        CondEvaluator("1 / 0").value()


def test_macro_call_spanning_lines_keeps_later_line_numbers():
    src = preprocess("#define PAIR(a, b) a + b\nx = PAIR(1,\n  2);\ny\n")
    kept = [(t.strip(), n) for t, _, n in src.lines if t.strip()]
    assert kept == [("x = 1 + 2;", 2), ("y", 4)]
