"""Trees within a switch's member limit (controller.trees.tree_shape, max_members; ina.p4's
INA_MEMBERS, 64 by default): a leaf-spine with more leaves than a spine can aggregate grows a
deeper tree through a second spine instead of being refused, and shortest-path trees that fit
are left as they were."""

from __future__ import annotations

import pytest

from controller.ina_jobs import JobRefused
from controller.trees import tree_shape
from inaemu.sim import SimJob, simulate
from topologies.builders import fat_tree, leaf_spine


def hosts_of(topology):
    return tuple(h.name for h in topology.hosts)


def check_tree(topology, shape, limit):
    assert all(len(m) <= limit for m in shape.members.values())
    for child, parent in shape.parent.items():
        if parent is not None:          # every tree edge is a link, the child a member there
            topology.port_towards(child, parent)
            assert shape.members[parent].count(child) == 1
    assert sorted(shape.order) == sorted(shape.parent)


@pytest.mark.parametrize("leaves, spines", [(40, 2), (70, 3), (33, 2)])
def test_more_leaves_than_a_spine_holds(leaves, spines):
    topology = leaf_spine(leaves, spines, 1)
    workers = hosts_of(topology)
    shape = tree_shape(topology, 1, workers, "sp1", max_members=32)
    check_tree(topology, shape, 32)
    assert len(shape.members["sp1"]) == 32 and shape.depth == 4      # leaf -> sp2 -> leaf -> sp1
    assert sorted(h for m in shape.members.values() for h in m if h.startswith("h")) == \
        sorted(workers)
    assert tree_shape(topology, 1, workers, "sp1", max_members=None).members["sp1"] == \
        tuple(f"l{i}" for i in range(1, leaves + 1))                   # the unbounded tree


def test_a_tree_that_fits_is_the_shortest_path_tree():
    topology = fat_tree(8)
    workers = hosts_of(topology)
    assert tree_shape(topology, 1, workers, "c0") == \
        tree_shape(topology, 1, workers, "c0", max_members=None)


def test_no_room_anywhere_keeps_the_refusable_tree():
    topology = leaf_spine(40, 1, 1)           # one spine: nowhere else to go
    shape = tree_shape(topology, 1, hosts_of(topology), "sp1", max_members=32)
    assert len(shape.members["sp1"]) == 40    # check_tree_job refuses it with the reason


def test_a_bounded_tree_all_reduces_correctly_in_the_simulator():
    """The program's own limit (64 members): 66 leaves, two of them under sp2 below l1."""
    topology = leaf_spine(66, 2, 1)
    job = SimJob(1, hosts_of(topology), "sp1", hierarchical=True)
    result = simulate(topology, [job], algo="ina", size_bytes=512, elems_k=8)
    assert result.correct
    assert result.trees[1]["sp2"]["parent"] == "l1"
    assert len(result.trees[1]["sp1"]["members"]) == 64
    assert result.trees[1]["sp2"]["members"] == ["l65", "l66"]
