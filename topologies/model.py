"""The topology description: plain, frozen data that Mininet, the simulator and the controller read.

Why plain data: the same object must drive a Mininet network (root, processes), a discrete-event
simulator (no root) and the controller's route computation (no network at all). So it holds no
process, socket or Mininet import; it validates itself on construction (a bad topology fails where
it is written, not halfway through starting switches) and round-trips through JSON, so a topology
can be saved next to an experiment's results and read back by `inaemu controller --topology`.

Conventions:
- Hosts have exactly one link (one interface, `<host>-eth<port>`, port usually 0); the host's IPv4
  address and MAC belong to that interface.
- Switch ports are 1..510 (511 is the v1model drop port); the Mininet interface of port P on
  switch S is `<S>-eth<P>`.
- `loss_percent` follows Mininet's `TCLink(loss=...)`: 0..100. `delay_ms` is one-way.
- Every link direction has its own loss and delay (`a_to_b`, `b_to_a`); bandwidth is symmetric.
"""

from __future__ import annotations

import ipaddress
import json
import re
from collections import deque
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, ClassVar, Iterable

import numpy as np

MAX_SWITCH_PORT = 510  # 511 is BMv2's drop port
_NAME_RE = re.compile(r"^[A-Za-z][A-Za-z0-9_]{0,9}$")  # "<name>-eth<port>" must fit IFNAMSIZ (15)
_MAC_RE = re.compile(r"^([0-9a-f]{2}:){5}[0-9a-f]{2}$")


class TopologyError(ValueError):
    """A topology description is malformed; the message starts with where (e.g. `links[2].b`)."""

    def __init__(self, where: str, problem: str):
        super().__init__(f"{where}: {problem}" if where else problem)
        self.where = where
        self.problem = problem


def _check_name(where: str, name: Any) -> None:
    if not isinstance(name, str) or not _NAME_RE.match(name):
        raise TopologyError(where, f"name {name!r} must be a letter then up to 9 letters, digits "
                                   "or '_' (it becomes part of Linux interface names)")


def _check_number(where: str, value: Any, low: float, high: float | None = None) -> None:
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise TopologyError(where, f"expected a number, got {value!r}")
    if value < low or (high is not None and value > high):
        bound = f"{low}..{high}" if high is not None else f">= {low}"
        raise TopologyError(where, f"{value!r} is out of range ({bound})")


def _check_int(where: str, value: Any, low: int, high: int) -> None:
    if isinstance(value, bool) or not isinstance(value, int):
        raise TopologyError(where, f"expected an integer, got {value!r}")
    _check_number(where, value, low, high)


@dataclass(frozen=True, kw_only=True)
class Host:
    """An end host with one interface."""

    name: str
    ip: str                 # dotted IPv4, no prefix
    mac: str                # lower-case aa:bb:cc:dd:ee:ff
    prefix_len: int = 24    # the on-link subnet the host's interface is configured with

    def __post_init__(self) -> None:
        _check_name("name", self.name)
        try:
            ipaddress.IPv4Address(self.ip)
        except (ipaddress.AddressValueError, TypeError, ValueError):
            raise TopologyError("ip", f"{self.ip!r} is not a dotted IPv4 address") from None
        if not isinstance(self.mac, str) or not _MAC_RE.match(self.mac):
            raise TopologyError("mac", f"{self.mac!r} is not a lower-case MAC like 02:00:0a:00:00:01")
        if int(self.mac[:2], 16) & 1:
            raise TopologyError("mac", f"{self.mac} is a multicast address")
        _check_int("prefix_len", self.prefix_len, 0, 32)

    @property
    def ip_with_prefix(self) -> str:
        """`10.0.0.1/24`: the form Mininet's `addHost(ip=...)` takes."""
        return f"{self.ip}/{self.prefix_len}"


@dataclass(frozen=True, kw_only=True)
class Switch:
    """A P4 switch: its P4Runtime identity (device id, gRPC port) and its tier in the fabric."""

    name: str
    device_id: int
    grpc_port: int
    tier: str = "tor"   # free-form label: "tor", "leaf", "spine", "core", "agg", ...

    def __post_init__(self) -> None:
        _check_name("name", self.name)
        _check_int("device_id", self.device_id, 0, 2**64 - 1)
        _check_int("grpc_port", self.grpc_port, 1, 65535)
        if not isinstance(self.tier, str) or not self.tier:
            raise TopologyError("tier", f"expected a non-empty label, got {self.tier!r}")


