"""The C that inaemu builds (the simulator's native core, the switch's generated controls) reads
an int's size only where CPython keeps it in `ob_size`.

From Python 3.12 an int keeps its digits' count and sign in `long_value.lv_tag`: `Py_SIZE` of an
int reads that tag (so `Py_SIZE(x) == 0` is never true of 0), and the 3.13 headers assert it
away, so a module built without NDEBUG aborts at the first such read (found on Debian 13:
ina.p4's STF aborted in the switch's `zero_item`). This machine's Python is older than that, so
this test reads the sources: every `Py_SIZE(` must sit under a preprocessor branch that only
versions before 3.12 take. Tuples, lists and bytes have their own size macros.
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
SOURCES = sorted(ROOT.glob("inaemu/sim/native/*.c")) + \
    sorted(ROOT.glob("p4switch/runtime/cgen/native*.py"))
LONG_LAYOUT_CHANGED = 0x030C0000

DIRECTIVE = re.compile(r'^\s*"?(#(?:if|ifdef|ifndef|elif|else|endif))\b(.*)')
BELOW = re.compile(r"PY_VERSION_HEX\s*<\s*0x([0-9A-Fa-f]+)")
AT_LEAST = re.compile(r"PY_VERSION_HEX\s*>=\s*0x([0-9A-Fa-f]+)")


def _only_before(condition: str) -> bool:
    """A branch taken only by versions before 3.12 (a conjunction naming such a bound)."""
    if "||" in condition:
        return False
    return any(int(v, 16) <= LONG_LAYOUT_CHANGED for v in BELOW.findall(condition))


def _else_only_before(condition: str) -> bool:
    """The #else of `condition`: taken only before 3.12 when the condition is a plain
    `PY_VERSION_HEX >= 0x030C0000` (or a later bound)."""
    bounds = AT_LEAST.findall(condition)
    return "&&" not in condition and "||" not in condition and len(bounds) == 1 and \
        int(bounds[0], 16) >= LONG_LAYOUT_CHANGED


def unguarded_size_reads(text: str) -> list[int]:
    """Line numbers of `Py_SIZE(` outside a branch that only versions before 3.12 take."""
    stack: list[list] = []          # [condition, guarded]
    found = []
    for number, line in enumerate(text.splitlines(), 1):
        match = DIRECTIVE.match(line)
        if match:
            directive, condition = match.group(1), match.group(2)
            if directive in ("#if", "#ifdef", "#ifndef"):
                stack.append([condition, directive == "#if" and _only_before(condition)])
            elif directive == "#elif" and stack:
                stack[-1][1] = _only_before(condition)
            elif directive == "#else" and stack:
                stack[-1][1] = _else_only_before(stack[-1][0])
            elif directive == "#endif" and stack:
                stack.pop()
            continue
        if "Py_SIZE(" in line and not any(guarded for _, guarded in stack):
            found.append(number)
    return found


@pytest.mark.parametrize("path", SOURCES, ids=[p.name for p in SOURCES])
def test_an_ints_size_is_read_only_where_cpython_keeps_it(path: Path) -> None:
    lines = unguarded_size_reads(path.read_text())
    assert not lines, f"{path.relative_to(ROOT)}: Py_SIZE outside a pre-3.12 branch at {lines}"


def test_the_check_finds_an_unguarded_read_and_passes_guarded_ones() -> None:
    assert unguarded_size_reads("int f(PyObject *o) {\n    return Py_SIZE(o) == 0;\n}") == [2]
    assert unguarded_size_reads(
        "#if PY_VERSION_HEX >= 0x030C0000\nx = compact(o);\n#else\nx = Py_SIZE(o);\n#endif") == []
    assert unguarded_size_reads(
        "#if X && PY_VERSION_HEX < 0x030C0000\nn = Py_SIZE(o);\n#elif 1\nm = Py_SIZE(o);\n"
        "#endif\nk = Py_SIZE(o);") == [4, 6]
    assert unguarded_size_reads(
        "#if PY_VERSION_HEX >= 0x030C0000 && Y\na;\n#else\nn = Py_SIZE(o);\n#endif") == [4]


def test_the_sources_are_found() -> None:
    names = {p.name for p in SOURCES}
    assert {"attrs.c", "eventloop.c", "nativefast.py", "nativeprelude.py"} <= names
