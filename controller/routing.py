"""Routes from a topology: a /32 for every host on every switch, over all equal-cost shortest paths.

Sans-I/O and program-agnostic: `multipath_routes` says, for each switch, every port that leads to
each host along a shortest path; `forwarding_plans` turns that into what a switch holds (a route
with one next hop, or a route through an ECMP group shared by every host with the same next-hop
set); `L3Program` says how routes and groups become table entries of a particular P4 program.
The project's `p4src/l3_forward.p4` and `p4src/ina.p4` are `L3_FORWARD` (see
p4src/forwarding.p4inc); a program with only the LPM table and a (mac, port) action still works,
with a single next hop per route.

Next hops: on switch S, the next hops towards host H are the neighbours one hop closer to H (hosts
never transit). Every hop strictly shortens the distance, so no mix of choices can loop.
- One next hop: `ipv4_forward(H's MAC, port)`, as single-path routing always did.
- Several: `ecmp_group(group, size, shift)`, and the group's members `ecmp_nhop{group, i} ->
  ipv4_forward(next hop's MAC, port_i)`, ports ascending. Group ids count from 1 per switch in the
  order the topology lists hosts, so the same topology always gives the same ids.
- `shift` picks which bits of the flow hash a switch decides on (`hash_shifts`): neighbouring
  switches get different ones, so the flows that reached an aggregation switch because of their
  hash do not all make the same choice again there (hash polarisation).
Destination MACs: the last hop always has one next hop (a host has one link), so the frame that
reaches a host is addressed to it. An ECMP member towards a switch writes `switch_mac` of that
switch, since a group serves many destinations (switches do not check MACs).
`host_routes` keeps the single deterministic path (the lowest port of the equal-cost set) for
callers that need one port per host (aggregation trees, the simulator's placement).
"""

from __future__ import annotations

import ipaddress
from dataclasses import dataclass

import numpy as np
from p4.v1 import p4runtime_pb2

from controller import entities
from controller.errors import P4InfoError
from controller.p4info import P4InfoIndex
from controller.prefixes import aggregate_runs
from topologies.model import Switch, Topology


@dataclass(frozen=True)
class Route:
    switch: str
    host: str
    prefix: str         # dotted IPv4 of the host
    prefix_len: int     # 32: one route per host
    port: int           # egress port on `switch` (the lowest of the equal-cost ports)
    dst_mac: str        # the destination host's MAC


@dataclass(frozen=True)
class NextHop:
    """One equal-cost way out of a switch: the port, the neighbour, the MAC written towards it."""

    port: int
    node: str
    mac: str


@dataclass(frozen=True)
class MultipathRoute:
    """Every shortest-path next hop of `switch` towards `host`, by ascending port."""

    switch: str
    host: str
    prefix: str
    prefix_len: int
    dst_mac: str
    next_hops: tuple[NextHop, ...]

    def single(self) -> Route:
        """The deterministic single-path route: the lowest-port next hop."""
        return Route(self.switch, self.host, self.prefix, self.prefix_len, self.next_hops[0].port,
                     self.dst_mac)


@dataclass(frozen=True)
class EcmpGroup:
    """A next-hop set shared by routes of one switch; member i is next_hops[i]."""

    id: int
    next_hops: tuple[NextHop, ...]


@dataclass(frozen=True)
class PlannedRoute:
    """A route as one switch holds it: through `group` (an EcmpGroup id) or, if None, directly."""

    route: MultipathRoute
    group: int | None


@dataclass(frozen=True)
class SwitchForwarding:
    routes: tuple[PlannedRoute, ...]
    groups: tuple[EcmpGroup, ...]
    hash_shift: int = 0      # which bits of the flow hash this switch's groups decide on


MAX_HASH_SHIFT = 7           # leaves at least 9 of crc16's 16 bits to take the modulo of


def switch_mac(switch: Switch) -> str:
    """The MAC an ECMP member writes towards a switch: 02:ff + the low 32 bits of its device id."""
    low = switch.device_id & 0xFFFFFFFF
    return "02:ff:" + ":".join(f"{(low >> shift) & 0xFF:02x}" for shift in (24, 16, 8, 0))


