"""Placement over servers (topologies/placement.py): by pod, so only uplinks cross servers."""

from __future__ import annotations

from collections import Counter

import pytest

from topologies.builders import fat_tree, leaf_spine, linear, star
from topologies.placement import PlacementError, cut_links, place

TWO = ["localhost", "b"]


def test_fat_tree_pods_split_and_only_agg_core_links_are_cut() -> None:
    topology = fat_tree(4)
    placement = place(topology, TWO)
    assert Counter(placement.values()) == {"localhost": 18, "b": 18}
    for pod in range(4):
        members = {placement[s.name] for s in topology.switches if s.name[1:2] == str(pod)
                   and s.tier in ("edge", "agg")}
        assert members == {"localhost" if pod < 2 else "b"}
    cut = cut_links(topology, placement)
    assert len(cut) == 8
    assert all(topology.switch(a).tier == "agg" and topology.switch(b).tier == "core"
               for a, b in cut)
    for host in topology.hosts:        # a host always beside its switch
        assert placement[host.name] == placement[topology.host_link(host.name).node]


def test_leaf_spine_keeps_leaves_with_hosts_and_spreads_spines() -> None:
    topology = leaf_spine(4, 2, 3)
    placement = place(topology, ["x", "y", "z"])
    assert {placement[s] for s in ("sp1", "sp2")} == {"x", "y"}
    cut = cut_links(topology, placement)
    assert cut and all("spine" in (topology.switch(a).tier, topology.switch(b).tier)
                       for a, b in cut)
    assert set(placement.values()) == {"x", "y", "z"}


def test_single_group_shapes_split_switches_in_order() -> None:
    assert set(place(star(4), TWO).values()) == {"localhost"}     # one switch: nothing to cut
    placement = place(linear(4, 1), TWO)
    assert [placement[f"s{i}"] for i in range(1, 5)] == ["localhost", "localhost", "b", "b"]
    assert cut_links(linear(4, 1), placement) == [("s2", "s3")]


def test_bad_server_lists() -> None:
    with pytest.raises(PlacementError, match="no servers"):
        place(star(2), [])
    with pytest.raises(PlacementError, match="twice"):
        place(star(2), ["a", "a"])