@dataclass(frozen=True, kw_only=True)
class Direction:
    """What one direction of a link does to packets: one-way delay and random loss."""

    delay_ms: float = 0.0
    loss_percent: float = 0.0

    def __post_init__(self) -> None:
        _check_number("delay_ms", self.delay_ms, 0)
        _check_number("loss_percent", self.loss_percent, 0, 100)

    @property
    def is_ideal(self) -> bool:
        return self.delay_ms == 0 and self.loss_percent == 0


@dataclass(frozen=True, kw_only=True)
class Endpoint:
    """One end of a link: a node and its port number on that link."""

    node: str
    port: int

    def __post_init__(self) -> None:
        _check_name("node", self.node)
        _check_int("port", self.port, 0, MAX_SWITCH_PORT)


@dataclass(frozen=True, kw_only=True)
class Link:
    """A full-duplex link. `bw_mbps=None` means unshaped; each direction has its own impairments."""

    a: Endpoint
    b: Endpoint
    bw_mbps: float | None = None
    a_to_b: Direction = field(default_factory=Direction)
    b_to_a: Direction = field(default_factory=Direction)

    def __post_init__(self) -> None:
        for label in ("a", "b"):
            if not isinstance(getattr(self, label), Endpoint):
                raise TopologyError(label, "expected an Endpoint")
        for label in ("a_to_b", "b_to_a"):
            if not isinstance(getattr(self, label), Direction):
                raise TopologyError(label, "expected a Direction")
        if self.a.node == self.b.node:
            raise TopologyError("b.node", f"a link cannot connect {self.a.node} to itself")
        if self.bw_mbps is not None:
            _check_number("bw_mbps", self.bw_mbps, 0)
            if self.bw_mbps == 0:
                raise TopologyError("bw_mbps", "must be positive (or null for unshaped)")

    def end(self, node: str) -> Endpoint:
        """This link's endpoint on `node`."""
        if node == self.a.node:
            return self.a
        if node == self.b.node:
            return self.b
        raise KeyError(f"link {self.a.node}-{self.b.node} does not touch {node}")

    def other(self, node: str) -> Endpoint:
        """The endpoint opposite `node`."""
        return self.b if self.end(node) is self.a else self.a

    def leaving(self, node: str) -> Direction:
        """The impairments of the direction that leaves `node`."""
        return self.a_to_b if self.end(node) is self.a else self.b_to_a


@dataclass(frozen=True, kw_only=True)
class Neighbour:
    """Seen from one node: the local port, and the node and port at the other end of that link."""

    port: int
    node: str
    remote_port: int
    link: Link