@dataclass(frozen=True)
class AttachmentHops:
    """Next hops by attachment switch: `hosts[a]` the hosts on switch `a` (in host order, hosts
    with a link only), and `hops[switch][a]` the neighbours of `switch` one hop closer to
    switch `a`'s hosts, None on `a` itself (there each host has its own link), missing where
    `switch` cannot reach `a`. Equal next-hop sets of one switch are one tuple.

    Why per attachment: a host never transits, so every switch but the host's own sees it at
    its switch's distance plus one, and all hosts of a switch share one next-hop set on every
    other switch: a fat-tree(40) has 32 million (switch, host) pairs but 1.6 million (switch,
    attachment) pairs."""

    hosts: dict[str, tuple]
    hops: dict[str, dict[str, tuple[NextHop, ...] | None]]
    ways: dict[str, list[tuple[str, NextHop]]]      # switch -> (neighbour, next hop), by port

    def own_hops(self, switch: str, host) -> tuple[NextHop, ...]:
        """The last hop: `switch`'s link(s) to `host`, writing the host's MAC."""
        return tuple(NextHop(hop.port, node, host.mac)
                     for node, hop in self.ways[switch] if node == host.name)


def attachment_hops(topology: Topology) -> AttachmentHops:
    """Every switch's next hops towards every attachment switch's hosts (`AttachmentHops`),
    from the switch distance matrix (`Topology.switch_distances`): on switch S the next hops
    towards switch A's hosts are S's neighbour switches N with d(N, A) = d(S, A) - 1."""
    is_switch = {s.name for s in topology.switches}
    ways = {s.name: [(n.node, NextHop(n.port, n.node, switch_mac(topology.switch(n.node))
                                      if n.node in is_switch else ""))
                     for n in topology.neighbours(s.name)]           # sorted by port
            for s in topology.switches}
    table = topology.switch_distances()
    hosts: dict[str, list] = {}
    for host in topology.hosts:
        links = topology.neighbours(host.name)
        if links:
            hosts.setdefault(links[0].node, []).append(host)
    attached = list(hosts)
    columns = np.array([table.index[a] for a in attached], dtype=np.intp)
    hops: dict[str, dict] = {}
    for switch in topology.switches:
        name = switch.name
        here = table.matrix[table.index[name], columns] if attached else np.zeros(0, np.int16)
        towards = [(node, hop) for node, hop in ways[name] if node in is_switch]
        rows = np.array([table.index[node] for node, _ in towards], dtype=np.intp)
        closer = (table.matrix[rows][:, columns] == (here - 1)) if len(rows) else \
            np.zeros((0, len(attached)), dtype=bool)
        patterns, which = _distinct_columns(closer)
        sets = [tuple(hop for (_, hop), on in zip(towards, pattern) if on)
                for pattern in patterns]
        mine: dict[str, tuple | None] = {}
        for a, distance, pattern in zip(attached, here.tolist(), which.tolist()):
            if distance == 0:
                mine[a] = None
            elif distance > 0:
                mine[a] = sets[pattern]
        hops[name] = mine
    return AttachmentHops({a: tuple(h) for a, h in hosts.items()}, hops, ways)


def _distinct_columns(flags: np.ndarray) -> tuple[list[list[bool]], np.ndarray]:
    """The distinct columns of a boolean matrix (as lists) and which one each column is.
    Columns are packed into byte strings first: `np.unique(axis=...)` sorts a structured view
    and took ~3 ms per switch at fat-tree(32), the whole routes' time."""
    rows, columns = flags.shape
    if columns == 0:
        return [], np.zeros(0, dtype=np.intp)
    packed = np.ascontiguousarray(np.packbits(flags, axis=0).T) if rows else \
        np.zeros((columns, 1), dtype=np.uint8)
    keys = packed.view(np.dtype((np.void, packed.shape[1]))).reshape(columns)
    _, first, which = np.unique(keys, return_index=True, return_inverse=True)
    return flags[:, first].T.tolist(), which.reshape(-1)


def next_hop_sets(topology: Topology) -> dict[str, list[tuple[object, tuple[NextHop, ...]]]]:
    """switch name -> (host, its next hops towards the host) per reachable host, in host order
    (`attachment_hops` written out per host: a /32 per host, for small fabrics and tests)."""
    by_attachment = attachment_hops(topology)
    pairs: dict[str, list] = {s.name: [] for s in topology.switches}
    attachment = {h.name: a for a, hosts in by_attachment.hosts.items() for h in hosts}
    for switch, towards in by_attachment.hops.items():
        out = pairs[switch]
        for host in topology.hosts:
            a = attachment.get(host.name)
            if a is None or a not in towards:
                continue
            hops = towards[a]
            out.append((host, by_attachment.own_hops(switch, host) if hops is None else hops))
    return pairs


