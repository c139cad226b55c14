"""Routes for large fabrics are computed per attachment switch (hosts never transit), from one
switch distance matrix, and aggregated from runs of hosts (controller/prefixes.py
`aggregate_runs`). The result must be exactly what the per-host definition gives: every host's
next hops by its own search, then `prefixes.aggregate` over one (address, action) per host with
ties broken by first appearance, the way aggregated routes were computed before fat-tree(40)
made that 32 million pairs."""

from __future__ import annotations

import ipaddress

import pytest

from controller import routing
from controller.prefixes import Prefix, aggregate, aggregate_runs, lookup
from controller.routing import MultipathRoute
from topologies.builders import fat_tree, host, leaf_spine, link, linear, star, switch
from topologies.degraded import surviving
from topologies.model import Topology

from tests.controller.test_routes_by_attachment import per_host_search, two_islands


def per_host_aggregated(topology: Topology) -> dict[str, list[MultipathRoute]]:
    """The definition: per switch, one action per host (its next-hop set, by identity of the
    per-host search's tuples: equal sets compared equal), aggregated per hosts' subnet."""
    exact = per_host_search(topology)
    subnets: dict = {}
    for h in topology.hosts:
        net = ipaddress.IPv4Network(f"{h.ip}/{h.prefix_len}", strict=False)
        subnets.setdefault((int(net.network_address), net.prefixlen), []).append(h)
    out = {}
    for name, routes in exact.items():
        if len(routes) != len(topology.hosts):
            out[name] = routes
            continue
        hops_of = {r.host: r.next_hops for r in routes}
        table = []
        for within, hosts in subnets.items():
            # the last hop's sets are the host's own; towards a switch equal sets are one action
            actions = [(int(ipaddress.IPv4Address(h.ip)), hops_of[h.name]) for h in hosts]
            for prefix in aggregate(actions, within):
                text = str(ipaddress.IPv4Address(prefix.network))
                table.append(MultipathRoute(name, f"{text}/{prefix.length}", text,
                                            prefix.length, prefix.action[0].mac, prefix.action))
        out[name] = table
    return out


def scattered() -> Topology:
    """Hosts of one switch not contiguous in address: h1, h3 on s1; h2, h4 on s2 (a run per
    host on every switch), and s1 - s2 - s3 in a line with h5 on s3."""
    hosts = [host(n) for n in range(1, 6)]
    links = [link("h1", 0, "s1", 1), link("h3", 0, "s1", 2), link("h2", 0, "s2", 1),
             link("h4", 0, "s2", 2), link("s1", 3, "s2", 3), link("s2", 4, "s3", 1),
             link("h5", 0, "s3", 2)]
    return Topology(name="scattered", hosts=hosts,
                    switches=[switch(1), switch(2), switch(3)], links=links)


TOPOLOGIES = [fat_tree(4), fat_tree(6), fat_tree(8), leaf_spine(5, 3, 4), leaf_spine(20, 2, 15),
              linear(4, 2), star(3), two_islands(), scattered(),
              # a failed edge switch: its hosts have no link, every switch keeps /32s
              surviving(fat_tree(4), (), {"e1_0"}),
              # a failed link only: every host still reached, over fewer next hops
              surviving(fat_tree(4), {frozenset({"a0_0", "c0"})})]


@pytest.mark.parametrize("topology", TOPOLOGIES, ids=lambda t: t.name)
def test_aggregated_routes_are_the_per_host_definitions(topology):
    assert routing.aggregated_routes(topology) == per_host_aggregated(topology)


def test_runs_give_what_hosts_give():
    """aggregate_runs over runs (neighbouring equal runs included) equals aggregate over the
    hosts written out, for a pattern with repeats and singletons."""
    base = int(ipaddress.IPv4Address("10.0.0.0"))
    actions = "aaabbbaaccccdxdxaaa"
    addresses = [base + 1 + 3 * i for i in range(len(actions))]
    hosts = list(zip(addresses, actions))
    first = {a: i for i, a in reversed(list(enumerate(actions)))}
    expected = aggregate(hosts, (base, 16))
    starts = list(range(len(actions)))            # one run per host, equal neighbours unmerged
    assert aggregate_runs(addresses, starts, list(actions), (base, 16), first.__getitem__) == \
        expected
    for address, action in hosts:
        assert lookup(expected, address) == action


@pytest.mark.parametrize("addresses, starts, message", [
    ([5, 3], [0], "ascend"), ([3, 3], [0], "two actions"), ([3, 5], [1], "runs must start"),
    ([3, 5], [0, 2], "runs must start"), ([3, 5], [0, 0], "runs must start")])
def test_bad_runs_are_refused(addresses, starts, message):
    with pytest.raises(ValueError, match=message):
        aggregate_runs(addresses, starts, list("ab"[:len(starts)]), (0, 0), str)
