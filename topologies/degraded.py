"""A topology after failures: the same nodes, without the links that are down.

Why the same nodes: names, ports, device ids and addresses must not move when a link or a switch
fails, or every route, job and P4Runtime session keyed by them would have to be rebuilt. So a
down switch stays in the list with no link at all, and a host whose only link is down (or whose
switch is down) stays with none: `SurvivingTopology` is a `Topology` that accepts such hosts.
Routing on it (controller/routing.py) simply finds no path to them.

A `SurvivingTopology` describes a moment of one network; it is not meant to be saved (a saved
description must give every host its link, so `Topology.from_dict` would refuse it back).
"""

from __future__ import annotations

from typing import ClassVar, Iterable

from topologies.model import Topology, TopologyError


class SurvivingTopology(Topology):
    """A `Topology` whose hosts may have no link (failed link, or a down switch)."""

    detached_hosts: ClassVar[bool] = True


def surviving(topology: Topology, down_links: Iterable[frozenset[str]] = frozenset(),
              down_switches: Iterable[str] = frozenset()) -> SurvivingTopology:
    """`topology` without every link between a pair of `down_links` (node names; parallel links
    between the pair all go) and without every link of a switch in `down_switches`. Every host
    and switch stays. A pair or switch the topology does not have is a TopologyError (a typo
    would otherwise silently leave the link up)."""
    pairs = set()
    for pair in down_links:
        pair = frozenset(pair)
        if len(pair) != 2:
            raise TopologyError("down_links", f"{sorted(pair)} is not a pair of node names")
        pairs.add(pair)
    down = set(down_switches)
    for name in down:
        try:
            topology.switch(name)
        except KeyError as e:
            raise TopologyError("down_switches", str(e.args[0])) from None
    present = {frozenset((link.a.node, link.b.node)) for link in topology.links}
    for pair in pairs:
        if pair not in present:
            raise TopologyError("down_links", f"no link between {' and '.join(sorted(pair))}")
    kept = tuple(link for link in topology.links
                 if frozenset((link.a.node, link.b.node)) not in pairs
                 and link.a.node not in down and link.b.node not in down)
    return SurvivingTopology(name=topology.name, hosts=topology.hosts,
                             switches=topology.switches, links=kept)
