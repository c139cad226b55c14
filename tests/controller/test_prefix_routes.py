"""Aggregated routes (controller/prefixes.py, routing.aggregated_routes) forward every host
exactly as its /32 does, with far fewer entries, and cover nothing outside the hosts' subnet."""

import ipaddress
import random

import pytest

from controller.prefixes import Prefix, aggregate, lookup
from controller.routing import aggregated_routes, forwarding_plans, multipath_routes
from topologies.builders import fat_tree, leaf_spine, linear, star


def _ip(text: str) -> int:
    return int(ipaddress.IPv4Address(text))


def _table(routes):
    return [Prefix(_ip(r.prefix), r.prefix_len, r.next_hops) for r in routes]


@pytest.mark.parametrize("topology", [fat_tree(4), fat_tree(6), leaf_spine(3, 2, 3), star(5),
                                      linear(3, 2), leaf_spine(20, 2, 15)],
                         ids=lambda t: t.name)
def test_every_host_forwards_as_its_host_route(topology):
    exact = multipath_routes(topology)
    aggregated = aggregated_routes(topology)
    for switch, routes in exact.items():
        table = _table(aggregated[switch])
        for route in routes:
            assert lookup(table, _ip(route.prefix)) == route.next_hops, (switch, route.host)
        assert lookup(table, _ip("192.168.0.1")) is None     # outside the subnet: still a miss
    assert sum(map(len, aggregated.values())) < sum(map(len, exact.values())) or \
        topology.name.startswith("star")


def test_fat_tree_tables_are_per_pod_and_per_edge():
    routes = aggregated_routes(fat_tree(8))       # 128 hosts, 80 switches: 10,240 host routes
    sizes = {switch: len(r) for switch, r in routes.items()}
    assert max(sizes[s] for s in sizes if s.startswith("e")) <= 4 + 1    # own hosts + "up"
    assert max(sizes[s] for s in sizes if s.startswith("c")) <= 2 * 8    # about one per pod
    assert sum(sizes.values()) < 1200
    plans = forwarding_plans(fat_tree(8), aggregate_prefixes=True)
    assert all(len(p.groups) <= 1 for p in plans.values())    # one "up" group where any


def test_random_assignments_match_exact_lookup():
    rng = random.Random(7)
    for _ in range(200):
        count = rng.randint(1, 40)
        addresses = rng.sample(range(_ip("10.0.0.1"), _ip("10.0.0.254")), count)
        hosts = [(a, rng.choice("abcd")) for a in addresses]
        table = aggregate(hosts, (_ip("10.0.0.0"), 24))
        assert all(lookup(table, a) == action for a, action in hosts)
        assert all(p.length >= 24 for p in table)
        assert len(table) <= count


def test_refuses_conflicts_and_outsiders():
    with pytest.raises(ValueError):
        aggregate([(1, "a"), (1, "b")])
    with pytest.raises(ValueError):
        aggregate([(_ip("10.1.0.1"), "a")], (_ip("10.0.0.0"), 16))
