"""The project's STF corpus on real p4c and real simple_switch (the oracle), program by program.

For each program with an STF test (tests/p4, tests/compiler/programs, p4src, shared fixtures):
(a) real p4c accepts it; (b) p4c's JSON on real simple_switch passes the STF; (c) inaemu's JSON on
real simple_switch passes the STF and ends with the same counters and registers as on inaemu's
runtime; (d) p4c's JSON on inaemu's runtime does exactly what it does on simple_switch (same
packets, counter values and final register contents). inaemu's JSON on inaemu's runtime is
tests/p4/test_corpus.py's job. Skipped only where the reference toolchain is not installed.
"""

from __future__ import annotations

import atexit
import functools
import json
import shutil
import tempfile
from pathlib import Path

import pytest

from p4switch.reference import (compare_outcomes, compile_p4, find_toolchain, run_stf_bmv2,
                                run_stf_inaemu)

from .corpus import (BMV2_REFUSES_INAEMU_JSON, BMV2_REFUSES_P4C_JSON, P4C_MISCOMPILES,
                     P4C_REJECTS, P4INFO_REJECTS, all_cases)

TOOLCHAIN = find_toolchain()
pytestmark = pytest.mark.skipif(TOOLCHAIN is None, reason="reference toolchain not installed")

CASES = all_cases()
IDS = [c.name for c in CASES]
_WORK = Path(tempfile.mkdtemp(prefix="inaemu-reference-tests-"))   # p4c cache for the session
atexit.register(shutil.rmtree, _WORK, ignore_errors=True)


@functools.cache
def p4c_build(case, p4runtime: bool = True):
    return compile_p4(TOOLCHAIN, case.program, defines=case.defines, p4runtime=p4runtime,
                      cache_dir=_WORK / "p4c")


def p4c_json(case):
    """p4c's JSON, asking for P4Info only where p4c can describe the program to P4Runtime."""
    built = p4c_build(case, case.name not in P4INFO_REJECTS)
    if not built.ok:
        if case.name in P4C_REJECTS:
            pytest.xfail(P4C_REJECTS[case.name])
        pytest.fail(f"p4c rejects {case.program}:\n{built.stderr}")
    return built.json_path


@functools.cache
def bmv2_with_p4c_json(case):
    return run_stf_bmv2(p4c_json(case), case.test(), toolchain=TOOLCHAIN, registers=True)


@functools.cache
def inaemu_json(case) -> Path:
    from p4switch.compiler import compile_file
    config = compile_file(str(case.program), defines=case.defines).bmv2
    path = _WORK / "inaemu" / f"{case.name}.json"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(config))
    return path


def _known(table: dict, case) -> None:
    if case.name in table:
        pytest.xfail(table[case.name])


@pytest.mark.parametrize("case", CASES, ids=IDS)
def test_a_p4c_accepts(case) -> None:
    built = p4c_build(case)
    if not built.ok:
        _known(P4C_REJECTS, case)
        _known(P4INFO_REJECTS, case)
    assert built.ok, f"p4c rejects {case.program}:\n{built.stderr}"
    assert built.json_path.is_file() and built.p4info_path.is_file()


@pytest.mark.parametrize("case", CASES, ids=IDS)
def test_b_p4c_json_passes_stf_on_bmv2(case) -> None:
    json_path = p4c_json(case)
    if case.name in BMV2_REFUSES_P4C_JSON:
        outcome = bmv2_with_p4c_json(case)
        if outcome.error:
            pytest.xfail(BMV2_REFUSES_P4C_JSON[case.name])
    outcome = bmv2_with_p4c_json(case)
    assert outcome.error is None, outcome.error
    if not outcome.passed:
        _known(P4C_MISCOMPILES, case)
    assert outcome.passed, f"{json_path} on simple_switch:\n{outcome.report}"


@pytest.mark.parametrize("case", CASES, ids=IDS)
def test_c_inaemu_json_passes_stf_on_bmv2(case) -> None:
    try:
        json_path = inaemu_json(case)
    except Exception as exc:                 # a compile error is a failure of this check
        pytest.fail(f"inaemu cannot compile {case.program}: {exc}")
    outcome = run_stf_bmv2(json_path, case.test(), toolchain=TOOLCHAIN, registers=True)
    if outcome.error and case.name in BMV2_REFUSES_INAEMU_JSON:
        pytest.xfail(f"simple_switch refuses inaemu's JSON: {BMV2_REFUSES_INAEMU_JSON[case.name]}")
    assert outcome.error is None, outcome.error
    assert outcome.passed, f"inaemu's JSON on simple_switch:\n{outcome.report}"
    mine = run_stf_inaemu(json_path, case.test(), registers=True)     # and the same state
    differences = compare_outcomes(outcome, mine)
    assert not differences, "\n".join(differences)


@pytest.mark.parametrize("case", CASES, ids=IDS)
def test_d_inaemu_runtime_matches_bmv2_on_p4c_json(case) -> None:
    json_path = p4c_json(case)
    real = bmv2_with_p4c_json(case)
    if real.error:
        _known(BMV2_REFUSES_P4C_JSON, case)
        pytest.fail(real.error)
    mine = run_stf_inaemu(json_path, case.test(), registers=True)
    differences = compare_outcomes(real, mine)
    assert not differences, "\n".join(differences) + f"\ninaemu's report:\n{mine.report}"
