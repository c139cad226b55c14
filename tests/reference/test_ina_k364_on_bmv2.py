"""ina.p4 at its largest k, 364 (a full 1500-byte MTU, `inaemu run`'s default), on real p4c and
real simple_switch: an STF of two completed cells and a duplicate passes on BMv2 with p4c's JSON
and with inaemu's, and inaemu's runtime ends in the same state (frames, counters, registers).
Skipped only where the reference toolchain is not installed."""

from __future__ import annotations

import json
import shutil
import tempfile
from pathlib import Path

import pytest

from p4switch.reference import compare_outcomes, compile_p4, find_toolchain, run_stf_bmv2, \
    run_stf_inaemu
from tests.ina.packets import wrapping_sum
from tests.ina.stf_builder import W0, W1, W2, StfBuilder, aggregator_address, lanes, root_job, \
    routes

TOOLCHAIN = find_toolchain()
pytestmark = pytest.mark.skipif(TOOLCHAIN is None, reason="reference toolchain not installed")

PROGRAM = Path(__file__).resolve().parents[2] / "p4src" / "ina.p4"
K = 364
DEFINES = {"INA_K": str(K), "INA_CELLS": "16"}
JOB = 7


def stf_text() -> str:
    b = StfBuilder(K, ["ina.p4 at k = 364: two cells of three workers, then a duplicate"])
    routes(b)
    aggregator_address(b)
    root_job(b, JOB, base=0, pool=2, workers=[W0, W1, W2], first_node=0)
    for slot, ver in ((0, 0), (1, 1)):
        vectors = [lanes(K, [2**31 - 1 - w, -(2**31) + w], lambda i, w=w: (w + 1) * 7919 * i
                         - slot * 104729) for w in range(3)]
        ident = 0
        for w, worker in enumerate((W0, W1, W2)):
            ident = b.contribute(worker, JOB, slot, ver, vectors[w])
        b.expect_multicast(JOB, slot, ver, wrapping_sum(*vectors), ident=ident)
    # W1 again for the completed cell (a lost RESULT): the switch answers it alone, with retx
    # (an answer to a retransmission: it waited for a recovery, docs/protocol.md §3)
    ident = b.contribute(W1, JOB, 1, 1, vectors[1], retx=True)
    b.expect_result(W1, JOB, 1, 1, wrapping_sum(*vectors), count=3, ident=ident, retx=True)
    return b.finish()


@pytest.fixture(scope="module")
def work():
    folder = Path(tempfile.mkdtemp(prefix="inaemu-k364-ref-"))
    (folder / "k364.stf").write_text(stf_text())
    yield folder
    shutil.rmtree(folder, ignore_errors=True)


def test_p4c_json_on_bmv2_matches_inaemu_runtime(work) -> None:
    built = compile_p4(TOOLCHAIN, PROGRAM, defines=DEFINES, cache_dir=work / "p4c")
    assert built.ok, built.stderr
    real = run_stf_bmv2(built.json_path, work / "k364.stf", toolchain=TOOLCHAIN, registers=True)
    assert real.error is None, real.error
    assert real.passed, real.report
    mine = run_stf_inaemu(built.json_path, work / "k364.stf", registers=True)
    assert compare_outcomes(real, mine) == []


def test_inaemu_json_on_bmv2(work) -> None:
    from p4switch.compiler import compile_file
    path = work / "ina_k364.json"
    path.write_text(json.dumps(compile_file(str(PROGRAM), defines=DEFINES).bmv2))
    real = run_stf_bmv2(path, work / "k364.stf", toolchain=TOOLCHAIN, registers=True)
    assert real.error is None, real.error
    assert real.passed, real.report
    assert compare_outcomes(real, run_stf_inaemu(path, work / "k364.stf", registers=True)) == []