def multipath_routes(topology: Topology) -> dict[str, list[MultipathRoute]]:
    """switch name -> its routes, one per reachable host, in host order."""
    return {switch: [MultipathRoute(switch, host.name, host.ip, 32, host.mac, hops)
                     for host, hops in pairs]
            for switch, pairs in next_hop_sets(topology).items()}


def host_routes(topology: Topology) -> dict[str, list[Route]]:
    """switch name -> one route per reachable host (lowest-port shortest path), in host order."""
    return {switch: [r.single() for r in routes]
            for switch, routes in multipath_routes(topology).items()}


def hash_shifts(topology: Topology) -> dict[str, int]:
    """switch -> the smallest shift in 0..MAX_HASH_SHIFT that no neighbouring switch has taken
    (greedy, in topology order). Consecutive hops of a path thus never decide on the same hash
    bits: on a fat-tree, edges get 0, aggregation switches 1, cores 0. A switch whose neighbours
    took every shift falls back to its position modulo 8."""
    shifts: dict[str, int] = {}
    for position, switch in enumerate(topology.switches):
        taken = {shifts[n.node] for n in topology.neighbours(switch.name) if n.node in shifts}
        free = [s for s in range(MAX_HASH_SHIFT + 1) if s not in taken]
        shifts[switch.name] = free[0] if free else position % (MAX_HASH_SHIFT + 1)
    return shifts


def aggregated_routes(topology: Topology) -> dict[str, list[MultipathRoute]]:
    """switch name -> the fewest prefixes that forward every host as its /32 would
    (controller/prefixes.py), per hosts' subnet. A prefix's `host` is its text; its MAC is the
    next hop's (the host's own on the last hop, `switch_mac` towards a switch). A switch that
    cannot reach every host keeps /32s (a miss there must stay a drop).

    Per attachment, not per host: the subnet's hosts in address order fall into segments of
    hosts on one switch, and on every other switch a segment has one action, so a switch's
    actions are runs built from segments (`prefixes.aggregate_runs`), not one per host."""
    by_attachment = attachment_hops(topology)
    attachment = {h.name: a for a, hosts in by_attachment.hosts.items() for h in hosts}
    subnets: dict[tuple[int, int], list] = {}
    for host in topology.hosts:
        net = ipaddress.IPv4Network(f"{host.ip}/{host.prefix_len}", strict=False)
        subnets.setdefault((int(net.network_address), net.prefixlen), []).append(host)
    reaching = len(attachment)      # hosts with a link (a degraded topology may detach some)
    plans = [_SubnetRuns.of(within, hosts, attachment) for within, hosts in subnets.items()] \
        if reaching == len(topology.hosts) else []
    result: dict[str, list[MultipathRoute]] = {}
    for switch in topology.switches:
        name = switch.name
        towards = by_attachment.hops[name]
        if reaching != len(topology.hosts) or \
                sum(len(by_attachment.hosts[a]) for a in towards) != reaching:
            result[name] = [MultipathRoute(name, host.name, host.ip, 32, host.mac, hops)
                            for host, hops in _per_host(topology, by_attachment, name,
                                                        attachment)]
            continue
        out: list[MultipathRoute] = []
        for plan in plans:
            starts, actions, first = plan.runs(name, towards, by_attachment)
            hop_sets = {id(hops): hops for hops in actions}
            for prefix in aggregate_runs(plan.addresses, starts, [id(a) for a in actions],
                                         plan.within, order=first.__getitem__):
                text = str(ipaddress.IPv4Address(prefix.network))
                hops = hop_sets[prefix.action]
                out.append(MultipathRoute(name, f"{text}/{prefix.length}", text, prefix.length,
                                          hops[0].mac, hops))
        result[name] = out
    return result


def _per_host(topology: Topology, by_attachment: AttachmentHops, switch: str,
              attachment: dict[str, str]) -> list:
    towards = by_attachment.hops[switch]
    pairs = []
    for host in topology.hosts:
        a = attachment.get(host.name)
        if a is not None and a in towards:
            hops = towards[a]
            pairs.append((host, by_attachment.own_hops(switch, host) if hops is None else hops))
    return pairs