@dataclass(frozen=True, kw_only=True)
class Topology:
    """Hosts, switches and links, checked for consistency on construction."""

    name: str = "topology"
    hosts: tuple[Host, ...] = ()
    switches: tuple[Switch, ...] = ()
    links: tuple[Link, ...] = ()
    _by_name: dict = field(init=False, repr=False, compare=False)
    _adjacency: dict = field(init=False, repr=False, compare=False)
    _distances: Any = field(init=False, repr=False, compare=False, default=None)
    # Whether a host may have no link at all (a topology after failures, topologies/degraded.py);
    # every description of a real network gives each host exactly one.
    detached_hosts: ClassVar[bool] = False

    def __post_init__(self) -> None:
        for attr in ("hosts", "switches", "links"):
            object.__setattr__(self, attr, tuple(getattr(self, attr)))
        if not isinstance(self.name, str) or not self.name:
            raise TopologyError("name", "expected a non-empty string")
        by_name: dict[str, Host | Switch] = {}
        for kind, items, cls in (("hosts", self.hosts, Host), ("switches", self.switches, Switch)):
            for i, item in enumerate(items):
                if not isinstance(item, cls):
                    raise TopologyError(f"{kind}[{i}]", f"expected a {cls.__name__}")
                if item.name in by_name:
                    raise TopologyError(f"{kind}[{i}].name", f"duplicate node name {item.name!r}")
                by_name[item.name] = item
        self._check_unique("hosts", "ip", self.hosts)
        self._check_unique("hosts", "mac", self.hosts)
        self._check_unique("switches", "device_id", self.switches)
        self._check_unique("switches", "grpc_port", self.switches)
        adjacency: dict[str, list[Neighbour]] = {name: [] for name in by_name}
        used: set[tuple[str, int]] = set()      # (node, port): a port is used once
        for i, link in enumerate(self.links):
            if not isinstance(link, Link):
                raise TopologyError(f"links[{i}]", "expected a Link")
            for label in ("a", "b"):
                end = getattr(link, label)
                where = f"links[{i}].{label}"
                node = by_name.get(end.node)
                if node is None:
                    raise TopologyError(f"{where}.node", f"unknown node {end.node!r}")
                if isinstance(node, Switch) and end.port < 1:
                    raise TopologyError(f"{where}.port", f"switch ports are 1..{MAX_SWITCH_PORT}")
                if (end.node, end.port) in used:
                    raise TopologyError(f"{where}.port", f"port {end.port} of {end.node} is used twice")
                used.add((end.node, end.port))
                other = link.other(end.node)
                adjacency[end.node].append(
                    Neighbour(port=end.port, node=other.node, remote_port=other.port, link=link))
            if isinstance(by_name[link.a.node], Host) and isinstance(by_name[link.b.node], Host):
                raise TopologyError(f"links[{i}]", "a link must touch at least one switch")
        for i, host in enumerate(self.hosts):
            count = len(adjacency[host.name])
            if count != 1 and not (count == 0 and self.detached_hosts):
                raise TopologyError(f"hosts[{i}]", f"host {host.name} has {count} links; it needs exactly 1")
        for neighbours in adjacency.values():
            neighbours.sort(key=lambda n: n.port)
        object.__setattr__(self, "_by_name", by_name)
        object.__setattr__(self, "_adjacency", adjacency)

    @staticmethod
    def _check_unique(kind: str, attr: str, items: Iterable[Any]) -> None:
        seen: dict[Any, str] = {}
        for i, item in enumerate(items):
            value = getattr(item, attr)
            if value in seen:
                raise TopologyError(f"{kind}[{i}].{attr}", f"{value!r} is already used by {seen[value]}")
            seen[value] = item.name

    # -- look-ups ---------------------------------------------------------------------------------

    def node(self, name: str) -> Host | Switch:
        try:
            return self._by_name[name]
        except KeyError:
            raise KeyError(f"no node named {name!r} in topology {self.name!r}") from None

    def host(self, name: str) -> Host:
        node = self.node(name)
        if not isinstance(node, Host):
            raise KeyError(f"{name!r} is a switch, not a host")
        return node

    def switch(self, name: str) -> Switch:
        node = self.node(name)
        if not isinstance(node, Switch):
            raise KeyError(f"{name!r} is a host, not a switch")
        return node

    def is_switch(self, name: str) -> bool:
        return isinstance(self.node(name), Switch)

    def neighbours(self, name: str) -> list[Neighbour]:
        """Every link of `name`, by ascending local port."""
        self.node(name)
        return list(self._adjacency[name])

    def port_towards(self, name: str, neighbour: str) -> int:
        """The port of `name` on its (lowest-numbered) link to `neighbour`."""
        for n in self._adjacency[self.node(name).name]:
            if n.node == neighbour:
                return n.port
        raise KeyError(f"{name} has no link to {neighbour}")

    def host_link(self, host: str) -> Neighbour:
        """The single link of a host: its port, and the switch and switch port it attaches to."""
        links = self._adjacency[self.host(host).name]
        if not links:
            raise KeyError(f"host {host} has no link in topology {self.name!r}")
        return links[0]

    def host_by_ip(self, ip: str) -> Host:
        by_ip = self.__dict__.get("_by_ip")
        if by_ip is None:       # once per topology: the controller asks per aggregator address
            by_ip = {h.ip: h for h in self.hosts}
            object.__setattr__(self, "_by_ip", by_ip)
        try:
            return by_ip[ip]
        except KeyError:
            raise KeyError(f"no host has address {ip}") from None

    def static_arp(self, host: str) -> list[tuple[str, str]]:
        """(ip, mac) of every other host: the neighbour entries that replace ARP broadcasts."""
        self.host(host)
        return [(h.ip, h.mac) for h in self.hosts if h.name != host]

    # -- paths ------------------------------------------------------------------------------------

    def shortest_path(self, src: str, dst: str) -> list[str]:
        """Node names from `src` to `dst` (both included), fewest hops, only switches in between.

        Ties go to the neighbour reached through the lowest port at each step, so the result is
        deterministic (the controller, Mininet and the simulator agree on it).
        """
        self.node(src)
        self.node(dst)
        if src == dst:
            return [src]
        parent: dict[str, str | None] = {src: None}
        queue = deque([src])
        while queue:
            current = queue.popleft()
            if current != src and not self.is_switch(current):
                continue  # hosts are endpoints, never transit
            for n in self._adjacency[current]:
                if n.node in parent:
                    continue
                parent[n.node] = current
                if n.node == dst:
                    path = [dst]
                    while parent[path[-1]] is not None:
                        path.append(parent[path[-1]])
                    return path[::-1]
                queue.append(n.node)
        raise KeyError(f"no path from {src} to {dst}")

    def distances_to(self, dst: str) -> dict[str, int]:
        """Hop count from every node that can reach `dst` (hosts never transit).

        Read off `switch_distances` (every switch pair, computed once per topology): a host is
        one hop beyond its one switch. Why not a search per call: the controller and the
        simulator ask for thousands of them (a BFS over 18,000 nodes per call made a
        fat-tree(40)'s routes and root choice quadratic in the hosts)."""
        node = self.node(dst)
        table = self.switch_distances()
        if isinstance(node, Switch):
            row, extra = table.matrix[table.index[dst]], 0
        else:
            links = self._adjacency[dst]
            if not links:
                return {dst: 0}
            row, extra = table.matrix[table.index[links[0].node]], 1
        dist = {dst: 0}
        for name, hops in zip(table.names, row.tolist()):
            if hops >= 0:
                dist[name] = hops + extra
        for host, switch in table.host_switch:
            if host != dst:
                hops = dist.get(switch)
                if hops is not None:
                    dist[host] = hops + 1
        return dist

    def switch_distances(self) -> "SwitchDistances":
        """Hop counts between every pair of switches over switch-to-switch links (hosts never
        transit), computed once per topology (it is immutable) and kept with it."""
        if self._distances is None:
            object.__setattr__(self, "_distances", SwitchDistances.of(self))
        return self._distances

    # -- JSON -------------------------------------------------------------------------------------

    def to_dict(self) -> dict[str, Any]:
        def direction(d: Direction) -> dict[str, float]:
            return {"delay_ms": d.delay_ms, "loss_percent": d.loss_percent}

        return {
            "name": self.name,
            "hosts": [{"name": h.name, "ip": h.ip, "prefix_len": h.prefix_len, "mac": h.mac}
                      for h in self.hosts],
            "switches": [{"name": s.name, "device_id": s.device_id, "grpc_port": s.grpc_port,
                          "tier": s.tier} for s in self.switches],
            "links": [{"a": {"node": l.a.node, "port": l.a.port},
                       "b": {"node": l.b.node, "port": l.b.port},
                       "bw_mbps": l.bw_mbps,
                       "a_to_b": direction(l.a_to_b), "b_to_a": direction(l.b_to_a)}
                      for l in self.links],
        }

    def to_json(self) -> str:
        return json.dumps(self.to_dict(), indent=2) + "\n"

    def save(self, path: str | Path) -> None:
        Path(path).write_text(self.to_json())

    @classmethod
    def from_dict(cls, data: Any) -> "Topology":
        """Build and validate; every error names the JSON path of the offending value."""
        _expect_object("", data, required=(), optional=("name", "hosts", "switches", "links"))
        hosts = tuple(_build(f"hosts[{i}]", Host, item, ("name", "ip", "mac"), ("prefix_len",))
                      for i, item in enumerate(_expect_list("hosts", data.get("hosts", []))))
        switches = tuple(_build(f"switches[{i}]", Switch, item, ("name", "device_id", "grpc_port"),
                                ("tier",))
                         for i, item in enumerate(_expect_list("switches", data.get("switches", []))))
        links = tuple(_build_link(f"links[{i}]", item)
                      for i, item in enumerate(_expect_list("links", data.get("links", []))))
        return cls(name=data.get("name", "topology"), hosts=hosts, switches=switches, links=links)

    @classmethod
    def from_json(cls, text: str) -> "Topology":
        try:
            data = json.loads(text)
        except json.JSONDecodeError as e:
            raise TopologyError(f"line {e.lineno} column {e.colno}", f"invalid JSON: {e.msg}") from None
        return cls.from_dict(data)

    @classmethod
    def load(cls, path: str | Path) -> "Topology":
        try:
            text = Path(path).read_text()
        except OSError as e:
            raise TopologyError(str(path), f"cannot read: {e.strerror}") from None
        try:
            return cls.from_json(text)
        except TopologyError as e:
            raise TopologyError(f"{path}: {e.where}" if e.where else str(path), e.problem) from None


