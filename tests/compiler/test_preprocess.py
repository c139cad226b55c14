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


# -- C macro semantics: # and ##, variadic, dynamic macros, rescanning, painted blue --------------

def expanded(text):
    return [t for t in lines(text) if t.strip()]


def test_paste_with_a_parameter_on_the_right_builds_field_names():
    text = "#define FIELD(i) bit<8> v##i;\nheader h_t { FIELD(0) FIELD(1) }\n"
    assert expanded(text) == ["header h_t { bit<8> v0; bit<8> v1; }"]


def test_paste_uses_unexpanded_arguments_and_the_result_is_rescanned():
    text = ("#define N 4\n#define CAT(a, b) a ## b\n#define x4 rescanned\n"
            "CAT(x, N) CAT(N, y) CAT(, z) CAT(x, 4)\n")
    assert expanded(text) == ["xN Ny z rescanned"]


def test_stringize_takes_the_argument_as_written_and_escapes_quotes():
    text = ('#define STR(x) #x\n#define XSTR(x) STR(x)\n#define N 42\n'
            'STR(N) XSTR(N) STR(  a   "q"  b )\n')
    assert expanded(text) == ['"N" "42" "a \\"q\\" b"']


def test_stringize_of_a_non_parameter_is_an_error():
    with pytest.raises(CompileError) as info:
        preprocess("#define S(x) #y\nS(1)\n")
    assert "'#' in macro 'S' is not followed by a macro parameter" in str(info.value)


def test_paste_that_makes_no_single_token_is_an_error():
    with pytest.raises(CompileError) as info:
        preprocess("#define P(a, b) a ## b\nP(+, 1)\n")
    assert "pasting '+' and '1' in macro 'P' does not give a valid token" in str(info.value)


def test_variadic_macros():
    text = ('#define LOG(fmt, ...) log_msg(fmt, {__VA_ARGS__})\n'
            '#define NAMED(args...) f(args)\n#define GNU(f, ...) g(f, ## __VA_ARGS__)\n'
            'LOG("a", x, y) LOG("b") NAMED(1, 2) GNU(1) GNU(1, 2)\n')
    assert expanded(text) == ['log_msg("a", {x, y}) log_msg("b", {}) f(1, 2) g(1) g(1, 2)']


def test_variadic_macro_needs_its_fixed_arguments():
    with pytest.raises(CompileError) as info:
        preprocess("#define V(a, b, ...) a\nV(1)\n")
    assert "macro 'V' needs at least 2 arguments, got 1" in str(info.value)


def test_line_and_file_macros():
    assert expanded("x = __LINE__;\n\ny = __LINE__; __FILE__\n") == ['x = 1;', 'y = 3; "test.p4"']


def test_nested_function_like_macros_and_macro_names_as_arguments():
    text = "#define TWICE(f, v) f(f(v))\n#define INC(v) (v + 1)\nTWICE(INC, 1)\n"
    assert expanded(text) == ["((1 + 1) + 1)"]


def test_rescan_takes_arguments_from_the_text_after_the_expansion():
    # the C standard's example: f(2)(9) -> 2*9*g
    text = "#define f(a) a*g\n#define g(a) f(a)\nf(2)(9)\n"
    assert expanded(text) == ["2*9*g"]


def test_self_reference_is_painted_blue_even_through_other_macros():
    text = "#define x 2*x\n#define AP(y) y + x\n#define A B\n#define B A\nAP(x) A B\n"
    assert expanded(text) == ["2*x + 2*x A B"]


def test_function_like_macro_name_without_arguments_stays():
    assert expanded("#define F(a) a\nF + F(1)\n") == ["F + 1"]


def test_expansion_does_not_glue_tokens_together():
    assert expanded("#define NEG -1\n#define LT <\nx = - NEG; a LT= b\n") == ["x = - -1; a < = b"]


@pytest.mark.parametrize("define", ["F(a, a) a", "F(a b) a", "F(..., x) x", "F(1) 1"])
def test_bad_parameter_lists_are_errors(define):
    with pytest.raises(CompileError) as info:
        preprocess(f"#define {define}\n")
    assert "bad parameter list" in str(info.value)


def test_token_pasting_program_compiles():
    from p4switch.compiler import compile_source
    text = ("#include <core.p4>\n#include <v1model.p4>\n#define FIELD(i) bit<8> v##i;\n"
            "header h_t { FIELD(0) FIELD(1) }\n")
    from .helpers import program
    src = program("apply { hdr.h.v1 = hdr.h.v0; }", decls=text.split("\n", 2)[2],
                  header_fields="h_t h;")
    fields = {h["name"]: h for h in compile_source(src, "t.p4").bmv2["header_types"]}
    assert [f[0] for f in fields["h_t"]["fields"]] == ["v0", "v1"]
