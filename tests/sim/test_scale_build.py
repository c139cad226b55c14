"""What the simulator does for scale around the run (issue 30, step "scale"): the network is
built with the cyclic collector paused and leaves it as it found it; the set-up's network is
its switches alone; the run's young-generation threshold is put back after it, also when the
run raises."""

from __future__ import annotations

import gc

import pytest

from inaemu.sim import SimJob, prepare_setup, simulate
from inaemu.sim.driver import RUN_GC_YOUNG, SimTimeLimit
from inaemu.sim.native import native_loop_class
from inaemu.sim.network import SimNetwork
from topologies.builders import fat_tree, star


@pytest.mark.parametrize("collecting", [True, False])
def test_building_a_network_leaves_the_collector_as_it_was(collecting):
    was = gc.isenabled()
    try:
        (gc.enable if collecting else gc.disable)()
        net = SimNetwork(fat_tree(4), seed=0)
        assert gc.isenabled() is collecting
        assert len(net.links) == 2 * len(fat_tree(4).links) and len(net.hosts) == 16
    finally:
        (gc.enable if was else gc.disable)()


def test_a_switches_only_network_has_no_hosts_or_links():
    topology = fat_tree(4)
    net = SimNetwork(topology, seed=0, wires=False)
    assert set(net.switches) == {s.name for s in topology.switches}
    assert net.hosts == {} and net.links == {}
    assert all(node.egress == {} for node in net.switches.values())


def test_a_run_puts_the_collector_thresholds_back():
    before = gc.get_threshold()
    assert RUN_GC_YOUNG != before[0]
    topology = star(2)
    jobs = [SimJob(1, ("h1", "h2"), "s1")]
    try:
        gc.set_threshold(650, 9, 11)
        result = simulate(topology, jobs, algo="ina", size_bytes=256, elems_k=8,
                          setup=prepare_setup(topology, jobs, elems_k=8, pool_size=4))
        assert result.correct
        assert gc.get_threshold() == (650, 9, 11)
        with pytest.raises(SimTimeLimit):     # a run that raises puts them back too
            simulate(topology, jobs, algo="ina", size_bytes=1 << 16, elems_k=8,
                     time_limit=1e-6)
        assert gc.get_threshold() == (650, 9, 11)
        assert gc.get_freeze_count() == 0 and gc.isenabled()
    finally:
        gc.set_threshold(*before)



@pytest.mark.parametrize("core", ["python", "native"])
def test_delivered_frames_reads_every_links_count(core):
    if core == "native" and native_loop_class() is None:
        pytest.skip("the native core does not build here")     # CI builds it (test_cores.py)
    net = SimNetwork(star(3), seed=0, core=core)
    for name, count in (("h1", 2), ("h2", 1)):
        for _ in range(count):
            net.hosts[name].uplink.send(bytes(64))
    net.loop.run(until=1.0)
    counts = [wire.counters.delivered_packets for wire in net.links.values()]
    assert net.delivered_frames() == sum(counts) == 3
