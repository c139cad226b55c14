"""What the cost model knows about the network: per link direction its bandwidth and delay, per
switch its per-frame cost, and how a flow between two hosts spreads over the links.

Routes are the controller's (`controller.routing.forwarding_plans`, read per attachment switch): every shortest path, with
ECMP groups. Given a flow's TCP ports, the model follows the member the switch's hash picks
(p4src/forwarding.p4inc: crc16 over source and destination address, protocol and ports,
member = (h mod (size << shift)) >> shift), so it sees the same collisions the network has;
without ports it splits a flow evenly over the equal next hops (a fluid view).
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import lru_cache

from controller.routing import attachment_hops, hash_shifts
from p4switch.runtime.state.hashes import standard_algorithms
from topologies.model import Topology

PROTO_TCP = 6

# frame sizes of the simulator's transport and INA packets (docs/sim.md, docs/protocol.md)
MSS = 1448
TCP_FRAME_OVERHEAD = 54          # Ethernet 14 + IPv4 20 + TCP 20
ACK_FRAME = 54
ACK_EVERY = 2
INA_FRAME_OVERHEAD = 42 + 16     # Ethernet + IPv4 + UDP, INA header


@dataclass(frozen=True)
class SwitchCosts:
    """Service time of one frame in a switch (the simulator's `SwitchCost`)."""

    per_packet_s: float = 17e-6
    per_copy_s: float = 2e-6

    @property
    def routed_frame_s(self) -> float:
        """A frame the switch only forwards: one packet, one copy."""
        return self.per_packet_s + self.per_copy_s


Dir = tuple[str, str]     # a link direction: (from node, to node)


class ModelNetwork:
    """A topology seen by the model: `bw_bps[dir]` (None: unshaped), `delay_s[dir]`,
    `spread(src, dst)` -> {direction: share of the flow}."""

    def __init__(self, topology: Topology, *, bw_mbps: float | None = None,
                 switch: SwitchCosts = SwitchCosts()):
        self.topology = topology
        self.switch = switch
        self.bw_bps: dict[Dir, float | None] = {}
        self.delay_s: dict[Dir, float] = {}
        for link in topology.links:
            bw = bw_mbps if bw_mbps is not None else link.bw_mbps
            for a, b in ((link.a.node, link.b.node), (link.b.node, link.a.node)):
                self.bw_bps[(a, b)] = None if bw is None else bw * 1e6
                self.delay_s[(a, b)] = link.leaving(a).delay_ms / 1e3
        self._spread = lru_cache(maxsize=None)(self._compute_spread)
        self._crc16 = standard_algorithms()["crc16"]
        # next hops per attachment switch, read per (switch, host) when a flow needs them: a
        # table per (switch, host) was 32 million entries at fat-tree(40)
        self._hops = attachment_hops(topology)
        self._attached = {h.name: a for a, hosts in self._hops.hosts.items() for h in hosts}
        self._shift: dict[str, int] = hash_shifts(topology)

    @lru_cache(maxsize=None)
    def _next_hops(self, switch: str, host: str) -> tuple[str, ...]:
        """The neighbours of `switch` one hop closer to `host` (the controller's ECMP order)."""
        hops = self._hops.hops[switch][self._attached[host]]
        if hops is None:
            hops = self._hops.own_hops(switch, self.topology.host(host))
        return tuple(h.node for h in hops)

    def is_switch(self, node: str) -> bool:
        return self.topology.is_switch(node)

    def spread(self, src: str, dst: str,
               ports: tuple[int, int] | None = None) -> dict[Dir, float]:
        """Link directions a flow src -> dst crosses, with its share on each: the hashed path
        (share 1) for a TCP flow with `ports` (source, destination), else the even split."""
        if ports is None:
            return self._spread(src, dst)
        return self._hashed(src, dst, ports)

    @lru_cache(maxsize=None)
    def _hashed(self, src: str, dst: str, ports: tuple[int, int]) -> dict[Dir, float]:
        topo = self.topology
        key = (bytes(int(x) for x in topo.host(src).ip.split("."))
               + bytes(int(x) for x in topo.host(dst).ip.split("."))
               + bytes([PROTO_TCP]) + ports[0].to_bytes(2, "big") + ports[1].to_bytes(2, "big"))
        h = self._crc16(key)
        node = topo.host_link(src).node
        out = {(src, node): 1.0}
        while node != dst:
            hops = self._next_hops(node, dst)
            shift = self._shift[node]
            nxt = hops[0] if len(hops) == 1 else hops[(h % (len(hops) << shift)) >> shift]
            out[(node, nxt)] = 1.0
            node = nxt
        return out

    def _compute_spread(self, src: str, dst: str) -> dict[Dir, float]:
        dist = self.topology.distances_to(dst)
        share = {src: 1.0}
        out: dict[Dir, float] = {}
        frontier = [src]
        while frontier:
            following: list[str] = []
            for node in frontier:
                if node == dst:
                    continue
                hops = sorted({n.node for n in self.topology.neighbours(node)
                               if dist.get(n.node) == dist[node] - 1
                               and (n.node == dst or self.is_switch(n.node))})
                for nxt in hops:
                    part = share[node] / len(hops)
                    out[(node, nxt)] = out.get((node, nxt), 0.0) + part
                    if nxt not in share:
                        following.append(nxt)
                    share[nxt] = share.get(nxt, 0.0) + part
            frontier = following
        return out

    def path_latency(self, src: str, dst: str, frame_bytes: int) -> float:
        """Store-and-forward latency of one frame from src to dst on an idle network: every
        hop's serialisation and delay, every switch's service."""
        path = self.topology.shortest_path(src, dst)
        total = 0.0
        for a, b in zip(path, path[1:]):
            bw = self.bw_bps[(a, b)]
            total += (frame_bytes * 8 / bw if bw else 0.0) + self.delay_s[(a, b)]
        return total + (len(path) - 2) * self.switch.routed_frame_s

    def hops(self, src: str, dst: str) -> int:
        return len(self.topology.shortest_path(src, dst)) - 1
