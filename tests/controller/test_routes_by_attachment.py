"""`controller.routing` computes next hops once per attachment switch, not once per host
(hosts never transit, so hosts on one switch look alike from every other switch). The result
must be exactly what one breadth-first search per host gives: compared here with that
definition written out, on fat-trees, leaf-spines, a line and a fabric in two islands (switches
that reach only some hosts keep /32s)."""

from __future__ import annotations

import pytest

from controller import routing
from controller.routing import MultipathRoute, NextHop, switch_mac
from topologies.builders import fat_tree, host, leaf_spine, link, linear, star, switch
from topologies.model import Topology


def per_host_search(topology: Topology) -> dict[str, list[MultipathRoute]]:
    """The definition: for every host, a BFS; on each switch, the neighbours one hop closer."""
    is_switch = {s.name for s in topology.switches}
    routes: dict[str, list[MultipathRoute]] = {s.name: [] for s in topology.switches}
    for h in topology.hosts:
        distance = topology.distances_to(h.name)
        for s in topology.switches:
            here = distance.get(s.name)
            if here is None:
                continue
            hops = []
            for n in topology.neighbours(s.name):
                if here == 1 and n.node == h.name:
                    hops.append(NextHop(n.port, n.node, h.mac))
                elif here > 1 and n.node in is_switch and distance.get(n.node) == here - 1:
                    hops.append(NextHop(n.port, n.node, switch_mac(topology.switch(n.node))))
            routes[s.name].append(MultipathRoute(s.name, h.name, h.ip, 32, h.mac, tuple(hops)))
    return routes


def two_islands() -> Topology:
    """s1 (h1, h2) - s2 (h3) and, unconnected to them, s3 (h4): s3 reaches only h4."""
    hosts = [host(n) for n in range(1, 5)]
    links = [link("h1", 0, "s1", 1), link("h2", 0, "s1", 2), link("s1", 3, "s2", 3),
             link("s1", 4, "s2", 4), link("h3", 0, "s2", 1), link("h4", 0, "s3", 1)]
    return Topology(name="islands", hosts=hosts, switches=[switch(1), switch(2), switch(3)],
                    links=links)


TOPOLOGIES = [fat_tree(4), fat_tree(6), leaf_spine(5, 3, 4), leaf_spine(3, 2, 1), linear(4, 2),
              star(3), two_islands()]


@pytest.mark.parametrize("topology", TOPOLOGIES, ids=lambda t: t.name)
def test_next_hops_are_the_per_host_searchs(topology):
    assert routing.multipath_routes(topology) == per_host_search(topology)


@pytest.mark.parametrize("topology", TOPOLOGIES, ids=lambda t: t.name)
def test_equal_next_hop_sets_of_a_switch_are_one_tuple(topology):
    for switch_name, routes in routing.multipath_routes(topology).items():
        by_ports: dict = {}
        for route in routes:
            if route.next_hops and route.next_hops[0].node not in {h.name for h in topology.hosts}:
                same = by_ports.setdefault(tuple(h.port for h in route.next_hops),
                                           route.next_hops)
                assert same is route.next_hops, (switch_name, route.host)


def test_a_switch_that_reaches_some_hosts_keeps_their_host_routes():
    aggregated = routing.aggregated_routes(two_islands())
    assert [(r.prefix, r.prefix_len, r.next_hops[0].port) for r in aggregated["s3"]] == \
        [("10.0.0.4", 32, 1)]
    assert {r.prefix_len for r in aggregated["s1"]} == {32}     # s1 reaches 3 of 4 hosts
