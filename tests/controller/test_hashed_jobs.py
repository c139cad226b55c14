"""Hashed sharing (docs/protocol.md §3.3) in the controller: the shared pool's size, planning
and refusals, and, over P4Runtime against ina.p4 in the project's runtime, one pool for every
hashed job of a switch, jobs added and removed while the switch runs, cells a removed job
still owned freed, and a restarted controller that finds the pool and the jobs."""

from __future__ import annotations

import pytest

from controller.ina_control import InaJobs
from controller.ina_jobs import (FallbackServer, InaJob, InaProgram, JobRefused, plan_job,
                                 shared_pool_pairs)
from topologies.builders import star

from ina_switch_runtime import ina_switch

K, CELLS = 4, 64
PROGRAM = InaProgram(k=K, cells=CELLS, max_workers=64, counter_jobs=1024)
OWNER = "MyIngress.ina_owner"


@pytest.fixture
def network(tmp_path):
    with ina_switch(tmp_path, K, CELLS) as (switch, client, _server):
        yield star(6), switch, client


def test_pool_pairs_are_prime() -> None:
    assert [shared_pool_pairs(p) for p in (1, 2, 4, 16, 64, 61, 128)] == [1, 2, 3, 13, 61, 61,
                                                                            127]


def test_a_hashed_job_needs_a_host_aggregator_and_plans_its_sharing_entry() -> None:
    hashed = InaJob(job_id=3, workers=("h1", "h2"), switch="s1", aggregator_ip="10.0.0.254",
                    k=K, pool_size=16, sharing="hashed")
    with pytest.raises(JobRefused, match="host aggregator"):
        plan_job(star(6), PROGRAM, hashed, base=0, mgid=1024, shared=(10, 5))
    with_server = InaJob(**{**hashed.__dict__, "fallback": FallbackServer("10.0.0.6")})
    assert with_server.cells == 2                 # its MAX pair alone
    plan = plan_job(star(6), PROGRAM, with_server, base=0, mgid=1024, shared=(10, 5))
    tables = [e.table for e in plan.entries["s1"]]
    assert tables.index("ina_sharing") < tables.index("ina_jobs")
    sharing = plan.entries["s1"][tables.index("ina_sharing")]
    assert (sharing.action, sharing.params) == ("ina_share_pool",
                                                {"pool_base": 10, "pool_pairs": 5})
    with pytest.raises(JobRefused, match="not inside"):
        plan_job(star(6), PROGRAM, with_server, base=0, mgid=1024, shared=(60, 5))


def test_jobs_come_and_go_on_one_pool(network) -> None:
    topology, switch, client = network
    jobs = InaJobs(topology, {"s1": client})
    server = FallbackServer("10.0.0.6")
    a = jobs.install(1, ["h1", "h2"], "s1", k=K, pool_size=16, fallback=server,
                     sharing="hashed", shared_pairs=8)        # 7 pairs (prime)
    b = jobs.install(2, ["h3", "h4"], "s1", k=K, pool_size=16, fallback=server,
                     sharing="hashed", shared_pairs=99)       # the pool exists: ignored
    pools = {tuple(v.params.values()) for v in client.read_table("ina_sharing")}
    assert len(pools) == 1
    base, pairs = next(iter(pools))
    assert pairs == 7 and base + 14 <= CELLS
    assert {a.base, a.base + 1, b.base, b.base + 1}.isdisjoint(range(base, base + 14))
    # a static job still gets a slice of its own, outside the pool
    c = jobs.install(3, ["h5"], "s1", k=K, pool_size=4)
    assert set(range(c.base, c.base + 10)).isdisjoint(range(base, base + 14))
    # job 1 ends with two cells still owned (e.g. stopped mid-call): removal frees them,
    # job 2's stays
    switch.register_write(OWNER, base, (1 << 48) | (5 << 32) | 40)
    switch.register_write(OWNER, base + 3, (1 << 48) | (2 << 32) | 17)
    switch.register_write(OWNER, base + 4, (2 << 48) | (2 << 32) | 17)
    jobs.remove(1)
    assert [switch.register_read(OWNER, cell) for cell in (base, base + 3)] == [0, 0]
    assert switch.register_read(OWNER, base + 4) != 0
    assert 1 not in {v.match["hdr.ina.job"][0] for v in client.read_table("ina_sharing")}
    # the id is free again, and a restarted controller finds the pool and job 2
    again = InaJobs(topology, {"s1": client})
    d = again.install(4, ["h1", "h2"], "s1", k=K, pool_size=16, fallback=server,
                      sharing="hashed")
    assert {d.base, d.base + 1}.isdisjoint(range(base, base + 14))
    assert {d.base, d.base + 1}.isdisjoint({b.base, b.base + 1})
    with pytest.raises(JobRefused, match="already runs"):
        again.install(2, ["h5"], "s1", k=K, pool_size=16, fallback=server, sharing="hashed")


