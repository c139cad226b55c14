"""Regression tests for what the fuzzers found (docs/fuzzing.md, findings table)."""

from __future__ import annotations

import numpy as np
import pytest

from hosts import ina_wire
from hosts.ina_session import InaSession
from hosts import quantize as qz

Kind = ina_wire.Kind


def _float_session(scaling="job"):
    session = InaSession(job=1, worker=0, n=2, k=4, pool_size=4, window=4, rto=0.01,
                         rto_max=0.1, max_retx=3, scaling=scaling)
    session.start(np.linspace(-2, 2, 16, dtype=np.float32), 0.0)
    return session


def _max_result(lanes):
    values = np.array([qz.float32_bits(v) if isinstance(v, float) else v for v in lanes],
                      np.int64).astype(np.uint32).view(np.int32)
    return ina_wire.encode(ina_wire.InaPacket(kind=Kind.MAX_RESULT, job=1, worker=0, slot=0,
                                              chunk=0, values=values, count=2))


@pytest.mark.parametrize("lanes", [
    [0.5, 4.0, 4.0, 4.0],                      # lane 0 (the scale) below this worker's max
    [0x7FC00000, 0x7FC00000, 0x7FC00000, 0x7FC00000],   # NaN
    [0x7F800000, 0x7F800000, 0x7F800000, 0x7F800000],   # inf
    [4.0, 8.0, 0.0, 0.0],                      # a block lane above the global max
])
def test_a_max_result_no_worker_could_cause_is_ignored(lanes):
    # finding 1 (host_ina): a forged MAX_RESULT whose lane 0 was below the worker's own max
    # passed the check (made on the largest lane) and the codec raised ValueError out of
    # InaSession.receive, which never raises for a payload's content
    session = _float_session()
    step = session.receive(_max_result(lanes), 0.001)
    assert step.send == () and session.counters.malformed_ignored == 1
    step = session.receive(_max_result([2.0, 2.0, 2.0, 2.0]), 0.002)   # the genuine one
    assert step.send and step.send[0][0] == Kind.CONTRIB and session.scale is not None


def test_the_fuzzers_input_no_longer_escapes():
    from fuzz.hosts import ina
    from fuzz.targets import corpus_dir

    ina((corpus_dir("host_ina") / "finding-01-max-result-below-offer").read_bytes())


def test_an_include_name_too_long_for_the_file_system_is_a_located_error():
    # finding 2 (frontend): `#include <core.p...>` with a name longer than the file system
    # allows made Path.is_file raise OSError (ENAMETOOLONG): an internal compiler error at 1:1
    from p4switch.compiler import CompileError, compile_source

    source = "// a comment\n#include <" + "x" * 5000 + ".p4>\n"
    with pytest.raises(CompileError) as info:
        compile_source(source, "long.p4")
    (file, line, col, message), = info.value.diagnostics
    assert (file, line) == ("long.p4", 2) and "cannot find include file" in message
