"""ina.p4's hashed shared pool (docs/protocol.md §3.3): the generated STF test
(tests/ina/stf_hashed.py) on inaemu's runtime, and on real simple_switch with both p4c's and
inaemu's JSON (the same packets, counters and registers), where /opt/p4ref is installed."""

from __future__ import annotations

import json
import tempfile
from pathlib import Path

import pytest

from p4switch.compiler import compile_file
from p4switch.reference import (compare_outcomes, compile_p4, find_toolchain, run_stf_bmv2,
                                run_stf_inaemu)
from p4switch.stf.parser import parse_stf

from . import stfgen
from .stf_hashed import expected_owners, hashed_test

PROGRAM = stfgen.P4SRC / "ina.p4"
TOOLCHAIN = find_toolchain()
needs_bmv2 = pytest.mark.skipif(TOOLCHAIN is None, reason="reference toolchain not installed")
OWNER = "MyIngress.ina_owner"


@pytest.fixture(scope="module")
def inaemu_k4(tmp_path_factory) -> Path:
    path = tmp_path_factory.mktemp("hashed") / "ina_k4.json"
    path.write_text(json.dumps(compile_file(str(PROGRAM), defines={"INA_K": "4"}).bmv2))
    return path


def owners(outcome) -> dict[int, int]:
    table = outcome.registers[OWNER]
    return {cell: table[cell] for cell in expected_owners()}


def test_hashed_stf_on_inaemu(inaemu_k4: Path) -> None:
    text = hashed_test(4)
    assert parse_stf(text).packet_count > 20
    outcome = run_stf_inaemu(inaemu_k4, text, registers=True)
    assert outcome.error is None, outcome.error
    assert outcome.passed, outcome.report
    assert owners(outcome) == expected_owners()


def test_hashed_stf_k32_on_inaemu() -> None:
    outcome = run_stf_inaemu(compile_file(str(PROGRAM)).bmv2, hashed_test(32))
    assert outcome.passed, outcome.report


@needs_bmv2
def test_hashed_stf_on_bmv2_with_p4c_and_inaemu_json(inaemu_k4: Path) -> None:
    text = hashed_test(4)
    built = compile_p4(TOOLCHAIN, PROGRAM, defines={"INA_K": "4"},
                       cache_dir=Path(tempfile.gettempdir()) / "inaemu-hashed-p4c")
    assert built.ok, built.stderr
    real = run_stf_bmv2(built.json_path, text, toolchain=TOOLCHAIN, registers=True)
    assert real.error is None, real.error
    assert real.passed, f"p4c's JSON on simple_switch:\n{real.report}"
    assert owners(real) == expected_owners()
    mine = run_stf_bmv2(inaemu_k4, text, toolchain=TOOLCHAIN, registers=True)
    assert mine.passed, f"inaemu's JSON on simple_switch:\n{mine.report}"
    ours = run_stf_inaemu(built.json_path, text, registers=True)
    assert compare_outcomes(real, ours) == [], "inaemu's runtime differs from simple_switch"
