"""One-token mutations of real programs: the compiler answers each with a program or with
located errors, never an internal error or a traceback (a fixed, small sample; the full sweep
of several thousand mutations is how the messages in test_diagnostics.py were found)."""

from __future__ import annotations

import random
import re
from pathlib import Path

import pytest

from p4switch.compiler import CompileError, compile_source

ROOT = Path(__file__).resolve().parents[2]
PROGRAMS = [ROOT / "tests" / "compiler" / "programs" / n
            for n in ("control_locals.p4", "parser_ifs.p4", "entry_priorities.p4", "calls.p4")]
_TOKEN = re.compile(r'"(?:\\.|[^"\\])*"|[A-Za-z_]\w*|\d\w*|&&&|<<|>>|<=|>=|==|!=|&&|\|\||\S')
PER_PROGRAM = 30


def mutations(path: Path, count: int, seed: int):
    text = path.read_text()
    offsets, pos = [], 0
    for ln in text.splitlines(keepends=True):  # skip comments and preprocessor lines
        if not ln.lstrip().startswith(("#", "//")):
            body = ln.split("//")[0]
            offsets += [(pos + m.start(), pos + m.end()) for m in _TOKEN.finditer(body)]
        pos += len(ln)
    rng = random.Random(seed)
    for _ in range(count):
        start, end = rng.choice(offsets)
        kind = rng.randrange(3)
        if kind == 0:
            yield text[:start] + text[end:]
        elif kind == 1:
            yield text[:end] + " " + text[start:end] + text[end:]
        else:
            other_start, other_end = rng.choice(offsets)
            yield text[:start] + text[other_start:other_end] + text[end:]


@pytest.mark.parametrize("path", PROGRAMS, ids=[p.stem for p in PROGRAMS])
def test_mutated_programs_get_located_errors(path):
    errors = 0
    for mutated in mutations(path, PER_PROGRAM, seed=len(path.name)):
        try:
            compile_source(mutated, path.name)
        except CompileError as exc:
            errors += 1
            for file, line, col, message in exc.diagnostics:
                assert "internal compiler error" not in message, message
                assert file == path.name or Path(file).name in ("core.p4", "v1model.p4"), file
                if file == path.name:
                    assert 1 <= line <= mutated.count("\n") + 2 and col >= 1, (line, col, message)
    assert errors >= PER_PROGRAM // 2  # most one-token changes break a program
