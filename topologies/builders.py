"""Builders for the usual shapes: each returns a validated `Topology`, nothing else.

Addressing is deterministic so that runs are reproducible and many switches coexist:
- host N (1-based) is `hN`, IPv4 `10.0.0.N/24` (a topology with more than 254 hosts puts them
  all in 10.0.0.0/16 instead, so 10.0.1.1 is h257), MAC `02:00` followed by the four IPv4 bytes (locally administered);
- switch i (1-based, in the order the builder creates them) is device id i and listens for
  P4Runtime on 127.0.0.1:`50000 + i`.
Hosts attach with their port 0 (`hN-eth0`); switch ports count from 1.
"""

from __future__ import annotations

import ipaddress

from topologies.model import Direction, Endpoint, Host, Link, Switch, Topology, TopologyError

BASE_GRPC_PORT = 20000


def host(n: int, prefix_len: int = 24) -> Host:
    """The n-th host (1-based) with the project's deterministic addresses."""
    limit = 2 ** (32 - prefix_len) - 2
    if n < 1 or n > limit:
        raise TopologyError("hosts", f"host number {n} does not fit a /{prefix_len} (1..{limit})")
    ip = ipaddress.IPv4Address(int(ipaddress.IPv4Address("10.0.0.0")) + n)
    mac = "02:00:" + ":".join(f"{b:02x}" for b in ip.packed)
    return Host(name=f"h{n}", ip=str(ip), mac=mac, prefix_len=prefix_len)


def _prefix_for(n_hosts: int) -> int:
    """/24 while every host fits in 10.0.0.0/24, else /16, so all hosts share one subnet."""
    return 24 if n_hosts <= 254 else 16


def switch(i: int, *, name: str | None = None, tier: str = "tor") -> Switch:
    """The i-th switch (1-based): device id i, gRPC port 20000 + i."""
    return Switch(name=name or f"s{i}", device_id=i, grpc_port=BASE_GRPC_PORT + i, tier=tier)


def link(a: str, a_port: int, b: str, b_port: int, *, bw: float | None = None,
         loss: float = 0, delay_ms: float = 0) -> Link:
    """A symmetric link: the same loss (percent) and delay in both directions."""
    direction = Direction(delay_ms=delay_ms, loss_percent=loss)
    return Link(a=Endpoint(node=a, port=a_port), b=Endpoint(node=b, port=b_port), bw_mbps=bw,
                a_to_b=direction, b_to_a=direction)


def _check_count(what: str, value: int, low: int = 1) -> None:
    if isinstance(value, bool) or not isinstance(value, int) or value < low:
        raise TopologyError(what, f"expected an integer >= {low}, got {value!r}")


def star(n_hosts: int, bw: float | None = None, loss: float = 0, delay_ms: float = 0) -> Topology:
    """One switch `s1`; host hN on its port N. `bw` in Mbit/s, `loss` in percent."""
    _check_count("n_hosts", n_hosts)
    hosts = [host(n, _prefix_for(n_hosts)) for n in range(1, n_hosts + 1)]
    links = [link(h.name, 0, "s1", n, bw=bw, loss=loss, delay_ms=delay_ms)
             for n, h in enumerate(hosts, start=1)]
    return Topology(name=f"star{n_hosts}", hosts=hosts, switches=[switch(1)], links=links)


def linear(n_switches: int, hosts_per_switch: int = 1, bw: float | None = None, loss: float = 0,
           delay_ms: float = 0) -> Topology:
    """A chain s1 - s2 - ... - sK, each with its own hosts.

    On switch si, its hosts take ports 1..H, the link to s(i-1) port H+1 and to s(i+1) port H+2.
    """
    _check_count("n_switches", n_switches)
    _check_count("hosts_per_switch", hosts_per_switch)
    switches = [switch(i) for i in range(1, n_switches + 1)]
    hosts, links = [], []
    for i, sw in enumerate(switches):
        for p in range(1, hosts_per_switch + 1):
            h = host(i * hosts_per_switch + p, _prefix_for(n_switches * hosts_per_switch))
            hosts.append(h)
            links.append(link(h.name, 0, sw.name, p, bw=bw, loss=loss, delay_ms=delay_ms))
        if i > 0:
            links.append(link(switches[i - 1].name, hosts_per_switch + 2, sw.name,
                              hosts_per_switch + 1, bw=bw, loss=loss, delay_ms=delay_ms))
    return Topology(name=f"linear{n_switches}x{hosts_per_switch}", hosts=hosts, switches=switches,
                    links=links)


