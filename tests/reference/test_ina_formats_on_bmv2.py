"""p4src/ina_formats.stf (block exponents, packed int16/int8 lanes; tests/ina/stf_formats.py) on
real p4c and real simple_switch: p4c's JSON and inaemu's JSON both pass it there, and inaemu's
runtime ends in the same state (packets, counters, registers) as simple_switch on p4c's JSON.
Skipped only where the reference toolchain is not installed."""

from __future__ import annotations

import json
import shutil
import tempfile
from pathlib import Path

import pytest

from p4switch.reference import compare_outcomes, compile_p4, find_toolchain, run_stf_bmv2, \
    run_stf_inaemu

TOOLCHAIN = find_toolchain()
pytestmark = pytest.mark.skipif(TOOLCHAIN is None, reason="reference toolchain not installed")

P4SRC = Path(__file__).resolve().parents[2] / "p4src"
PROGRAM, STF = P4SRC / "ina.p4", P4SRC / "ina_formats.stf"
DEFINES = {"INA_K": "4"}


@pytest.fixture(scope="module")
def work():
    folder = Path(tempfile.mkdtemp(prefix="inaemu-formats-ref-"))
    yield folder
    shutil.rmtree(folder, ignore_errors=True)


def test_p4c_json_on_bmv2_matches_inaemu_runtime(work) -> None:
    built = compile_p4(TOOLCHAIN, PROGRAM, defines=DEFINES, cache_dir=work / "p4c")
    assert built.ok, built.stderr
    real = run_stf_bmv2(built.json_path, STF, toolchain=TOOLCHAIN, registers=True)
    assert real.error is None, real.error
    assert real.passed, real.report
    mine = run_stf_inaemu(built.json_path, STF, registers=True)
    assert compare_outcomes(real, mine) == []


def test_inaemu_json_on_bmv2(work) -> None:
    from p4switch.compiler import compile_file
    path = work / "ina_formats.json"
    path.write_text(json.dumps(compile_file(str(PROGRAM), defines=DEFINES).bmv2))
    real = run_stf_bmv2(path, STF, toolchain=TOOLCHAIN, registers=True)
    assert real.error is None, real.error
    assert real.passed, real.report
    assert compare_outcomes(real, run_stf_inaemu(path, STF, registers=True)) == []