def _expect_list(where: str, value: Any) -> list:
    if not isinstance(value, list):
        raise TopologyError(where, f"expected a list, got {type(value).__name__}")
    return value


def _expect_object(where: str, value: Any, required: Iterable[str], optional: Iterable[str]) -> None:
    if not isinstance(value, dict):
        raise TopologyError(where, f"expected an object, got {type(value).__name__}")
    allowed = set(required) | set(optional)
    for key in value:
        if key not in allowed:
            raise TopologyError(where, f"unknown field {key!r} (expected {', '.join(sorted(allowed))})")
    for key in required:
        if key not in value:
            raise TopologyError(where, f"missing field {key!r}")


def _build(where: str, cls: type, data: Any, required: tuple[str, ...], optional: tuple[str, ...]):
    _expect_object(where, data, required, optional)
    try:
        return cls(**data)
    except TopologyError as e:
        raise TopologyError(f"{where}.{e.where}", e.problem) from None


def _build_link(where: str, data: Any) -> Link:
    _expect_object(where, data, ("a", "b"), ("bw_mbps", "a_to_b", "b_to_a"))
    parts: dict[str, Any] = {"bw_mbps": data.get("bw_mbps")}
    for label in ("a", "b"):
        parts[label] = _build(f"{where}.{label}", Endpoint, data[label], ("node", "port"), ())
    for label in ("a_to_b", "b_to_a"):
        parts[label] = _build(f"{where}.{label}", Direction, data.get(label, {}), (),
                              ("delay_ms", "loss_percent"))
    try:
        return Link(**parts)
    except TopologyError as e:
        raise TopologyError(f"{where}.{e.where}", e.problem) from None


