"""Runs every P4 program of the corpus against its STF test.

The corpus (`tests/p4/*.p4` and the project's own `p4src/*.p4`) is how the front end, the runtime
and the STF runner are proven together: each program with an `.stf` beside it is compiled and its
test run, and the test passes only if every expected packet (and counter) matches. On failure the
runner's report is shown, so the first wrong expectation is visible in the pytest output.
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

PROJECT_ROOT = Path(__file__).resolve().parents[2]
CORPUS_DIRS = (PROJECT_ROOT / "tests" / "p4", PROJECT_ROOT / "p4src")


def corpus_pairs() -> list[tuple[Path, Path]]:
    pairs = []
    for directory in CORPUS_DIRS:
        for program in sorted(directory.glob("*.p4")):
            test = program.with_suffix(".stf")
            if test.exists():
                pairs.append((program, test))
    return pairs


def test_corpus_is_not_empty() -> None:
    names = {program.stem for program, _ in corpus_pairs()}
    assert {"basic", "l3_forward", "calc", "firewall"} <= names


@pytest.mark.parametrize(
    "program, stf",
    corpus_pairs(),
    ids=[f"{p.parent.name}/{p.stem}" for p, _ in corpus_pairs()],
)
def test_program_passes_its_stf(program: Path, stf: Path) -> None:
    result = subprocess.run(
        [sys.executable, "-m", "inaemu", "stf", str(program), str(stf)],
        cwd=PROJECT_ROOT, capture_output=True, text=True, timeout=120,
    )
    report = result.stdout + result.stderr
    assert result.returncode == 0, f"{program.name} failed its STF test:\n{report}"
