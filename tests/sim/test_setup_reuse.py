"""One set-up serves every algorithm of a run (inaemu/sim/setup.py): the switches are configured
once, each run starts from a clean data plane, and the routes are aggregated prefixes."""

from __future__ import annotations

import numpy as np
import pytest

from inaemu.sim import SimError, SimJob, prepare_setup, simulate
from topologies.builders import fat_tree, leaf_spine

SIZE, K = 2048, 8


def test_one_setup_for_ina_ring_and_ina_again():
    topology = fat_tree(4)
    workers = tuple(h.name for h in topology.hosts)
    jobs = [SimJob(3, workers, "c0", hierarchical=True)]
    setup = prepare_setup(topology, jobs, elems_k=K, pool_size=8)
    # one prefix per pod/edge instead of a /32 per host: 16 hosts x 20 switches before
    assert setup.routes < 16 * 20 / 2
    first = simulate(topology, jobs, algo="ina", size_bytes=SIZE, elems_k=K, setup=setup)
    ring = simulate(topology, jobs, algo="ring", size_bytes=SIZE, elems_k=K, setup=setup)
    # the cells were used by the first run: a second INA run works only on a cleared data plane
    again = simulate(topology, jobs, algo="ina", size_bytes=SIZE, elems_k=K, setup=setup)
    assert first.correct and ring.correct and again.correct
    assert first.setup_s == ring.setup_s == again.setup_s == 0.0
    assert again.virtual_s == first.virtual_s
    for a, b in zip(first.records, again.records):
        assert np.array_equal(a.result, b.result)


def test_setup_must_match_the_run():
    topology = leaf_spine(2, 2, 2)
    jobs = [SimJob(1, ("h1", "h3"), "sp1", hierarchical=True)]
    ring_only = prepare_setup(topology, jobs, elems_k=K, ina=False)
    with pytest.raises(SimError, match="no INA jobs installed"):
        simulate(topology, jobs, algo="ina", size_bytes=SIZE, elems_k=K, setup=ring_only)
    with pytest.raises(SimError, match="other jobs"):
        simulate(topology, [SimJob(2, ("h1", "h3"))], algo="ring", size_bytes=SIZE,
                 elems_k=K, setup=ring_only)
    assert simulate(topology, jobs, algo="ring", size_bytes=SIZE, elems_k=K,
                    setup=ring_only).correct