@dataclass(frozen=True)
class _SubnetRuns:
    """One subnet's hosts by address, cut into segments of hosts on one switch."""

    within: tuple[int, int]
    addresses: tuple[int, ...]                  # ascending
    hosts: list                                 # in address order
    segments: list[tuple[int, int, str]]        # (first, end) positions of one attachment
    first_of: dict[str, int]                    # attachment -> its first host's place in the
                                                # topology's host order (ties: first seen)
    place: dict[str, int]                       # host name -> its place in that order

    @classmethod
    def of(cls, within, hosts: list, attachment: dict[str, str]) -> "_SubnetRuns":
        place = {h.name: i for i, h in enumerate(hosts)}
        first_of: dict[str, int] = {}
        for h in hosts:
            first_of.setdefault(attachment[h.name], place[h.name])
        ordered = sorted(hosts, key=lambda h: int(ipaddress.IPv4Address(h.ip)))
        addresses = tuple(int(ipaddress.IPv4Address(h.ip)) for h in ordered)
        segments: list[tuple[int, int, str]] = []
        for i, h in enumerate(ordered):
            a = attachment[h.name]
            if segments and segments[-1][2] == a:
                segments[-1] = (segments[-1][0], i + 1, a)
            else:
                segments.append((i, i + 1, a))
        return cls(within, addresses, ordered, segments, first_of, place)

    def runs(self, switch: str, towards: dict, by_attachment: AttachmentHops):
        """(run starts, run actions, action id -> its first host's place) on `switch`: equal
        neighbouring actions (one shared tuple) merged into one run."""
        starts: list[int] = []
        actions: list[tuple] = []
        first: dict[int, int] = {}
        for begin, end, a in self.segments:
            hops = towards[a]
            if hops is None:            # the switch's own hosts: one action each
                for i in range(begin, end):
                    host = self.hosts[i]
                    own = by_attachment.own_hops(switch, host)
                    starts.append(i)
                    actions.append(own)
                    first[id(own)] = self.place[host.name]
                continue
            key = id(hops)
            place = self.first_of[a]
            if key not in first or place < first[key]:
                first[key] = place
            if actions and actions[-1] is hops:
                continue
            starts.append(begin)
            actions.append(hops)
        return starts, actions, first


def forwarding_plans(topology: Topology, aggregate_prefixes: bool = False
                     ) -> dict[str, SwitchForwarding]:
    """switch name -> its routes, each direct or through one of its ECMP groups; a /32 per host,
    or with `aggregate_prefixes` the fewest equivalent prefixes (`aggregated_routes`)."""
    shifts = hash_shifts(topology)
    plans: dict[str, SwitchForwarding] = {}
    routing = aggregated_routes if aggregate_prefixes else multipath_routes
    for switch, routes in routing(topology).items():
        group_of: dict[tuple[NextHop, ...], int] = {}
        planned = []
        for route in routes:
            group = None
            if len(route.next_hops) > 1:
                group = group_of.setdefault(route.next_hops, len(group_of) + 1)
            planned.append(PlannedRoute(route, group))
        groups = tuple(EcmpGroup(gid, hops) for hops, gid in group_of.items())
        plans[switch] = SwitchForwarding(tuple(planned), groups, shifts[switch])
    return plans


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
    """Where routes go in a program: an LPM table and an action(mac, port); optionally ECMP: an
    action(group, size[, shift]) in the same table and a member table keyed (group, member index)
    whose entries use the (mac, port) action."""

    table: str
    action: str
    mac_param: str
    port_param: str
    ecmp_action: str | None = None
    group_param: str = "group"
    size_param: str = "size"
    shift_param: str = "shift"
    member_table: str = "ecmp_nhop"

    def _lpm_key(self, index: P4InfoIndex) -> str:
        table = index.table(self.table)
        lpm_keys = [k for k in table.keys if k.match_type == "lpm"]
        if len(table.keys) != 1 or not lpm_keys:
            raise P4InfoError(f"table {table.name} must have exactly one lpm key to hold routes")
        return lpm_keys[0].name

    def has_ecmp(self, index: P4InfoIndex) -> bool:
        """Whether the program offers ECMP as this description expects (else: single paths)."""
        if self.ecmp_action is None:
            return False
        try:
            action = index.action(self.ecmp_action)
            members = index.table(self.member_table)
        except P4InfoError:
            return False
        if action.id not in index.table(self.table).action_ids:
            return False
        if len(members.keys) != 2 or any(k.match_type != "exact" for k in members.keys):
            raise P4InfoError(f"table {members.name} must have two exact keys (group, member) "
                              "to hold ECMP members")
        return True

    def entry(self, index: P4InfoIndex, route: Route | MultipathRoute) -> p4runtime_pb2.TableEntry:
        """A route with one next hop (a MultipathRoute takes its lowest-port one)."""
        if isinstance(route, MultipathRoute):
            route = route.single()
        return entities.table_entry(
            index, self.table, {self._lpm_key(index): (route.prefix, route.prefix_len)}, self.action,
            {self.mac_param: route.dst_mac, self.port_param: route.port})

    def group_entry(self, index: P4InfoIndex, route: MultipathRoute, group: EcmpGroup,
                    hash_shift: int = 0) -> p4runtime_pb2.TableEntry:
        """A route through an ECMP group (the shift is left out if the action takes none)."""
        params = {self.group_param: group.id, self.size_param: len(group.next_hops)}
        if any(p.name == self.shift_param for p in index.action(self.ecmp_action).params):
            params[self.shift_param] = hash_shift
        return entities.table_entry(
            index, self.table, {self._lpm_key(index): (route.prefix, route.prefix_len)},
            self.ecmp_action, params)

    def member_entries(self, index: P4InfoIndex, group: EcmpGroup) -> list[p4runtime_pb2.TableEntry]:
        """One member-table entry per next hop of the group, member i -> next_hops[i]."""
        group_key, member_key = (k.name for k in index.table(self.member_table).keys)
        return [entities.table_entry(index, self.member_table,
                                     {group_key: group.id, member_key: i}, self.action,
                                     {self.mac_param: hop.mac, self.port_param: hop.port})
                for i, hop in enumerate(group.next_hops)]


