"""The packet replication engine's configuration: multicast groups and mirroring sessions.

Multicast follows BMv2's model: a group is an ordered list of nodes, a node is a replication id
(rid) plus a set of ports and a set of LAGs (port bundles, BMv2's SimplePreLAG). A packet sent
to a group yields one copy per (node, port), in node order then port order, then one copy per LAG of the
node, in LAG order, each carrying its node's rid as `egress_rid`. A LAG's copy leaves on one of
its member ports, chosen as simple_switch's SimplePreLAG chooses it: its hash is the constant
0xFF, so it is member number 0xFF mod (member count), counting the members in port order; a LAG
with no member, or never given members, makes no copy.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from ..errors import AlreadyExists, InvalidArgument, NotFound

MAX_PORT = 511
MAX_LAG = 256               # SimplePreLAG's LAG_MAX_ENTRIES (index 256 itself is accepted)
MAX_LAG_MAP = 511           # a node's LAG map has 512 bits
LAG_HASH = 0xFF             # SimplePreLAG's hash for every packet


def _is_int(value) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


def _check_numbers(values, what: str, high: int) -> list[int]:
    """Ports or LAG indices: ints in [0, high], as a sorted set."""
    try:
        values = list(values)
    except TypeError:
        raise InvalidArgument(f"{what}s must be a list of ints, got {values!r}") from None
    for value in values:
        if not _is_int(value) or not 0 <= value <= high:
            raise InvalidArgument(f"{what} {value!r} out of range [0, {high}]")
    return sorted(set(values))


def _check_ports(ports) -> list[int]:
    return _check_numbers(ports, "port", MAX_PORT)


def _check_lags(lags) -> list[int]:
    return _check_numbers(lags, "LAG", MAX_LAG_MAP)


@dataclass
class McNode:
    rid: int
    ports: list[int]
    group: int | None = None
    lags: list[int] = field(default_factory=list)


class Replication:
    def __init__(self) -> None:
        self.groups: dict[int, list[int]] = {}    # mgid -> node handles, in order
        self.nodes: dict[int, McNode] = {}
        self.mirrors: dict[int, dict] = {}        # session -> {"port": int|None, "mgid": int|None}
        self.lag_members: dict[int, list[int]] = {}   # LAG index -> member ports, in order
        self._next_node = 0
        self._replicas: dict[int, list[tuple[int, int]]] = {}  # mgid -> cached (port, rid)

    # ---------------------------------------------------------------------------- multicast
    def replicas(self, mgid: int) -> list[tuple[int, int]]:
        """(port, rid) copies for a group, in emission order; empty for an unknown group."""
        cached = self._replicas.get(mgid)
        if cached is None:
            cached = []
            for handle in self.groups.get(mgid, ()):
                node = self.nodes[handle]
                cached += [(port, node.rid) for port in node.ports]
                for lag in node.lags:
                    members = self.lag_members.get(lag)
                    if members:
                        cached.append((members[LAG_HASH % len(members)], node.rid))
            self._replicas[mgid] = cached
        return cached

    @property
    def cached_replicas(self) -> dict[int, list[tuple[int, int]]]:
        """mgid -> the list `replicas` gave for it, for the groups asked for since the last
        change: always this dict, cleared in place on any change, so generated code may hold
        it and look a group up without calling `replicas`."""
        return self._replicas

    def _changed(self) -> None:
        self._replicas.clear()

    @staticmethod
    def _check_mgid(mgid) -> None:
        if not _is_int(mgid) or not 0 < mgid < 1 << 16:
            raise InvalidArgument(f"multicast group id {mgid!r} out of range [1, 65535]")

    def group_create(self, mgid: int) -> None:
        self._check_mgid(mgid)
        if mgid in self.groups:
            raise AlreadyExists(f"multicast group {mgid} exists")
        self.groups[mgid] = []
        self._changed()

    def group_delete(self, mgid: int) -> None:
        for handle in self._group(mgid):
            self.nodes[handle].group = None
        del self.groups[mgid]
        self._changed()

    def _group(self, mgid: int) -> list[int]:
        if not _is_int(mgid) or mgid not in self.groups:
            raise NotFound(f"no multicast group {mgid!r}")
        return self.groups[mgid]

    def _node(self, handle: int) -> McNode:
        if not _is_int(handle) or handle not in self.nodes:
            raise NotFound(f"no multicast node {handle!r}")
        return self.nodes[handle]

    def group_nodes(self, mgid: int) -> list[int]:
        """A group's node handles, in replication order."""
        return list(self._group(mgid))

    def node(self, handle: int) -> McNode:
        return self._node(handle)

    def node_create(self, rid: int, ports, lags=()) -> int:
        if not _is_int(rid) or not 0 <= rid < 1 << 16:
            raise InvalidArgument(f"replication id {rid!r} out of range [0, 65535]")
        node = McNode(rid, _check_ports(ports), lags=_check_lags(lags))
        handle = self._next_node
        self._next_node += 1
        self.nodes[handle] = node
        return handle

    def node_update(self, handle: int, ports, lags=None) -> None:
        node = self._node(handle)
        ports = _check_ports(ports)
        lags = node.lags if lags is None else _check_lags(lags)
        node.ports, node.lags = ports, lags
        self._changed()

    def reset(self) -> None:
        """Every group, node and LAG gone; node handles start over. Mirroring stays."""
        self.groups.clear()
        self.nodes.clear()
        self.lag_members.clear()
        self._next_node = 0
        self._changed()

    def set_lag_members(self, lag: int, ports) -> None:
        """A LAG's member ports (SimplePreLAG's mc_set_lag_membership); none empties it."""
        if not _is_int(lag) or not 0 <= lag <= MAX_LAG:
            raise InvalidArgument(f"LAG index {lag!r} out of range [0, {MAX_LAG}]")
        self.lag_members[lag] = _check_ports(ports)
        self._changed()

    def node_destroy(self, handle: int) -> None:
        node = self._node(handle)
        if node.group is not None:
            self.groups[node.group].remove(handle)
        del self.nodes[handle]
        self._changed()

    def node_associate(self, mgid: int, handle: int) -> None:
        group = self._group(mgid)
        node = self._node(handle)
        if node.group is not None:
            raise AlreadyExists(f"multicast node {handle} is already in group {node.group}")
        node.group = mgid
        group.append(handle)
        self._changed()

    def node_dissociate(self, mgid: int, handle: int) -> None:
        group = self._group(mgid)
        node = self._node(handle)
        if handle not in group:
            raise NotFound(f"multicast node {handle} is not in group {mgid}")
        group.remove(handle)
        node.group = None
        self._changed()

    def group_set(self, mgid: int, replicas) -> None:
        """Create or replace a group from (port, rid) pairs (P4Runtime's view)."""
        self._check_mgid(mgid)
        by_rid: dict[int, list[int]] = {}
        try:
            replicas = list(replicas)
        except TypeError:
            raise InvalidArgument(f"replicas must be a list of (port, rid), got {replicas!r}") \
                from None
        for item in replicas:
            try:
                port, rid = item
            except (TypeError, ValueError):
                raise InvalidArgument(f"replica {item!r} is not (port, rid)") from None
            _check_ports([port])
            if not _is_int(rid) or not 0 <= rid < 1 << 16:
                raise InvalidArgument(f"replication id {rid!r} out of range [0, 65535]")
            by_rid.setdefault(rid, []).append(port)
        if mgid in self.groups:
            for handle in list(self.groups[mgid]):
                del self.nodes[handle]
            self.groups[mgid] = []
        else:
            self.groups[mgid] = []
        for rid, ports in by_rid.items():
            handle = self.node_create(rid, ports)
            self.nodes[handle].group = mgid
            self.groups[mgid].append(handle)
        self._changed()

    def group_remove(self, mgid: int) -> None:
        """Delete a group and its nodes: the inverse of `group_set` (P4Runtime's view, where a
        group owns its replicas). `group_delete`, BMv2's, leaves the nodes for their handles'
        owner to destroy; after a `group_set` nobody holds those handles, so a controller that
        adds and removes jobs would collect nodes for ever."""
        for handle in self._group(mgid):
            del self.nodes[handle]
        del self.groups[mgid]
        self._changed()

    def group_get(self, mgid: int) -> list[tuple[int, int]]:
        self._group(mgid)
        return list(self.replicas(mgid))

    # ---------------------------------------------------------------------------- mirroring
    def mirroring_add(self, session: int, port: int | None = None,
                      mgid: int | None = None) -> None:
        if not _is_int(session) or not 0 <= session < 1 << 15:
            raise InvalidArgument(f"mirroring session {session!r} out of range")
        if port is None and mgid is None:
            raise InvalidArgument("a mirroring session needs a port or a multicast group")
        if port is not None:
            _check_ports([port])
        if mgid is not None:
            self._check_mgid(mgid)
        self.mirrors[session] = {"port": port, "mgid": mgid}

    def mirroring_delete(self, session: int) -> None:
        if not _is_int(session) or session not in self.mirrors:
            raise NotFound(f"no mirroring session {session!r}")
        del self.mirrors[session]

    def mirroring_get(self, session: int) -> dict | None:
        if not _is_int(session):
            raise InvalidArgument(f"mirroring session {session!r} is not an int")
        found = self.mirrors.get(session)
        return dict(found) if found is not None else None
