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


@pytest.mark.parametrize("aggregation", ["single", "tree"])
def test_the_report_gives_each_jobs_jct_and_its_host_aggregators_share(aggregation,
                                                                        tmp_path) -> None:
    """Every chunk of a hashed job is completed once: in its root switch's pool (one first
    contribution per member there) or by its host aggregator (a tree's: the root's); the
    two counts add up to the chunks of its calls, and the report gives the host's share."""
    import csv

    from inaemu.scenario.report import summary_lines, write_results
    engine = SimScenario(scenario(aggregation, sharing="hashed", shared_pairs=5,
                                  switch_pps=1e6))
    result = engine.run()
    chunks = {"a": 2 * (24 * 1024 // 4 // 32 + 1), "b": 2 * (24 * 1024 // 4 // 32 + 1),
              "c": 16 * 1024 // 4 // 32 + 1}             # data chunks + the MAX round per call
    for job in result.jobs:
        assert job.correct, job.error
        assert job.switch_chunks > 0 and job.host_chunks > 0, job
        assert job.switch_chunks + job.host_chunks == chunks[job.name], job
        assert job.jct_s == job.ended_s - job.arrived_s > 0
    paths = write_results(result, tmp_path)
    with open(paths["jobs.csv"]) as handle:
        rows = {row["name"]: row for row in csv.DictReader(handle)}
    for job in result.jobs:
        assert float(rows[job.name]["host_share"]) == pytest.approx(
            job.host_chunks / chunks[job.name])
        assert float(rows[job.name]["jct_s"]) == pytest.approx(job.jct_s)
    lines = summary_lines(result)
    assert "JCT s" in lines[1] and "host %" in lines[1]
    row = next(line for line in lines if line.strip().startswith("a "))
    assert row.split()[-1] == f"{100 * result.job('a').host_share:.1f}"


def test_static_jobs_have_no_host_share() -> None:
    result = SimScenario(scenario(sharing="static", switch_pps=1e6)).run()
    assert all(job.switch_chunks is None and job.host_share is None for job in result.jobs)


def test_sharing_must_be_static_or_hashed() -> None:
    with pytest.raises(m.ScenarioError, match="static or hashed"):
        m.Options(sharing="atp")
