"""Every host all-reduce algorithm in the simulator: correct (within the float32 summation bound
every worker's record checks) at 2..16 workers, powers of two or not, with 0 % and 5 % loss on
every link, on a star and on a fat-tree (the hierarchical ring then groups by edge switch)."""

from __future__ import annotations

import pytest

from hosts.collectives import HOST_ALGOS
from inaemu.sim import SimJob, simulate
from topologies.builders import fat_tree, star

ALGOS = [a for a in HOST_ALGOS if a != "ring"]


def run(algo, topology, hosts, size, loss):
    result = simulate(topology, [SimJob(1, tuple(hosts))], algo=algo, size_bytes=size,
                      loss=loss, bw=100, seed=3, time_limit=120)
    assert result.correct, [(r.host, r.error, r.max_abs_err, r.err_bound)
                            for r in result.records if not r.correct]
    assert len(result.records) == len(hosts)
    return result


@pytest.mark.parametrize("algo", ALGOS)
@pytest.mark.parametrize("n", [2, 3, 5, 6, 7, 8, 11, 16])
def test_lossless_star(algo, n):
    topology = star(n)
    result = run(algo, topology, [h.name for h in topology.hosts], 4096 + 12, 0.0)
    assert sum(r.retransmissions for r in result.records) == 0


@pytest.mark.parametrize("algo", ALGOS)
@pytest.mark.parametrize("n", [3, 8, 13])
def test_five_percent_loss_star(algo, n):
    topology = star(n)
    result = run(algo, topology, [h.name for h in topology.hosts], 16384, 5.0)
    assert sum(r.retransmissions for r in result.records) > 0


@pytest.mark.parametrize("algo", ALGOS)
def test_fat_tree_sixteen_workers_with_loss(algo):
    topology = fat_tree(4)
    run(algo, topology, [h.name for h in topology.hosts], 8192, 5.0)


def test_hierarchical_ring_groups_by_edge_switch():
    """Topology-aware placement: on fat_tree(4) with all 16 hosts, the two hosts under one edge
    switch form a group, so a small (latency-bound) all-reduce takes 2(g-1) + 2(G-1) = 16 steps
    instead of the flat ring's 30 (longer paths, though), and finishes sooner."""
    topology = fat_tree(4)
    hosts = [h.name for h in topology.hosts]
    times = {}
    for algo in ("ring", "hring"):
        result = run(algo, topology, hosts, 4096, 0.0)
        times[algo] = max(r.time_s for r in result.records)
    assert times["hring"] < 0.9 * times["ring"]


def test_a_dead_peer_ends_every_worker_with_an_error():
    topology = star(4)
    hosts = [h.name for h in topology.hosts]
    result = simulate(topology, [SimJob(1, tuple(hosts))], algo="ps", size_bytes=1 << 18,
                      bw=100, seed=1, deaths={"h2": 0.001}, stall_timeout=1.0, time_limit=60)
    assert not result.correct
    assert all(r.error for r in result.records)
