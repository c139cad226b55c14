"""End to end: compile, load into the project runtime, run the STF test.

Covers the shared fixtures (p4c-checked expectations) when present, and this folder's own
programs (which exercise front-end features the fixtures do not) always.
"""

from __future__ import annotations

import time
from pathlib import Path

import pytest

from tests.conftest import SHARED_FIXTURES

OWN = sorted((Path(__file__).parent / "programs").glob("*.p4"))
SHARED = sorted(SHARED_FIXTURES.glob("*/*.p4")) if SHARED_FIXTURES.is_dir() else []


def run_stf(program: Path):
    from p4switch.compiler import compile_file
    from p4switch.runtime import Switch
    from p4switch.stf import parse_stf_file
    from p4switch.stf.report import format_report
    from p4switch.stf.runner import StfRunner

    config = compile_file(program).bmv2
    test = parse_stf_file(str(program.with_suffix(".stf")))
    result = StfRunner(Switch(config), config).run(test)
    assert result.passed, f"{program.name}:\n{format_report(result)}"
    assert test.packet_count > 0


@pytest.mark.parametrize("program", OWN, ids=[p.stem for p in OWN])
def test_own_programs_pass_their_stf(program):
    run_stf(program)


@pytest.mark.parametrize("program", SHARED, ids=[p.stem for p in SHARED])
def test_shared_fixtures_pass_their_stf(program):
    run_stf(program)


def test_tutorial_sized_program_compiles_well_under_a_second():
    """Not a timing assertion on a busy machine: a generous bound that catches pathologies."""
    from p4switch.compiler import compile_file
    program = Path(__file__).parent / "programs" / "features.p4"
    started = time.process_time()
    compile_file(program)
    assert time.process_time() - started < 5.0
