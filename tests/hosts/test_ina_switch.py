"""InaSessions against the real p4src/ina.p4 in-process: sums within the bound, also under loss."""

from __future__ import annotations

import numpy as np
import pytest

from hosts.ina_session import InaSession
from hosts.quantize import error_bound

from tests.hosts.inproc import ina_switch, star_network, tree_network

K = 8
JOB = 5


def sessions(n: int, *, pool_size: int = 4, window: int = 4,
             ids: list[int] | None = None) -> list[InaSession]:
    return [InaSession(job=JOB, worker=w, n=n, k=K, pool_size=pool_size, window=window,
                       rto=1e-3, rto_max=8e-3, max_retx=30) for w in ids or range(n)]


def gradients(n: int, length: int, seed: int) -> list[np.ndarray]:
    rng = np.random.default_rng(seed)
    return [(rng.standard_normal(length) * 10.0 ** rng.integers(-3, 3)).astype(np.float32)
            for _ in range(n)]


@pytest.mark.parametrize("loss", [0.0, 0.01, 0.10])
@pytest.mark.parametrize("n", [2, 4, 8])
def test_workers_all_reduce_through_ina_p4(n: int, loss: float) -> None:
    sw = ina_switch(K, job=JOB, n=n, pool_size=4)
    workers = sessions(n)
    # two calls: chunk positions and MAX-round versions continue across calls (protocol §4)
    for call, length in enumerate([107, 61]):
        xs = gradients(n, length, seed=100 * n + call)
        fabric = star_network(sw, workers, loss=loss, seed=int(loss * 1000) + n + call)
        fabric.run([s.start(x, fabric.now) for s, x in zip(workers, xs)])
        exact = np.sum(np.array(xs, dtype=np.float64), axis=0)
        global_max = max(float(np.max(np.abs(x))) for x in xs)
        for s in workers:
            assert s.done
            assert s.result.dtype == np.float32 and s.result.shape == (length,)
            assert np.array_equal(s.result, workers[0].result)
            bound = error_bound(global_max, n, s.result)
            assert np.all(np.abs(s.result.astype(np.float64) - exact) <= bound)
            assert s.global_max == np.float32(global_max)
        if loss >= 0.10:
            assert fabric.stats.dropped > 0
            assert sum(s.counters.retransmissions for s in workers) > 0
        if loss == 0.0:
            assert sum(s.counters.retransmissions for s in workers) == 0
    assert workers[0].next_position == 14 + 8
    assert workers[0].max_rounds == 2


def test_integer_all_reduce_is_exact_and_wraps_like_the_switch() -> None:
    n = 3
    sw = ina_switch(K, job=JOB, n=n, pool_size=2)
    workers = sessions(n, pool_size=2, window=2)
    rng = np.random.default_rng(9)
    xs = [rng.integers(-2**31, 2**31, size=50, dtype=np.int64).astype(np.int32) for _ in range(n)]
    fabric = star_network(sw, workers, loss=0.05, seed=3)
    fabric.run([s.start_integers(x, 0.0) for s, x in zip(workers, xs)])
    wrapped = (np.sum(np.array(xs, dtype=np.int64), axis=0) + 2**31) % 2**32 - 2**31
    for s in workers:
        assert s.result.dtype == np.int32
        assert np.array_equal(s.result.astype(np.int64), wrapped)


def test_window_smaller_than_pool_and_all_zero_input() -> None:
    n = 2
    sw = ina_switch(K, job=JOB, n=n, pool_size=4)
    workers = sessions(n, pool_size=4, window=1)
    fabric = star_network(sw, workers, loss=0.0, seed=1)
    fabric.run([s.start(np.zeros(20, np.float32), 0.0) for s in workers])
    for s in workers:
        assert np.array_equal(s.result, np.zeros(20, np.float32))
        assert s.scale == 1.0


@pytest.mark.parametrize("loss", [0.0, 0.05])
def test_workers_of_a_two_level_tree(loss: float) -> None:
    leaves, per_leaf = 2, 3
    n = leaves * per_leaf                      # the scale and `count` cover every worker
    workers = sessions(n, ids=[j for _ in range(leaves) for j in range(per_leaf)])
    net = tree_network(K, job=JOB, leaves=leaves, per_leaf=per_leaf, pool_size=4,
                       sessions=workers, loss=loss, seed=1)
    for call, length in enumerate([70, 45]):
        xs = gradients(n, length, seed=7 + call)
        net.run([s.start(x, net.now) for s, x in zip(workers, xs)])
        exact = np.sum(np.array(xs, dtype=np.float64), axis=0)
        global_max = max(float(np.max(np.abs(x))) for x in xs)
        for s in workers:
            assert s.done and np.array_equal(s.result, workers[0].result)
            assert np.all(np.abs(s.result - exact) <= error_bound(global_max, n, s.result))
    if loss:
        assert net.stats.dropped > 0
