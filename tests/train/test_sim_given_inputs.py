"""`simulate(..., inputs=...)`: the simulator all-reduces the vectors it is given (what `inaemu
train --net sim` passes: real gradient buckets) instead of its seeded gradients."""

from __future__ import annotations

import numpy as np
import pytest

from hosts.quantize import error_bound
from inaemu.sim import SimError, SimJob, prepare_setup, simulate
from topologies.builders import star

JOBS = [SimJob(1, ("h1", "h2", "h3"))]


def vectors(length: int, seed: int) -> list[np.ndarray]:
    rng = np.random.default_rng(seed)
    return [(rng.standard_normal(length) * 10.0 ** -w).astype(np.float32) for w in range(3)]


@pytest.mark.parametrize("algo", ["ina", "ring"])
def test_given_vectors_are_what_is_summed(algo: str) -> None:
    topo = star(3)
    setup = prepare_setup(topo, JOBS, elems_k=32)
    given = vectors(300, seed=5)
    exact = np.sum(np.stack(given).astype(np.float64), axis=0)
    result = simulate(topo, JOBS, algo=algo, size_bytes=4 * 300, elems_k=32,
                      inputs={1: given}, setup=setup)
    assert result.correct
    for record in result.records:
        error = np.abs(record.result.astype(np.float64) - exact)
        if algo == "ina":
            bound = error_bound(max(float(np.abs(v).max()) for v in given), 3, record.result)
            assert np.all(error <= bound)
        else:
            assert error.max() <= 1e-5 * np.abs(exact).max()
    # the seeded gradients (the default) are a different sum
    seeded = simulate(topo, JOBS, algo=algo, size_bytes=4 * 300, elems_k=32, setup=setup)
    assert np.abs(seeded.records[0].result - result.records[0].result).max() > 0.1


def test_wrong_inputs_are_refused() -> None:
    topo = star(3)
    with pytest.raises(SimError, match="inputs: job 1 needs 3 vectors of 300 float32"):
        simulate(topo, JOBS, algo="ring", size_bytes=4 * 300, inputs={1: vectors(299, 1)})
    with pytest.raises(SimError, match="inputs: job 1 needs 3 vectors"):
        simulate(topo, JOBS, algo="ring", size_bytes=4 * 300, inputs={2: vectors(300, 1)})
