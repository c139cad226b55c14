"""Runs every P4 program of the corpus against its STF test.

The corpus (`tests/p4/*.p4` and the project's own `p4src/*.p4`) is how the front end, the runtime
and the STF runner are proven together: each program with an `.stf` beside it is compiled by
`p4switch.compiler.compile_file`, loaded into a `p4switch.runtime.Switch` and driven by the STF
runner; the test passes only if every expected packet and counter matches. On failure the
runner's report is shown, so the first wrong expectation is visible in the pytest output.
"""

from __future__ import annotations

from pathlib import Path

import pytest

PROJECT_ROOT = Path(__file__).resolve().parents[2]
CORPUS_DIRS = (PROJECT_ROOT / "tests" / "p4", PROJECT_ROOT / "p4src")

# The tutorial programs and the project's router must always be part of the corpus.
REQUIRED = {"basic", "basic_tunnel", "calc", "ecn", "source_routing", "mri", "firewall",
            "l3_forward"}


def corpus_pairs() -> list[tuple[Path, Path]]:
    pairs = []
    for directory in CORPUS_DIRS:
        for program in sorted(directory.glob("*.p4")):
            test = program.with_suffix(".stf")
            if test.exists():
                pairs.append((program, test))
    return pairs


PAIRS = corpus_pairs()


def test_corpus_holds_the_required_programs() -> None:
    names = {program.stem for program, _ in PAIRS}
    assert REQUIRED <= names, f"missing from the corpus: {sorted(REQUIRED - names)}"


def test_every_corpus_program_has_a_test() -> None:
    """A program in tests/p4 exists to be tested (p4src may hold programs tested elsewhere)."""
    untested = [p.name for p in CORPUS_DIRS[0].glob("*.p4") if not p.with_suffix(".stf").exists()]
    assert not untested, f"programs in tests/p4 without an .stf beside them: {untested}"


@pytest.mark.parametrize("program, stf", PAIRS, ids=[f"{p.parent.name}/{p.stem}" for p, _ in PAIRS])
def test_program_passes_its_stf(program: Path, stf: Path) -> None:
    from p4switch.compiler import compile_file
    from p4switch.runtime import Switch
    from p4switch.stf import parse_stf_file
    from p4switch.stf.report import format_report
    from p4switch.stf.runner import StfRunner

    test = parse_stf_file(str(stf))
    config = compile_file(str(program)).bmv2
    result = StfRunner(Switch(config), config).run(test)
    assert result.passed, f"{program.name} failed its STF test:\n{format_report(result)}"
    assert test.packet_count > 0
