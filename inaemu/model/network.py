"""What the cost model knows about the network: per link direction its bandwidth and delay, per
switch its per-frame cost, and how a flow between two hosts spreads over the links.

Routes are the controller's: every shortest path, with ECMP. The model splits a flow evenly over
the equal next hops at each switch (a fluid view of a hash that spreads many flows evenly).
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import lru_cache

from topologies.model import Topology

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

    def is_switch(self, node: str) -> bool:
        return self.topology.is_switch(node)

    def spread(self, src: str, dst: str) -> dict[Dir, float]:
        return self._spread(src, dst)

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
