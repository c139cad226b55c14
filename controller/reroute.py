"""Re-routing a running fabric around failed links and switches, and putting back a restarted switch.

`replace_routes(clients, topology_now, ...)` makes each switch it has a session with hold exactly
the forwarding state `Fabric.install_routes` writes on `topology_now` (usually
`topologies.degraded.surviving(...)`: the same nodes, without the links that are down), plus the
/32 routes to INA aggregator addresses. It reads what the switch holds, compares it with what it
should hold, and writes only the difference, so a switch whose routes did not change gets no
write at all.

What `install_routes` writes, and so what is compared: the program's LPM table (`ipv4_lpm` for
`L3_FORWARD`: one entry per prefix, `ipv4_forward(mac, port)` or `ecmp_group(group, size,
shift)`) and, when the program offers ECMP, its member table (`ecmp_nhop{group, member} ->
ipv4_forward(mac, port)`). Entries are compared as read back (names and integers,
`entities.describe_table_entry`), keyed by their match.

Order of the writes on one switch, each step its own Write request (P4Runtime may apply the
updates of one request in any order):
1. ECMP members that are new, then members whose next hop changed;
2. routes that are new (a more specific prefix takes over before the broader one goes), routes
   whose action changed, then routes no longer wanted;
3. members no longer wanted.
So every route, old or new, only ever points at members that exist: the old routes' members are
all still there until step 3, and step 3 removes only members no wanted route uses. A member
whose next hop changes in step 1 may briefly serve an old route with the new next hop (still a
surviving one).

Aggregator addresses (`addresses`: address -> owning switch) get a /32 on every other switch that
reaches the owner, through the lowest port one hop closer (`ina_jobs.aggregator_routes`, what a
flat job writes); `tree_addresses` only on the owner's neighbours (what a tree job writes,
`trees.tree_address_routes`). Any other entry of the route table is removed: pass every address
an installed job uses. An owner that is down (no link in `topology_now`) leaves its address with
no route anywhere.

Limitation: a switch that cannot reach every host keeps one /32 per host it reaches (the
aggregation of controller/prefixes.py needs every host reachable: a missed address must stay a
drop), which on a large fabric may exceed the LPM table. Tables are read and written switch by
switch, not atomically across the fabric: during the update, packets may meet a mix of old and
new routes.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Mapping

from p4.v1 import p4runtime_pb2

from controller import entities
from controller.client import DELETE, INSERT, MODIFY, SwitchClient
from controller.errors import ControllerError
from controller.ina_jobs import aggregator_routes
from controller.p4info import P4InfoIndex
from controller.routing import L3_FORWARD, L3Program, forwarding_plans, plan_entries
from topologies.model import Topology


@dataclass(frozen=True)
class SwitchChanges:
    """What `replace_routes` wrote on one switch (routes: LPM entries; members: ECMP members)."""

    routes_deleted: int = 0
    routes_modified: int = 0
    routes_inserted: int = 0
    members_deleted: int = 0
    members_modified: int = 0
    members_inserted: int = 0

    @property
    def total(self) -> int:
        return (self.routes_deleted + self.routes_modified + self.routes_inserted
                + self.members_deleted + self.members_modified + self.members_inserted)

    def __str__(self) -> str:
        return (f"routes -{self.routes_deleted} ~{self.routes_modified} +{self.routes_inserted}, "
                f"ECMP members -{self.members_deleted} ~{self.members_modified} "
                f"+{self.members_inserted}")


RerouteSummary = dict[str, SwitchChanges]     # switch -> what was written there


def _key(view: entities.TableEntryView) -> tuple:
    return (view.table, tuple(sorted(view.match.items())))


def _value(view: entities.TableEntryView) -> tuple:
    return (view.action, tuple(sorted(view.params.items())))


def read_entries(client: SwitchClient, table: str) -> dict[tuple, tuple]:
    """match key -> (view, raw TableEntry) of every non-default entry `table` holds now."""
    index = _index(client)
    request = p4runtime_pb2.Entity()
    request.table_entry.table_id = index.table(table).id
    found = {}
    for entity in client.read(request):
        if not entity.HasField("table_entry"):
            continue
        view = entities.describe_table_entry(index, entity.table_entry)
        if not view.is_default:
            found[_key(view)] = (view, entity.table_entry)
    return found


def _index(client: SwitchClient) -> P4InfoIndex:
    if client.index is None:
        raise ControllerError(f"{client.name}: push or adopt a pipeline before replacing routes")
    return client.index


def wanted_entries(topology_now: Topology, switch: str, index: P4InfoIndex,
                   program: L3Program = L3_FORWARD, *, aggregate: bool = True, ecmp: bool = True,
                   addresses: Mapping[str, str] = {}, tree_addresses: Mapping[str, str] = {},
                   plans=None) -> tuple[list, list, list, list]:
    """(members, member labels, routes, route labels) `switch` should hold on `topology_now`:
    `install_routes`' entries (`routing.plan_entries`), then the aggregator addresses' /32s.
    `plans`: `forwarding_plans(topology_now, aggregate)` if already computed."""
    if plans is None:
        plans = forwarding_plans(topology_now, aggregate)
    planned = plan_entries(program, index, plans[switch], ecmp=ecmp)
    routes, labels = list(planned.routes), list(planned.route_labels)
    for kind, table in (("", addresses), ("tree ", tree_addresses)):
        for address, owner in table.items():
            if owner == switch:
                continue
            only = ({n.node for n in topology_now.neighbours(owner)} if kind else None)
            for route in aggregator_routes(topology_now, owner, address, only=only):
                if route.switch == switch:
                    routes.append(program.entry(index, route))
                    labels.append(f"route to {kind}aggregator {address} ({owner}) "
                                  f"-> port {route.port}")
    return planned.members, planned.member_labels, routes, labels


def _difference(now: dict, wanted: list, labels: list, index: P4InfoIndex):
    """(inserts, modifies, deletes) as (update, entry, label) lists."""
    inserts, modifies, seen = [], [], set()
    for entry, label in zip(wanted, labels):
        view = entities.describe_table_entry(index, entry)
        key = _key(view)
        if key in seen:
            raise ControllerError(f"{label}: two wanted entries share the match {key}")
        seen.add(key)
        held = now.get(key)
        if held is None:
            inserts.append((INSERT, entry, label))
        elif _value(held[0]) != _value(view):
            modifies.append((MODIFY, entry, label))
    deletes = [(DELETE, _key_only(raw), f"stale {view.table} entry {view.match}")
               for key, (view, raw) in now.items() if key not in seen]
    return inserts, modifies, deletes


def _key_only(entry: p4runtime_pb2.TableEntry) -> p4runtime_pb2.TableEntry:
    """What a DELETE needs of an entry read back: its table, match and priority."""
    key = p4runtime_pb2.TableEntry(table_id=entry.table_id, priority=entry.priority)
    key.match.extend(entry.match)
    return key


def _write(client: SwitchClient, updates: list) -> None:
    if updates:
        client.write([(kind, entry) for kind, entry, _ in updates],
                     [label for _, _, label in updates])


def replace_switch_routes(client: SwitchClient, topology_now: Topology,
                          program: L3Program = L3_FORWARD, *, aggregate: bool = True,
                          ecmp: bool = True, addresses: Mapping[str, str] = {},
                          tree_addresses: Mapping[str, str] = {}, plans=None) -> SwitchChanges:
    """One switch of `replace_routes` (the session's `name` is the switch's name)."""
    index = _index(client)
    members, member_labels, routes, route_labels = wanted_entries(
        topology_now, client.name, index, program, aggregate=aggregate, ecmp=ecmp,
        addresses=addresses, tree_addresses=tree_addresses, plans=plans)
    has_members = program.has_ecmp(index)
    members_now = read_entries(client, program.member_table) if has_members else {}
    routes_now = read_entries(client, program.table)
    m_ins, m_mod, m_del = _difference(members_now, members, member_labels, index)
    r_ins, r_mod, r_del = _difference(routes_now, routes, route_labels, index)
    _write(client, m_ins + m_mod)
    _write(client, r_ins)
    _write(client, r_mod)
    _write(client, r_del)
    _write(client, m_del)
    return SwitchChanges(len(r_del), len(r_mod), len(r_ins), len(m_del), len(m_mod), len(m_ins))


def replace_routes(clients: Mapping[str, SwitchClient], topology_now: Topology,
                   program: L3Program = L3_FORWARD, *, aggregate: bool = True, ecmp: bool = True,
                   addresses: Mapping[str, str] = {},
                   tree_addresses: Mapping[str, str] = {}) -> RerouteSummary:
    """Every switch of `topology_now` with a session in `clients` (crashed switches have none
    and are skipped) made to hold what `Fabric.install_routes(program, aggregate=aggregate,
    ecmp=ecmp)` writes on `topology_now`, plus the aggregator addresses' routes; only the
    difference is written. Returns switch -> what was written, in topology order."""
    for address, owner in (*addresses.items(), *tree_addresses.items()):
        try:
            topology_now.switch(owner)
        except KeyError:
            raise ControllerError(f"aggregator address {address}: {owner!r} is not a switch of "
                                  f"{topology_now.name}") from None
    plans = forwarding_plans(topology_now, aggregate)
    summary: RerouteSummary = {}
    for switch in topology_now.switches:
        client = clients.get(switch.name)
        if client is None:
            continue
        summary[switch.name] = replace_switch_routes(
            client, topology_now, program, aggregate=aggregate, ecmp=ecmp, addresses=addresses,
            tree_addresses=tree_addresses, plans=plans)
    return summary


def restore_switch(client: SwitchClient, program_p4info: P4InfoIndex, config: bytes,
                   topology_now: Topology, program: L3Program = L3_FORWARD, *,
                   aggregate: bool = True, ecmp: bool = True, addresses: Mapping[str, str] = {},
                   tree_addresses: Mapping[str, str] = {}) -> SwitchChanges:
    """A switch that restarted empty, back in service: its pipeline pushed (`program_p4info`,
    the target's `config`), then its routes and aggregator-address routes on `topology_now`
    (the topology with this switch's links up again). Its INA jobs, and the routes other
    switches need towards it (`replace_routes` on the rest), are the caller's."""
    client.set_pipeline(program_p4info, config)
    return replace_switch_routes(client, topology_now, program, aggregate=aggregate, ecmp=ecmp,
                                 addresses=addresses, tree_addresses=tree_addresses)
