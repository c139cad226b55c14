"""Which server runs each node of a topology split over several servers (docs/cluster.md).

Links between servers become tunnels, which are slower than veths, so a good split keeps each
host with its switch and cuts only uplinks. Default ("pods"): take away the top tier (core,
spine), and what stays connected is a pod — a fat-tree pod with its hosts, or a leaf with its
hosts — which goes to one server, pods in order over the servers in contiguous, balanced bins;
the top-tier switches are spread evenly over the servers. A network with a single such group
(a star, a linear chain) falls back to splitting its switches into contiguous bins, each host
with its switch. Pure data: no Mininet, no root.
"""

from __future__ import annotations

from topologies.model import Topology

TOP_TIERS = ("core", "spine")


class PlacementError(ValueError):
    """Servers that cannot hold the topology as asked."""


def _groups(topology: Topology, leave_out: set[str]) -> list[list[str]]:
    """Connected groups of nodes once `leave_out` is removed, in topology order."""
    order = [h.name for h in topology.hosts] + [s.name for s in topology.switches]
    rank = {name: i for i, name in enumerate([s.name for s in topology.switches]
                                             + [h.name for h in topology.hosts])}
    seen: set[str] = set()
    groups = []
    for start in sorted((n for n in order if n not in leave_out), key=rank.get):
        if start in seen:
            continue
        group, todo = [], [start]
        seen.add(start)
        while todo:
            node = todo.pop()
            group.append(node)
            for neighbour in (n.node for n in topology.neighbours(node)):
                if neighbour not in seen and neighbour not in leave_out:
                    seen.add(neighbour)
                    todo.append(neighbour)
        groups.append(sorted(group, key=rank.get))
    return groups


def _bins(sizes: list[int], n_bins: int) -> list[int]:
    """Bin index of each item, items kept in order, bins contiguous and as even as the greedy
    cut at each bin's share of the total allows."""
    total = sum(sizes)
    result, filled, current = [], 0, 0
    for size in sizes:
        # move on once this bin holds its share (and later bins still get something)
        if current < n_bins - 1 and filled >= total * (current + 1) / n_bins:
            current += 1
        result.append(current)
        filled += size
    return result


def place(topology: Topology, servers: list[str] | tuple[str, ...]) -> dict[str, str]:
    """Node name -> server, by pod (see the module docstring)."""
    servers = list(servers)
    if not servers:
        raise PlacementError("no servers given")
    if len(set(servers)) != len(servers):
        raise PlacementError(f"servers listed twice: {', '.join(servers)}")
    top = {s.name for s in topology.switches if s.tier in TOP_TIERS}
    pods = _groups(topology, top)
    placement: dict[str, str] = {}
    if len(pods) >= len(servers):
        for pod, index in zip(pods, _bins([len(p) for p in pods], len(servers))):
            placement.update({node: servers[index] for node in pod})
        tops = [s.name for s in topology.switches if s.name in top]
        for i, name in enumerate(tops):
            placement[name] = servers[i * len(servers) // len(tops)]
        return placement
    switches = [s.name for s in topology.switches]
    for name, index in zip(switches, _bins([1] * len(switches), len(servers))):
        placement[name] = servers[index]
    for host in topology.hosts:
        placement[host.name] = placement[topology.host_link(host.name).node]
    return placement


def cut_links(topology: Topology, placement: dict[str, str]) -> list[tuple[str, str]]:
    """The links whose ends are on different servers (they become tunnels)."""
    return [(link.a.node, link.b.node) for link in topology.links
            if placement[link.a.node] != placement[link.b.node]]
