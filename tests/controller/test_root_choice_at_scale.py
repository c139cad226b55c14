"""`controller.trees.choose_root` reads every candidate's worker depths off the switch distance
matrix (a search per candidate was ~20 s at fat-tree(40)); the choice must be the definition's:
least deepest worker, then least total depth, then topology order (no jobs busy)."""

from __future__ import annotations

import pytest

from controller.trees import JobRefused, choose_root
from topologies.builders import fat_tree, leaf_spine, linear

from tests.controller.test_routes_by_attachment import two_islands


def by_definition(topology, workers) -> str | None:
    best = None
    for position, switch in enumerate(topology.switches):
        distance = topology.distances_to(switch.name)
        if any(h not in distance for h in workers):
            continue
        depths = [distance[h] for h in workers]
        key = (max(depths), sum(depths), position)
        if best is None or key < best[0]:
            best = (key, switch.name)
    return None if best is None else best[1]


@pytest.mark.parametrize("topology", [fat_tree(4), fat_tree(6), leaf_spine(5, 3, 4),
                                      linear(4, 2)], ids=lambda t: t.name)
def test_root_is_the_definitions(topology):
    hosts = [h.name for h in topology.hosts]
    for workers in (hosts, hosts[:2], hosts[::3], hosts[-3:], hosts[1:2] + hosts[-1:]):
        if len(workers) >= 1:
            assert choose_root(topology, workers) == by_definition(topology, workers)


def test_no_switch_reaching_every_worker_is_refused():
    topology = two_islands()
    assert choose_root(topology, ["h1", "h3"]) == by_definition(topology, ["h1", "h3"])
    with pytest.raises(JobRefused, match="no switch reaches every worker"):
        choose_root(topology, ["h1", "h4"])
    with pytest.raises(JobRefused, match="no workers"):
        choose_root(topology, [])
