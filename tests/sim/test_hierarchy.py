"""Hierarchical INA (docs/protocol.md §6) on the simulated network: every worker sends to its own
switch, child switches send partial sums to the root, results come back down the tree."""

from __future__ import annotations

import numpy as np
import pytest

from inaemu.sim import SimError, SimJob, gradient, simulate
from topologies.builders import leaf_spine, linear

SIZE, K = 4096, 8
CHUNKS = SIZE // 4 // K


def tree_job(topology, root: str) -> list[SimJob]:
    return [SimJob(1, tuple(h.name for h in topology.hosts), root, hierarchical=True)]


def check_sums(result, n: int) -> None:
    exact = np.sum([gradient(0, w, SIZE // 4).astype(np.float64) for w in range(n)], axis=0)
    for record in result.records:
        assert record.error is None and record.correct
        assert np.max(np.abs(record.result.astype(np.float64) - exact)) <= record.err_bound


def inter_switch(result, *prefixes: str) -> dict[str, int]:
    return {link["link"]: link["delivered_packets"] for link in result.links
            if link["src"].startswith(prefixes) and link["dst"].startswith(prefixes)}


def test_each_tree_link_carries_one_partial_aggregate_per_slot() -> None:
    topology = leaf_spine(2, 2, 4)
    result = simulate(topology, tree_job(topology, "sp1"), algo="ina", size_bytes=SIZE,
                      elems_k=K, bw=100)
    check_sums(result, 8)
    links = inter_switch(result, "l", "sp")
    # leaf -> root: one partial (and one MAX partial) per chunk; root -> leaf: one result each
    for name in ("l1:5->sp1:1", "sp1:1->l1:5", "l2:5->sp1:2", "sp1:2->l2:5"):
        assert links[name] == CHUNKS + 1, name
    assert links["l1:6->sp2:1"] == links["l2:6->sp2:2"] == 0        # the other spine is idle
    # each host link: its own contributions up, the results down (no partials reach hosts)
    hosts = [link for link in result.links if link["src"].startswith("h")]
    assert all(link["delivered_packets"] == CHUNKS + 1 for link in hosts)


@pytest.mark.parametrize("loss", [1, 10])
def test_a_tree_with_workers_at_the_root_survives_loss(loss: float) -> None:
    topology = linear(3, hosts_per_switch=2)          # root s2 has two workers of its own
    result = simulate(topology, tree_job(topology, "s2"), algo="ina", size_bytes=SIZE,
                      elems_k=K, loss=loss, bw=100, seed=0)
    check_sums(result, 6)
    if loss == 10:
        assert sum(r.retransmissions for r in result.records) > 0
        links = inter_switch(result, "s")
        assert links["s1:4->s2:3"] > CHUNKS + 1       # retransmissions climbed the tree


def test_tree_arguments_are_checked() -> None:
    topology = linear(2)
    with pytest.raises(SimError, match="a hierarchical job needs its root switch"):
        simulate(topology, [SimJob(1, ("h1", "h2"), hierarchical=True)], algo="ina",
                 size_bytes=SIZE, elems_k=K)
    with pytest.raises(SimError, match="either all hierarchical or all flat"):
        simulate(topology, [SimJob(1, ("h1",), "s1", hierarchical=True), SimJob(2, ("h2",))],
                 algo="ina", size_bytes=SIZE, elems_k=K)
