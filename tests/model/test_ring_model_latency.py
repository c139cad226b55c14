"""The ring's latency term (inaemu/model/cost.py, `_ring_alpha`): a ring step waits only for its
predecessor, so a ring adds its links' mean store-and-forward latency per step, with the
frame a step really sends; the longest path's, per step, over-predicted latency-bound rings up
to 2.6x here (and 3.4x for 1024 workers on fat-tree(16), docs/scale.md)."""

from __future__ import annotations

import pytest

from inaemu.model.cost import _ring_alpha, evaluate, phases_for
from inaemu.model.network import ModelNetwork
from inaemu.sim import SimJob, simulate
from topologies.builders import fat_tree

TOLERANCE = 0.08


def test_rings_take_their_mean_link_latency():
    assert _ring_alpha([1.0, 1.0, 1.0, 5.0], [4]) == pytest.approx(2.0)
    # rings at once: the slowest ring's mean; an empty ring (one member) adds nothing
    assert _ring_alpha([1.0, 3.0, 4.0, 4.0], [2, 0, 2]) == pytest.approx(4.0)


def test_ring_phases_name_their_rings():
    assert phases_for("ring", 8, 800.0)[0].rings == [8]
    hring = phases_for("hring", 8, 800.0, switch_blocks=[[0, 1], [2, 3], [4, 5], [6, 7]])
    assert [p.rings for p in hring] == [[2, 2, 2, 2], [4, 4], [2, 2, 2, 2]]
    assert all(not p.rings for p in phases_for("rhd", 8, 800.0))


@pytest.mark.parametrize("k, every, size", [
    (4, 1, 16 * 1024),     # 1 KiB per step: less than a segment (old model: 0.46 of the sim)
    (4, 1, 64 * 1024),     # 4 KiB per step (old: 0.69)
    (6, 1, 54 * 1024),     # 54 ranks, 1 KiB per step, 6 pods (old: 0.38)
    (6, 3, 64 * 1024),     # 18 ranks spread over the edge switches (old: 0.83)
])
def test_ring_model_matches_the_simulator(k, every, size):
    topology = fat_tree(k)
    hosts = [h.name for h in topology.hosts][::every]
    result = simulate(topology, [SimJob(1, tuple(hosts))], algo="ring", size_bytes=size,
                      bw=20.0, seed=1, elems_k=256, time_limit=60)
    assert result.correct
    measured = max(r.time_s for r in result.records)
    net = ModelNetwork(topology, bw_mbps=20.0)
    model = evaluate(net, hosts, phases_for("ring", len(hosts), float(size)), "ring").time_s
    assert measured / model == pytest.approx(1, abs=TOLERANCE)