def leaf_spine(n_leaves: int, n_spines: int, hosts_per_leaf: int, bw: float | None = None,
               loss: float = 0, delay_ms: float = 0, *, oversubscription: float = 1) -> Topology:
    """A two-tier Clos: every leaf links to every spine.

    Leaves are `l1..lL` (device ids 1..L, tier "leaf"), spines `sp1..spS` (device ids L+1.., tier
    "spine"). On a leaf, hosts take ports 1..H and spine j is port H+j; on a spine, leaf i is port i.
    Bandwidth: host links run at `bw`; each leaf-spine link at `bw * H / (S * oversubscription)`,
    so a leaf's hosts can offer `oversubscription` times what its uplinks carry (1: non-blocking).
    """
    for what, value in (("n_leaves", n_leaves), ("n_spines", n_spines),
                        ("hosts_per_leaf", hosts_per_leaf)):
        _check_count(what, value)
    if isinstance(oversubscription, bool) or not isinstance(oversubscription, (int, float)) \
            or not oversubscription > 0:
        raise TopologyError("oversubscription", f"expected a ratio > 0, got {oversubscription!r}")
    uplink_bw = None if bw is None else bw * hosts_per_leaf / (n_spines * oversubscription)
    leaves = [switch(i, name=f"l{i}", tier="leaf") for i in range(1, n_leaves + 1)]
    spines = [switch(n_leaves + j, name=f"sp{j}", tier="spine") for j in range(1, n_spines + 1)]
    hosts, links = [], []
    for i, leaf in enumerate(leaves):
        for p in range(1, hosts_per_leaf + 1):
            h = host(i * hosts_per_leaf + p, _prefix_for(n_leaves * hosts_per_leaf))
            hosts.append(h)
            links.append(link(h.name, 0, leaf.name, p, bw=bw, loss=loss, delay_ms=delay_ms))
        for j, spine in enumerate(spines, start=1):
            links.append(link(leaf.name, hosts_per_leaf + j, spine.name, i + 1, bw=uplink_bw,
                              loss=loss, delay_ms=delay_ms))
    return Topology(name=f"leafspine{n_leaves}x{n_spines}", hosts=hosts,
                    switches=leaves + spines, links=links)


def fat_tree(k: int, bw: float | None = None, loss: float = 0, delay_ms: float = 0) -> Topology:
    """A k-ary fat-tree (k even): k pods of k/2 edge and k/2 aggregation switches, (k/2)^2 cores,
    k/2 hosts per edge switch, so k^3/4 hosts.

    Names: edge `e<pod>_<i>`, aggregation `a<pod>_<i>`, core `c<j>` (tiers "edge", "agg", "core";
    device ids in that order). Ports: an edge switch has its hosts on 1..k/2 and aggregation
    switch i of its pod on k/2+1+i; an aggregation switch has edge i on 1+i and its cores on
    k/2+1..k; core j links to aggregation switch j // (k/2) of pod p on its port 1+p.
    """
    _check_count("k", k, low=2)
    if k % 2:
        raise TopologyError("k", f"a fat-tree needs an even k, got {k}")
    half = k // 2
    prefix = _prefix_for(k * half * half)
    ids = iter(range(1, 5 * half * half + 1))
    edges = [[switch(next(ids), name=f"e{p}_{i}", tier="edge") for i in range(half)] for p in range(k)]
    aggs = [[switch(next(ids), name=f"a{p}_{i}", tier="agg") for i in range(half)] for p in range(k)]
    cores = [switch(next(ids), name=f"c{j}", tier="core") for j in range(half * half)]
    hosts, links = [], []
    opts = {"bw": bw, "loss": loss, "delay_ms": delay_ms}
    for p in range(k):
        for i, edge in enumerate(edges[p]):
            for h in range(half):
                new = host((p * half + i) * half + h + 1, prefix)
                hosts.append(new)
                links.append(link(new.name, 0, edge.name, h + 1, **opts))
            for a, agg in enumerate(aggs[p]):
                links.append(link(edge.name, half + 1 + a, agg.name, 1 + i, **opts))
    for j, core in enumerate(cores):
        for p in range(k):
            links.append(link(aggs[p][j // half].name, half + 1 + j % half, core.name, 1 + p, **opts))
    switches = [s for pod in edges for s in pod] + [s for pod in aggs for s in pod] + cores
    return Topology(name=f"fattree{k}", hosts=hosts, switches=switches, links=links)


BUILDERS = {"star": star, "linear": linear, "leaf_spine": leaf_spine, "fat_tree": fat_tree}


def from_spec(spec: str) -> Topology:
    """A topology from a short spec: `star:3`, `linear:3,2`, `leaf_spine:2,2,4` (counts only)."""
    name, _, numbers = spec.partition(":")
    builder = BUILDERS.get(name)
    if builder is None:
        raise TopologyError(spec, f"unknown shape {name!r} (known: {', '.join(BUILDERS)})")
    try:
        counts = [int(n) for n in numbers.split(",")] if numbers else []
    except ValueError:
        raise TopologyError(spec, "expected comma-separated integers after ':'") from None
    try:
        return builder(*counts)
    except TypeError:
        raise TopologyError(spec, f"wrong number of counts for {name}") from None
