"""The difftest batch's worker processes start fresh, never as forks of the caller.

In the test suite one process ran the P4Runtime server tests (live gRPC objects, streams) and
then a batch; its forked workers inherited those objects, and a worker's garbage collector ran
their finalizers, which wait on gRPC threads a fork does not copy: workers hung or crashed
("Fatal Python error: Segmentation fault ... Garbage-collecting") and the batch never ended.
"""

from __future__ import annotations

import pytest

from p4switch.difftest import batch
from p4switch.reference import find_toolchain

CALLER_STATE = "as imported"


def caller_state(_: int) -> str:
    return CALLER_STATE


def test_batch_workers_do_not_inherit_the_callers_memory():
    global CALLER_STATE
    CALLER_STATE = "changed by the caller after import"   # a fork would see this
    try:
        with batch.worker_pool(2) as pool:
            seen = pool.map(caller_state, range(4))
    finally:
        CALLER_STATE = "as imported"
    assert seen == ["as imported"] * 4


@pytest.mark.skipif(find_toolchain() is None, reason="reference toolchain not installed")
def test_a_batch_runs_in_those_workers():
    reports = sorted(batch.run_batch(range(3), processes=2, bmv2=False), key=lambda r: r.seed)
    assert [r.seed for r in reports] == [0, 1, 2]
