"""The set-up leaves what it made out of the cyclic collector's walks (frozen), and a run hands
it back (inaemu/sim/setup.py, driver.py): nothing stays frozen after a run."""

from __future__ import annotations

import gc

from inaemu.sim import SimJob, prepare_setup, simulate
from topologies.builders import star


def test_setup_freezes_its_objects_and_a_run_unfreezes_them():
    gc.unfreeze()
    topology = star(2)
    jobs = [SimJob(1, ("h1", "h2"), "s1")]
    setup = prepare_setup(topology, jobs, elems_k=8, pool_size=4)
    assert gc.isenabled()
    assert gc.get_freeze_count() > 0
    result = simulate(topology, jobs, algo="ina", size_bytes=256, elems_k=8, setup=setup)
    assert result.correct
    assert gc.get_freeze_count() == 0 and gc.isenabled()