def test_the_first_hashed_job_must_size_the_pool(network) -> None:
    topology, _switch, client = network
    with pytest.raises(JobRefused, match="shared_pairs"):
        InaJobs(topology, {"s1": client}).install(
            1, ["h1"], "s1", k=K, pool_size=8, fallback=FallbackServer("10.0.0.6"),
            sharing="hashed")


def test_a_hashed_tree_plans_a_host_aggregator_and_the_pool_at_every_switch() -> None:
    from controller.trees import TreeJob, plan_tree, tree_shape
    from topologies.builders import leaf_spine
    topology = leaf_spine(2, 2, 2)
    job = TreeJob(5, ("h1", "h3"), K, 16, "sp1", "hashed", FallbackServer("10.0.0.1", 48885))
    assert job.cells == 2
    shape = tree_shape(topology, 5, job.workers, "sp1")
    plan = plan_tree(topology, job, shape, bases={s: 0 for s in shape.order},
                     mgids={s: 1024 for s in shape.order},
                     new_addresses={n for n in ()},
                     shared={s: (10, 7) for s in shape.order})
    ports = {}
    for switch, entry in plan.entries:
        if entry.table == "ina_fallback":
            ports[switch] = entry.params["port"]
            assert entry.params["server"] == "10.0.0.1"
    assert ports == {s: 48885 + i for i, s in enumerate(shape.order)}
    assert {s for s, e in plan.entries if e.table == "ina_sharing"} == set(shape.order)
    assert all(plan.nodes[s].fallback_port == ports[s] for s in shape.order)


def test_a_hashed_tree_puts_each_tiers_host_aggregator_on_the_worker_host_nearest_it() -> None:
    """FallbackNearTiers: a leaf's on one of its own workers, the root's on a worker below it,
    spread away from the hosts the leaves' aggregators already use where a tie allows."""
    from controller.trees import FallbackNearTiers, TreeJob, plan_tree, tier_hosts, tree_shape
    from topologies.builders import leaf_spine
    topology = leaf_spine(2, 2, 3)          # l1: h1 h2 h3, l2: h4 h5 h6
    workers = ("h1", "h2", "h4", "h5")
    shape = tree_shape(topology, 5, workers, "sp1")
    hosts = tier_hosts(topology, shape, workers)
    assert hosts == {"sp1": "h1", "l1": "h2", "l2": "h4"}
    job = TreeJob(5, workers, K, 16, "sp1", "hashed", FallbackNearTiers(48885))
    plan = plan_tree(topology, job, shape, bases={s: 0 for s in shape.order},
                     mgids={s: 1024 for s in shape.order}, new_addresses=set(),
                     shared={s: (10, 7) for s in shape.order})
    servers = {switch: (e.params["server"], e.params["port"]) for switch, e in plan.entries
               if e.table == "ina_fallback"}
    assert servers == {s: (topology.host(hosts[s]).ip, 48885 + i)
                       for i, s in enumerate(shape.order)}
    assert plan.summary()["l2"]["fallback_address"] == topology.host("h4").ip


def test_a_hashed_tree_refuses_a_missing_or_bad_host_aggregator() -> None:
    from controller.trees import FallbackNearTiers, TreeJob, check_tree_job, tree_shape
    from topologies.builders import leaf_spine
    topology = leaf_spine(2, 2, 2)
    shape = tree_shape(topology, 5, ("h1", "h3"), "sp1")
    programs = {s: PROGRAM for s in shape.order}
    for fallback, why in ((None, "needs a host aggregator"),
                          (FallbackServer("10.9.9.9"), "not a host of topology"),
                          (FallbackNearTiers(65534), "ports 65534..65534\\+2 inside")):
        job = TreeJob(5, ("h1", "h3"), K, 16, "sp1", "hashed", fallback)
        with pytest.raises(JobRefused, match=why):
            check_tree_job(topology, programs, job, shape)
