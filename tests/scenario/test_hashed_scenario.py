"""Hashed sharing in a scenario (docs/protocol.md §3.3, docs/scenarios.md): jobs arrive and end
while the switches run, each added and removed over P4Runtime with its host aggregator; every
sum is correct, chunks went both ways, and once every job has ended no cell of the shared pool
is owned and no job's entries are left."""

from __future__ import annotations

import pytest

from inaemu.scenario import model as m
from inaemu.scenario.sim_engine import SimScenario

OWNER = "MyIngress.ina_owner"


def scenario(aggregation="single", **options) -> m.Scenario:
    net = m.Network("leaf-spine", leaves=2, spines=2, hosts_per_leaf=3, loss_percent=1.0)
    jobs = (m.Job("a", "ina", ("h1", "h4"), m.Workload(24 * 1024, 2, 0.0), 0.0, None, "sp1"),
            m.Job("b", "ina", ("h2", "h5"), m.Workload(24 * 1024, 2, 0.0), 0.002, None, "sp1"),
            m.Job("c", "ina", ("h3", "h6"), m.Workload(16 * 1024, 1, 0.0), 0.0, "a", "sp1"))
    return m.Scenario(net, jobs, (), m.Options(seed=2, elems_k=32, pool_size=16,
                                               aggregation=aggregation, **options), "hashed")


def test_jobs_come_and_go_on_the_shared_pool() -> None:
    engine = SimScenario(scenario(sharing="hashed", shared_pairs=7, switch_pps=1e6))
    engine.run()
    for run in engine.runs:
        assert run.state == "done", run.error
        assert run.iterations and all(it.correct for it in run.iterations)
        assert len(run.host_aggregators) == 1
    on_hosts = sum(s.aggregator.counters.results_multicast
                   for run in engine.runs for s in run.host_aggregators)
    assert on_hosts > 0
    switch = engine.net.switches["sp1"].switch
    assert switch.counter_read("MyIngress.ina_contributions", 1)[0] > 0   # some in the switch
    assert not any(switch.register_read_all(OWNER))                      # nothing left owned
    assert switch.table_entries("MyIngress.ina_sharing") == []
    assert switch.table_entries("MyIngress.ina_jobs") == []


def test_hashed_trees_come_and_go_with_a_host_aggregator_per_tier() -> None:
    """aggregation: tree (docs/scenarios.md): every tree switch of a job hashes into its pool,
    each with a host aggregator on the job's worker host nearest it; the sums are exact, and
    when every job has ended no cell of any pool is owned and no job's entries are left."""
    engine = SimScenario(scenario("tree", sharing="hashed", shared_pairs=5, switch_pps=1e6))
    engine.run()
    for run in engine.runs:
        assert run.state == "done", run.error
        assert run.iterations and all(it.correct for it in run.iterations)
        assert len(run.host_aggregators) == 3          # sp1, l1, l2
        assert run.running_aggregators is None         # stopped with the job
    assert sum(s.aggregator.counters.results_multicast + s.aggregator.counters.packets_sent
               for run in engine.runs for s in run.host_aggregators) > 0
    for name in ("sp1", "l1", "l2"):
        switch = engine.net.switches[name].switch
        assert switch.counter_read("MyIngress.ina_contributions", 1)[0] > 0
        assert not any(switch.register_read_all(OWNER)), name
        assert switch.table_entries("MyIngress.ina_sharing") == []
        assert switch.table_entries("MyIngress.ina_jobs") == []


def test_sharing_must_be_static_or_hashed() -> None:
    with pytest.raises(m.ScenarioError, match="static or hashed"):
        m.Options(sharing="atp")
