"""The α-β-γ cost model of every all-reduce algorithm (formulas: docs/model.md).

An algorithm is a list of phases. A phase is `steps` sequential message steps and a set of
flows (sender host, receiver host, payload bytes over the whole phase) that run at once:

    T_phase = steps·α + max(max over link directions ℓ of load_ℓ / β_ℓ,
                            max over switches s of frames_s · c_s)  + extra
    T       = Σ T_phase + γ·(bytes this rank adds)

α is the store-and-forward latency of one frame over the phase's longest path (serialisation of
the hops after the first, link delays, switch service); load_ℓ counts payload plus frame
headers (54 B per 1448 B segment) and the acknowledgements of flows in the other direction;
flows follow every shortest path, split evenly (ECMP); c_s is the switch's per-frame cost.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field

from inaemu.model.network import (ACK_EVERY, ACK_FRAME, INA_FRAME_OVERHEAD, MSS,
                                  TCP_FRAME_OVERHEAD, ModelNetwork)

Flow = tuple[int, int, float]          # sender rank, receiver rank, payload bytes


@dataclass
class Phase:
    name: str
    steps: int
    flows: list[Flow]
    extra_s: float = 0.0               # pipeline fill and the like
    rings: list[int] = field(default_factory=list)   # sizes of consecutive flow groups that
    # are rings: a ring's step waits only for its predecessor's message (see evaluate)


@dataclass
class Prediction:
    algo: str
    time_s: float
    latency_s: float                   # Σ steps·α
    bandwidth_s: float                 # Σ max(link, switch) terms (+ extras)
    reduce_s: float                    # γ term
    phases: list[dict] = field(default_factory=list)


def _ring_flows(members: list[int], total: float) -> list[Flow]:
    m = len(members)
    return [] if m < 2 else [(members[i], members[(i + 1) % m], total) for i in range(m)]


def _rings(groups: list[list[int]], total: float) -> tuple[list[Flow], list[int]]:
    """The flows of one ring per group, and the number of flows of each ring."""
    flows = [_ring_flows(group, total) for group in groups]
    return [f for ring in flows for f in ring], [len(ring) for ring in flows]


def phases_for(algo: str, n: int, size: float, *, switch_blocks: list[list[int]] | None = None,
               chunk_bytes: float | None = None) -> list[Phase]:
    """The phases of a host algorithm on n ranks of `size` bytes each (see docs/model.md)."""
    if algo == "ring":
        flows = _ring_flows(list(range(n)), 2 * (n - 1) / n * size)
        return [Phase("ring", 2 * (n - 1), flows, rings=[len(flows)])]
    if algo == "ps":
        return [Phase("push", 1, [(r, s, size / n) for r in range(n) for s in range(n)
                                  if r != s]),
                Phase("pull", 1, [(s, r, size / n) for r in range(n) for s in range(n)
                                  if r != s])]
    if algo == "rhd":
        p = 1 << (n.bit_length() - 1)
        rem = n - p
        real = [2 * v + 1 if v < rem else v + rem for v in range(p)]
        out = []
        if rem:      # ranks not folded start their first halving at once, into folded ones
            early = [(real[v], real[v ^ (p // 2)], size / 2) for v in range(rem, p)
                     if v ^ (p // 2) < rem]
            out.append(Phase("fold", 1, [(2 * i, 2 * i + 1, size) for i in range(rem)] + early))
        d, part = p // 2, size / 2
        halving = []
        while d >= 1:
            halving.append(Phase(f"halve d={d}", 1, [(real[v], real[v ^ d], part)
                                                      for v in range(p)]))
            d, part = d // 2, part / 2
        out += halving + [Phase(ph.name.replace("halve", "double"), 1, ph.flows)
                          for ph in reversed(halving)]
        if rem:
            out.append(Phase("unfold", 1, [(2 * i + 1, 2 * i, size) for i in range(rem)]))
        return out
    if algo == "hring":
        from hosts.collectives import hring_groups
        groups = hring_groups(n, switch_blocks)
        g, big = len(groups[0]), len(groups)
        intra, intra_rings = _rings(groups, (g - 1) / g * size)
        across, across_rings = _rings([[group[i] for group in groups] for i in range(g)],
                                      2 * (big - 1) / big * size / g)
        return [Phase("intra reduce-scatter", g - 1, intra, rings=intra_rings),
                Phase("inter all-reduce", 2 * (big - 1), across, rings=across_rings),
                Phase("intra all-gather", g - 1, intra, rings=intra_rings)]
    if algo == "torus":
        from hosts.torus2d import grid_shape
        rows, cols = grid_shape(n)
        row_groups = [[r * cols + c for c in range(cols)] for r in range(rows)]
        col_groups = [[r * cols + c for r in range(rows)] for c in range(cols)]
        half = size / 2

        def both(groups_a, total_a, groups_b, total_b):
            flows_a, rings_a = _rings(groups_a, total_a)
            flows_b, rings_b = _rings(groups_b, total_b)
            return flows_a + flows_b, rings_a + rings_b

        first, first_rings = both(row_groups, (cols - 1) / cols * half,
                                  col_groups, (rows - 1) / rows * half)
        middle, middle_rings = both(col_groups, 2 * (rows - 1) / rows * half / cols,
                                    row_groups, 2 * (cols - 1) / cols * half / rows)
        # each half takes 2(R-1) + 2(C-1) steps in all, the two halves at once
        steps = rows + cols - 2
        return [Phase("scatter rows | columns", steps // 2, first, rings=first_rings),
                Phase("all-reduce columns | rows", steps, middle, rings=middle_rings),
                Phase("gather rows | columns", steps - steps // 2, first, rings=first_rings)]
    if algo == "dbtree":
        from hosts.dbtree import DEFAULT_CHUNK_ELEMS, tree_roles
        flows: list[Flow] = []
        depth = 0
        for tree in (1, 2):
            parent, _ = tree_roles(n, tree)
            for r in range(n):
                if parent[r] is not None:
                    flows += [(r, parent[r], size / 2), (parent[r], r, size / 2)]
                hops, q = 0, r
                while parent[q] is not None:
                    hops, q = hops + 1, parent[q]
                depth = max(depth, hops)
        chunk = chunk_bytes or min(DEFAULT_CHUNK_ELEMS * 4, size / 2)
        return [Phase("both trees, pipelined", 2 * depth, flows,
                      extra_s=0.0 if depth == 0 else (2 * depth - 1) * chunk)]
    raise ValueError(f"no model for algorithm {algo!r}")


# the simulator's TCP ports (acknowledgements: data port -> ack port), for ECMP hashing
SIM_PORTS = {"ring": (5201, 40000)}
PLAN_PORTS = (5202, 40002)


def evaluate(net: ModelNetwork, hosts: list[str], phases: list[Phase], algo: str,
             *, gamma_s_per_byte: float = 0.0, reduce_bytes: float = 0.0,
             hashed: bool = True) -> Prediction:
    """Time of `phases` with rank r on host hosts[r] (TCP transport of the simulator; with
    `hashed`, flows take the path the ECMP hash of the simulator's ports picks)."""
    ports = SIM_PORTS.get(algo, PLAN_PORTS) if hashed else None
    latency = bandwidth = 0.0
    report = []
    frame = MSS + TCP_FRAME_OVERHEAD
    min_bw = min((b for b in net.bw_bps.values() if b), default=None)
    for phase in phases:
        load: dict = {}
        frames: dict[str, float] = {}
        alpha = 0.0
        flow_alpha: list[float] = []
        for src, dst, payload in phase.flows:
            a, b = hosts[src], hosts[dst]
            data_frames = payload / MSS
            ack_frames = data_frames / ACK_EVERY
            wire = payload + data_frames * TCP_FRAME_OVERHEAD
            data_ports = None if ports is None else (ports[1], ports[0])
            for (x, y), share in net.spread(a, b, data_ports).items():
                load[(x, y)] = load.get((x, y), 0.0) + wire * share
                if net.is_switch(y):
                    frames[y] = frames.get(y, 0.0) + data_frames * share
            for (x, y), share in net.spread(b, a, ports).items():
                load[(x, y)] = load.get((x, y), 0.0) + ack_frames * ACK_FRAME * share
                if net.is_switch(y):
                    frames[y] = frames.get(y, 0.0) + ack_frames * share
            first = net.bw_bps[(a, net.topology.host_link(a).node)]
            hop_one = frame * 8 / first if first else 0.0
            alpha = max(alpha, net.path_latency(a, b, frame) - hop_one)
            if phase.rings:      # a step's message may be less than a segment
                step = min(MSS, payload / max(1, phase.steps)) + TCP_FRAME_OVERHEAD
                flow_alpha.append(net.path_latency(a, b, step) -
                                  (step * 8 / first if first else 0.0))
        if phase.rings:
            alpha = _ring_alpha(flow_alpha, phase.rings)
        link_s = max((bytes_ * 8 / net.bw_bps[d] for d, bytes_ in load.items()
                      if net.bw_bps[d]), default=0.0)
        switch_s = max(frames.values(), default=0.0) * net.switch.routed_frame_s
        extra = phase.extra_s * 8 * (frame / MSS) / min_bw if phase.extra_s and min_bw else 0.0
        latency += phase.steps * alpha
        bandwidth += max(link_s, switch_s) + extra
        report.append({"phase": phase.name, "steps": phase.steps, "alpha_s": alpha,
                       "link_s": link_s, "switch_s": switch_s, "extra_s": extra})
    reduce_s = gamma_s_per_byte * reduce_bytes
    return Prediction(algo, latency + bandwidth + reduce_s, latency, bandwidth, reduce_s, report)


def _ring_alpha(flow_alpha: list[float], rings: list[int]) -> float:
    """Latency per step of rings running at once: the slowest ring's mean over its links.

    In a ring, step s of rank i needs only step s - 1 of rank i - 1, so over its 2(m - 1)
    steps the chain of waits goes round the ring about twice and meets every link equally
    often: the latency it adds is the links' mean α per step, not the longest path's. (With
    the longest path, the 1024-worker fat-tree ring was predicted at 7.2 s for 2.15 s
    simulated: most ring neighbours share an edge switch, one pair in 8 crosses pods.)"""
    worst, start = 0.0, 0
    for size in rings:
        if size:
            worst = max(worst, sum(flow_alpha[start:start + size]) / size)
        start += size
    return worst


def reduced_bytes(algo: str, n: int, size: float) -> float:
    """Bytes one rank adds into its buffer (the γ term): (n-1)/n·N for the bandwidth-optimal
    algorithms, N for an interior tree node, (n-1)·N/n for a PS server."""
    if n < 2:
        return 0.0
    return size if algo == "dbtree" else (n - 1) / n * size


def ina_prediction(net: ModelNetwork, hosts: list[str], size_bytes: int, *, elems_k: int,
                   window: int, root: str | None = None) -> Prediction:
    """INA: chunks of k values; every link of the aggregation tree carries one frame per chunk
    each way; each switch spends, per chunk, a packet per child contribution, a copy per
    partial sent up, a packet for the result from its parent and a copy per child it
    multicasts to. T = 2·RTT0 + chunks · max(frame/β, switch per chunk, RTT0/window)."""
    topo = net.topology
    chunks = math.ceil(size_bytes / 4 / elems_k)
    frame = INA_FRAME_OVERHEAD + 4 * elems_k
    if root is None:
        root = topo.host_link(hosts[0]).node
    children: dict[str, set[str]] = {}
    link_s = 0.0
    rtt = 0.0
    for host in hosts:
        path = topo.shortest_path(host, root)
        for a, b in zip(path, path[1:]):
            children.setdefault(b, set()).add(a)
            for d in ((a, b), (b, a)):
                bw = net.bw_bps[d]
                if bw:
                    link_s = max(link_s, frame * 8 / bw)
        up = sum(frame * 8 / net.bw_bps[d] if net.bw_bps[d] else 0.0
                 for d in zip(path, path[1:])) + sum(net.delay_s[d] for d in zip(path, path[1:]))
        rtt = max(rtt, 2 * (up + (len(path) - 1) * net.switch.per_packet_s))
    cost = net.switch
    per_switch = {}
    for switch, kids in children.items():
        c = len(kids)
        service = c * cost.per_packet_s + c * cost.per_copy_s     # contributions, result copies
        if switch != root:
            service += cost.per_packet_s + cost.per_copy_s        # the result from the parent
        per_switch[switch] = service
    switch_s = max(per_switch.values(), default=0.0)
    per_chunk = max(link_s, switch_s, rtt / max(1, window))
    time_s = 2 * rtt + chunks * per_chunk
    return Prediction("ina", time_s, 2 * rtt, chunks * per_chunk, 0.0,
                      [{"phase": "chunks", "chunks": chunks, "rtt_s": rtt, "link_s": link_s,
                        "switch_s": switch_s, "window_s": rtt / max(1, window)}])
