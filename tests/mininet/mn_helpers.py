"""Helpers shared by the Mininet tests."""

from __future__ import annotations

import dataclasses

from topologies.model import Endpoint, Topology


def relabel(topology: Topology, tag: str, grpc_base: int) -> Topology:
    """The same topology with host `hN` -> `<tag>hN`, switch `sN` -> `<tag>sN`, gRPC base moved."""
    rename = {n.name: f"{tag}{n.name}" for n in (*topology.hosts, *topology.switches)}
    hosts = [dataclasses.replace(h, name=rename[h.name]) for h in topology.hosts]
    switches = [dataclasses.replace(s, name=rename[s.name], grpc_port=grpc_base + s.device_id)
                for s in topology.switches]
    links = [dataclasses.replace(l, a=Endpoint(node=rename[l.a.node], port=l.a.port),
                                 b=Endpoint(node=rename[l.b.node], port=l.b.port))
             for l in topology.links]
    return Topology(name=topology.name, hosts=hosts, switches=switches, links=links)