@dataclass(frozen=True)
class SwitchEntries:
    """What one switch's forwarding plan becomes in a program: the ECMP members (written first),
    then the routes; each with a label for error messages."""

    members: list[p4runtime_pb2.TableEntry]
    member_labels: list[str]
    routes: list[p4runtime_pb2.TableEntry]
    route_labels: list[str]
    groups: int                 # ECMP groups used (0: every route has one next hop)


def plan_entries(program: L3Program, index: P4InfoIndex, plan: SwitchForwarding, *,
                 ecmp: bool = True, made: dict | None = None) -> SwitchEntries:
    """The table entries of `plan`: a route through an ECMP group where the plan has one, the
    program offers ECMP and `ecmp` is on; otherwise the lowest-port next hop.

    `made` (one dict over the switches of a fabric, `Fabric.install_routes`) keeps the entries
    built for earlier switches by what makes them (program, P4Info, prefix, action and its
    values) and hands the same message again: switches of a fat-tree mostly write the same
    routes (fat-tree(40): 20,960 distinct route entries of 116,760, 1,200 distinct ECMP members
    of 32,000), and building one entry cost more than finding it. The messages are only read
    (a write copies them into its request)."""
    made = {} if made is None else made
    use_groups = ecmp and program.has_ecmp(index)
    groups = {g.id: g for g in plan.groups} if use_groups else {}
    members = []
    for group in groups.values():
        key = ("members", program, index, group.id, group.next_hops)
        entries = made.get(key)
        if entries is None:
            entries = made[key] = program.member_entries(index, group)
        members.extend(entries)
    member_labels = [f"ECMP group {g.id} member {i} -> port {hop.port}"
                     for g in groups.values() for i, hop in enumerate(g.next_hops)]
    routes, labels = [], []
    for planned in plan.routes:
        route = planned.route
        target = f"{route.prefix}/{route.prefix_len}"
        if planned.group in groups:
            group = groups[planned.group]
            key = ("group", program, index, route.prefix, route.prefix_len, group.id,
                   len(group.next_hops), plan.hash_shift)
            entry = made.get(key)
            if entry is None:
                entry = made[key] = program.group_entry(index, route, group, plan.hash_shift)
            routes.append(entry)
            labels.append(f"route {target} -> ECMP group {group.id}")
        else:
            one = route.single() if isinstance(route, MultipathRoute) else route
            key = ("one", program, index, one.prefix, one.prefix_len, one.dst_mac, one.port)
            entry = made.get(key)
            if entry is None:
                entry = made[key] = program.entry(index, one)
            routes.append(entry)
            labels.append(f"route {target} -> port {one.port}")
    return SwitchEntries(members, member_labels, routes, labels, len(groups))


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
                       port_param="port", ecmp_action="ecmp_group")
L3_FORWARD_ARP = FloodProgram(table="arp_flood", action="flood", group_param="mgid")
