"""Equal-cost routing on multi-tier topologies (controller.routing, sans-I/O): every shortest next
hop is found, hosts never transit, groups are shared per next-hop set with deterministic ids, and
following any choice of next hops reaches the host in the shortest number of hops."""

from __future__ import annotations

import pytest

from controller.routing import (MAX_HASH_SHIFT, EcmpGroup, NextHop, forwarding_plans,
                                hash_shifts, host_routes, multipath_routes, switch_mac)
from topologies.builders import fat_tree, leaf_spine, linear, star
from topologies.model import Topology


def _routes_by_host(topology: Topology, switch: str):
    return {r.host: r for r in multipath_routes(topology)[switch]}


def test_a_leaf_reaches_remote_hosts_through_every_spine():
    topo = leaf_spine(2, 3, 2)          # leaf ports: hosts 1-2, spines 3-5
    routes = _routes_by_host(topo, "l1")
    assert [h.port for h in routes["h1"].next_hops] == [1]
    assert routes["h1"].next_hops[0] == NextHop(1, "h1", topo.host("h1").mac)
    for remote in ("h3", "h4"):
        assert [(h.port, h.node) for h in routes[remote].next_hops] == [
            (3, "sp1"), (4, "sp2"), (5, "sp3")]
        assert [h.mac for h in routes[remote].next_hops] == [
            switch_mac(topo.switch(s)) for s in ("sp1", "sp2", "sp3")]
    spine = _routes_by_host(topo, "sp2")   # a spine has exactly one way down
    assert {h: [n.port for n in r.next_hops] for h, r in spine.items()} == {
        "h1": [1], "h2": [1], "h3": [2], "h4": [2]}


def test_groups_are_shared_per_next_hop_set_with_deterministic_ids():
    topo = leaf_spine(3, 2, 2)
    plans = forwarding_plans(topo)
    leaf = plans["l2"]
    assert leaf.groups == (EcmpGroup(1, tuple(_routes_by_host(topo, "l2")["h1"].next_hops)),)
    assert {p.route.host: p.group for p in leaf.routes} == {
        "h1": 1, "h2": 1, "h3": None, "h4": None, "h5": 1, "h6": 1}
    assert all(not plans[s].groups for s in ("sp1", "sp2"))
    assert forwarding_plans(leaf_spine(3, 2, 2)) == plans


def test_fat_tree_groups_at_edge_and_aggregation_none_at_core():
    topo = fat_tree(4)
    plans = forwarding_plans(topo)
    edge = _routes_by_host(topo, "e0_0")
    assert len(edge["h1"].next_hops) == 1                      # its own host
    assert [h.node for h in edge["h3"].next_hops] == ["a0_0", "a0_1"]   # same pod, other edge
    assert [h.node for h in edge["h16"].next_hops] == ["a0_0", "a0_1"]  # another pod
    agg = _routes_by_host(topo, "a0_0")
    assert [h.node for h in agg["h16"].next_hops] == ["c0", "c1"]      # up to its two cores
    assert [h.node for h in agg["h3"].next_hops] == ["e0_1"]           # down: one way
    # every remote host of an edge switch uses its one "up" group; cores never need one
    assert [len(plans[f"e{p}_{i}"].groups) for p in range(4) for i in range(2)] == [1] * 8
    assert [len(plans[f"a{p}_{i}"].groups) for p in range(4) for i in range(2)] == [1] * 8
    assert all(not plans[f"c{j}"].groups for j in range(4))


@pytest.mark.parametrize("topo", [leaf_spine(3, 2, 2), fat_tree(4), linear(3, 2)],
                         ids=["leaf_spine", "fat_tree", "linear"])
def test_every_choice_of_next_hops_takes_a_shortest_path(topo):
    routes = multipath_routes(topo)
    hops = {(r.switch, r.host): r.next_hops for table in routes.values() for r in table}
    for host in topo.hosts:
        distance = topo.distances_to(host.name)
        for switch in topo.switches:
            frontier = {switch.name}
            for _ in range(distance[switch.name] - 1):      # all branches, hop by hop
                frontier = {h.node for node in frontier for h in hops[(node, host.name)]}
                assert all(topo.is_switch(n) for n in frontier), "a host transited"
            assert {h.node for node in frontier for h in hops[(node, host.name)]} == {host.name}


def test_single_path_routes_keep_the_lowest_port():
    topo = leaf_spine(2, 2, 1)
    assert [(r.host, r.port) for r in host_routes(topo)["l1"]] == [("h1", 1), ("h2", 2)]
    assert [(r.host, r.port) for r in host_routes(star(2))["s1"]] == [("h1", 1), ("h2", 2)]
    assert all(not plan.groups for plan in forwarding_plans(linear(4)).values())


def test_switch_macs_are_unicast_local_and_distinct():
    topo = fat_tree(4)
    macs = {switch_mac(s) for s in topo.switches}
    assert len(macs) == len(topo.switches)
    assert all(int(m[:2], 16) & 0b11 == 0b10 for m in macs)   # locally administered, unicast
    assert switch_mac(topo.switch("e0_0")) == "02:ff:00:00:00:01"


def test_neighbouring_switches_decide_on_different_hash_bits():
    fat = hash_shifts(fat_tree(4))
    assert {s: fat[s] for s in ("e0_0", "e3_1", "a0_0", "a2_1", "c0", "c3")} == {
        "e0_0": 0, "e3_1": 0, "a0_0": 1, "a2_1": 1, "c0": 0, "c3": 0}
    for topo in (fat_tree(4), leaf_spine(4, 3, 2), linear(5)):
        shifts = hash_shifts(topo)
        for switch in topo.switches:
            assert 0 <= shifts[switch.name] <= MAX_HASH_SHIFT
            for n in topo.neighbours(switch.name):
                if topo.is_switch(n.node):
                    assert shifts[n.node] != shifts[switch.name], (switch.name, n.node)
    plans = forwarding_plans(fat_tree(4))
    assert (plans["e1_0"].hash_shift, plans["a1_0"].hash_shift) == (0, 1)