@dataclass(frozen=True)
class SwitchDistances:
    """Shortest hop counts between switches: `matrix[index[a], index[b]]`, -1 where `b` cannot
    be reached from `a`; `names` in topology order; `host_switch` (host, its switch) for every
    host with a link, in host order.

    Why a matrix (numpy, one breadth-first search from every switch at once): routes need the
    distance from every switch to every hosts' switch, and the root choice from every switch to
    every worker's; at fat-tree(40) (2,000 switches, 16,000 hosts) one Python search per host
    was minutes, the matrix is 8 MB and well under a second."""

    names: tuple[str, ...]
    index: dict[str, int]
    matrix: np.ndarray
    host_switch: tuple[tuple[str, str], ...]

    @classmethod
    def of(cls, topology: "Topology") -> "SwitchDistances":
        names = tuple(s.name for s in topology.switches)
        index = {name: i for i, name in enumerate(names)}
        n = len(names)
        # every switch-to-switch link end as (from, to), sorted by `to`: a step of the search
        # is then one gather and one bitwise-or reduction per destination switch
        ends = sorted({(index[n_.node], index[name]) for name in names
                       for n_ in topology._adjacency[name] if n_.node in index},
                      key=lambda pair: pair[1])
        matrix = np.full((n, n), -1, dtype=np.int16)
        np.fill_diagonal(matrix, 0)
        if ends and n:
            sources = np.fromiter((a for a, _ in ends), dtype=np.intp, count=len(ends))
            targets = np.fromiter((b for _, b in ends), dtype=np.intp, count=len(ends))
            heads, starts = np.unique(targets, return_index=True)
            # frontier[i]: bit j set when switch i is at the current distance from switch j
            frontier = np.packbits(np.eye(n, dtype=bool), axis=1)
            reached = frontier.copy()
            hops = 0
            while True:
                hops += 1
                step = np.zeros_like(frontier)
                step[heads] = np.bitwise_or.reduceat(frontier[sources], starts, axis=0)
                step &= ~reached
                if not step.any():
                    break
                reached |= step
                matrix[np.unpackbits(step, axis=1, count=n).astype(bool)] = hops
                frontier = step
        host_switch = tuple((h.name, topology._adjacency[h.name][0].node)
                            for h in topology.hosts if topology._adjacency[h.name])
        return cls(names, index, matrix, host_switch)
