"""Routes from a topology: a /32 for every host on every switch, along shortest paths.

Sans-I/O and program-agnostic: `host_routes` says, for each switch, which port leads to each host;
`L3Program` says how one route becomes a table entry of a particular P4 program (which table, which
action, which parameter carries the MAC and which the port). The project's `p4src/l3_forward.p4`
is `L3_FORWARD`; another program with the same shape only needs another `L3Program`.

Next hops: on switch S, the route to host H leaves through the lowest-numbered port whose
neighbour is one hop closer to H. Every hop strictly shortens the distance, so routes never loop,
and the choice is deterministic.
The destination MAC written on every hop is the destination host's own MAC, so the frame that
finally reaches the host is addressed to it (switches do not check MACs).
"""

from __future__ import annotations

from dataclasses import dataclass

from p4.v1 import p4runtime_pb2

from controller import entities
from controller.errors import P4InfoError
from controller.p4info import P4InfoIndex
from topologies.model import Topology


@dataclass(frozen=True)
class Route:
    switch: str
    host: str
    prefix: str         # dotted IPv4 of the host
    prefix_len: int     # 32: one route per host
    port: int           # egress port on `switch`
    dst_mac: str        # the destination host's MAC


def host_routes(topology: Topology) -> dict[str, list[Route]]:
    """switch name -> its routes, one per reachable host, in host order."""
    routes: dict[str, list[Route]] = {s.name: [] for s in topology.switches}
    for host in topology.hosts:
        distance = topology.distances_to(host.name)
        for switch in topology.switches:
            if switch.name not in distance:
                continue
            closer = [n for n in topology.neighbours(switch.name)
                      if distance.get(n.node, -1) == distance[switch.name] - 1]
            port = closer[0].port  # neighbours come sorted by port
            routes[switch.name].append(Route(switch.name, host.name, host.ip, 32, port, host.mac))
    return routes


def arp_entries(topology: Topology) -> dict[str, list[tuple[str, str]]]:
    """host name -> (ip, mac) of every other host: the static ARP that replaces broadcasts."""
    return {h.name: topology.static_arp(h.name) for h in topology.hosts}


def flood_groups(topology: Topology) -> dict[str, dict[int, list[int]]]:
    """switch -> ingress port -> every other port: where a broadcast arriving on that port goes.

    Multicast group id = ingress port, so `arp_flood{ingress_port: p} -> flood(mgid=p)`.
    Broadcasts are not loop-free on topologies with cycles (leaf-spine); hosts use static ARP there.
    """
    groups: dict[str, dict[int, list[int]]] = {}
    for switch in topology.switches:
        ports = [n.port for n in topology.neighbours(switch.name)]
        groups[switch.name] = {p: [q for q in ports if q != p] for p in ports}
    return groups


@dataclass(frozen=True)
class L3Program:
    """Where a route goes in a program: an LPM table and an action(mac, port)."""

    table: str
    action: str
    mac_param: str
    port_param: str

    def entry(self, index: P4InfoIndex, route: Route) -> p4runtime_pb2.TableEntry:
        table = index.table(self.table)
        lpm_keys = [k for k in table.keys if k.match_type == "lpm"]
        if len(table.keys) != 1 or not lpm_keys:
            raise P4InfoError(f"table {table.name} must have exactly one lpm key to hold routes")
        return entities.table_entry(
            index, self.table, {lpm_keys[0].name: (route.prefix, route.prefix_len)}, self.action,
            {self.mac_param: route.dst_mac, self.port_param: route.port})


@dataclass(frozen=True)
class FloodProgram:
    """Where broadcast flooding goes: an exact table on the ingress port, an action(group id)."""

    table: str
    action: str
    group_param: str

    def entry(self, index: P4InfoIndex, ingress_port: int) -> p4runtime_pb2.TableEntry:
        (key,) = index.table(self.table).keys
        return entities.table_entry(index, self.table, {key.name: ingress_port}, self.action,
                                    {self.group_param: ingress_port})


L3_FORWARD = L3Program(table="ipv4_lpm", action="ipv4_forward", mac_param="dstAddr",
                       port_param="port")
L3_FORWARD_ARP = FloodProgram(table="arp_flood", action="flood", group_param="mgid")
