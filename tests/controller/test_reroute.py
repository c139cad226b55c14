"""Re-routing a configured fabric around failures (controller/reroute.py, topologies/degraded.py),
on the simulator's switches over in-process P4Runtime.

A fat-tree(4) is configured as `inaemu.sim.setup.prepare` does (aggregated routes, ECMP groups,
one flat INA job aggregating on a0_0). After `replace_routes` on the surviving topology, the
route tables are read back and walked hop by hop from every host's switch, following every
ECMP member: each path must reach its destination without a failed link or switch and without
a loop."""

from __future__ import annotations

import ipaddress

import pytest

from controller.client import SwitchClient
from controller.errors import ControllerError
from controller.fabric import Fabric
from controller.reroute import SwitchChanges, replace_routes, restore_switch
from controller.routing import L3_FORWARD, forwarding_plans, host_routes
from inaemu.sim import control
from inaemu.sim.network import SimNetwork
from p4switch.runtime import Switch
from p4switch.server import LocalP4Runtime
from topologies.builders import fat_tree
from topologies.degraded import SurvivingTopology, surviving
from topologies.model import TopologyError

JOB_SWITCH = "a0_0"
FAILED = frozenset(("a0_0", "c0"))


@pytest.fixture
def fabric():
    """Configured as `inaemu.sim.setup.prepare` does it (prepare's own sessions end with it, and
    a switch served anew has forgotten its pipeline, so the set-up is done here): ina.p4 on the
    job's switch, l3_forward.p4 elsewhere, aggregated routes, the flat job."""
    network = SimNetwork(fat_tree(4), seed=0)
    ina = control.compile_program(str(control.INA_PROGRAM), (("INA_K", "8"),))
    router = control.compile_program(str(control.L3_PROGRAM))
    try:
        with Fabric(network.topology, channels=network.start_local()) as opened:
            for name, client in opened.clients.items():
                chosen = ina if name == JOB_SWITCH else router
                client.set_pipeline(chosen.p4info, chosen.config)
            opened.install_routes(L3_FORWARD, aggregate=True)
            placements = control.install_ina_jobs(
                opened, network.topology, [(1, ("h1", "h5", "h9"), JOB_SWITCH)], k=8,
                pool_size=4)
            opened.aggregator = placements[0].addresses[0]
            yield opened
    finally:
        network.stop_servers()


# -- reading and walking the route tables ----------------------------------------------------------

def _row(view) -> tuple:
    return (view.table, tuple(sorted(view.match.items())), view.action,
            tuple(sorted(view.params.items())))


def tables(clients) -> dict[str, set[tuple]]:
    """switch -> every entry of its route and ECMP member tables, as hashable rows."""
    return {name: {_row(v) for table in ("ipv4_lpm", "ecmp_nhop")
                   for v in client.read_table(table)}
            for name, client in clients.items()}


class Forwarding:
    """The route tables as read back, and a walk through them."""

    def __init__(self, clients, topology):
        self.topology = topology          # the physical network: port -> neighbour
        self.routes, self.members = {}, {}
        for name, client in clients.items():
            self.routes[name] = [(v.match["hdr.ipv4.dstAddr"], v.action, v.params)
                                 for v in client.read_table("ipv4_lpm")]
            self.members[name] = {(v.match["meta.fwd.ecmp_group"][0],
                                   v.match["meta.fwd.ecmp_member"][0]): v.params["port"]
                                  for v in client.read_table("ecmp_nhop")}

    def ports(self, switch: str, address: str) -> list[int] | None:
        """Every port `switch` may send `address` out of (all ECMP members); None on a miss."""
        target = int(ipaddress.IPv4Address(address))
        best = None
        for (value, length), action, params in self.routes[switch]:
            mask = (0xFFFFFFFF << (32 - length)) & 0xFFFFFFFF
            if target & mask == value and (best is None or length > best[0]):
                best = (length, action, params)
        if best is None:
            return None
        _, action, params = best
        if action.endswith("ipv4_forward"):
            return [params["port"]]
        assert action.endswith("ecmp_group"), action
        members = [self.members[switch].get((params["group"], i))
                   for i in range(params["size"])]
        assert None not in members, f"{switch}: group {params['group']} misses a member"
        return members

    def check(self, start: str, address: str, arrive: str, *, down_links=frozenset(),
              down_switches=frozenset()) -> int:
        """Every path from `start` towards `address` ends at node `arrive` (a host, or the
        switch owning an aggregator address) without a down link or switch and without a loop;
        the number of distinct paths."""
        def walk(path: list[str]) -> int:
            here = path[-1]
            if here == arrive:
                return 1
            ports = self.ports(here, address)
            assert ports is not None, f"{' -> '.join(path)}: no route to {address}"
            count = 0
            for port in ports:
                nxt = next(n.node for n in self.topology.neighbours(here) if n.port == port)
                assert frozenset((here, nxt)) not in down_links, \
                    f"{' -> '.join(path)}: {address} sent over the failed link to {nxt}"
                assert nxt not in down_switches, f"{' -> '.join(path)}: through down {nxt}"
                assert nxt not in path, f"{' -> '.join(path + [nxt])}: loop"
                if not self.topology.is_switch(nxt):
                    assert nxt == arrive, f"{' -> '.join(path)}: {address} delivered to {nxt}"
                    count += 1
                else:
                    count += walk(path + [nxt])
            return count

        return walk([start])

    def check_all_hosts(self, **down) -> None:
        for src in self.topology.hosts:
            first = self.topology.host_link(src.name).node
            for dst in self.topology.hosts:
                if dst.name != src.name:
                    assert self.check(first, dst.ip, dst.name, **down) >= 1


# -- the surviving topology -------------------------------------------------------------------------

def test_surviving_keeps_every_node_and_drops_the_down_links():
    topology = fat_tree(4)
    alive = surviving(topology, {FAILED}, {"e1_0"})
    assert isinstance(alive, SurvivingTopology)
    assert alive.hosts == topology.hosts and alive.switches == topology.switches
    assert alive.neighbours("e1_0") == [] and alive.neighbours("h5") == []
    assert "c0" not in {n.node for n in alive.neighbours("a0_0")}
    assert len(alive.links) == len(topology.links) - 1 - 4       # e1_0: 2 hosts, 2 aggs
    routes = host_routes(alive)
    assert routes["e1_0"] == []
    assert "h5" not in {r.host for r in routes["e0_0"]}
    plans = forwarding_plans(alive, True)                         # no exception
    assert len(plans["e0_0"].routes) == 14                        # /32s to the reachable hosts
    with pytest.raises(TopologyError, match="no link between"):
        surviving(topology, {frozenset(("e0_0", "c0"))}, set())
    with pytest.raises(TopologyError, match="has 0 links"):     # a real topology still refuses
        type(topology)(name="t", hosts=topology.hosts, switches=topology.switches,
                       links=alive.links)


# -- re-routing -------------------------------------------------------------------------------------

def test_a_failed_link_is_routed_around(fabric):
    topology = fabric.topology
    aggregator = {fabric.aggregator: JOB_SWITCH}
    summary = fabric.replace_routes(surviving(topology, {FAILED}, set()), addresses=aggregator)
    assert summary["a0_0"].total and summary["c0"].total
    facing = {"a0_0": topology.port_towards("a0_0", "c0"),
              "c0": topology.port_towards("c0", "a0_0")}
    for switch, port in facing.items():
        for view in (*fabric[switch].read_table("ipv4_lpm"),
                     *fabric[switch].read_table("ecmp_nhop")):
            assert view.params.get("port") != port, f"{switch}: {view} uses the failed link"
    Forwarding(fabric.clients, topology).check_all_hosts(down_links={FAILED})


def test_an_unchanged_topology_writes_nothing(fabric):
    aggregator = {fabric.aggregator: JOB_SWITCH}
    before = tables(fabric.clients)
    summary = fabric.replace_routes(fabric.topology, addresses=aggregator)
    assert set(summary) == set(fabric.clients)
    assert all(changes == SwitchChanges() for changes in summary.values()), summary
    assert tables(fabric.clients) == before


def test_a_link_back_up_gives_a_fresh_install(fabric):
    aggregator = {fabric.aggregator: JOB_SWITCH}
    fresh = tables(fabric.clients)
    fabric.replace_routes(surviving(fabric.topology, {FAILED}, set()), addresses=aggregator)
    assert tables(fabric.clients) != fresh
    summary = fabric.replace_routes(fabric.topology, addresses=aggregator)
    assert sum(c.total for c in summary.values()) > 0
    assert tables(fabric.clients) == fresh
    again = fabric.replace_routes(fabric.topology, addresses=aggregator)
    assert all(c.total == 0 for c in again.values())


def test_a_down_switch_is_avoided_and_a_restarted_one_restored(fabric):
    topology = fabric.topology
    aggregator = {fabric.aggregator: JOB_SWITCH}
    fresh = tables(fabric.clients)
    alive = {name: client for name, client in fabric.clients.items() if name != "a0_1"}
    summary = replace_routes(alive, surviving(topology, set(), {"a0_1"}), addresses=aggregator)
    assert "a0_1" not in summary
    Forwarding(alive, topology).check_all_hosts(down_switches={"a0_1"})
    for start in alive:
        if start != JOB_SWITCH:
            Forwarding(alive, topology).check(start, fabric.aggregator, JOB_SWITCH,
                                              down_switches={"a0_1"})

    # a0_1 restarts empty: a new runtime switch behind a new session
    program = control.compile_program(str(control.L3_PROGRAM))
    device = topology.switch("a0_1").device_id
    server = LocalP4Runtime(Switch(None), device_id=device, packet_out=lambda _data: None)
    try:
        with SwitchClient("a0_1", "in process", device, channel=server.channel()) as client:
            assert client.index is None
            changes = restore_switch(client, program.p4info, program.config, topology,
                                     addresses=aggregator)
            assert changes.routes_inserted > 0 and changes.routes_deleted == 0
            replace_routes(alive, topology, addresses=aggregator)
            restored = tables({**alive, "a0_1": client})
            assert restored == fresh
            everyone = {**alive, "a0_1": client}
            Forwarding(everyone, topology).check_all_hosts()
            client.end_stream()
    finally:
        server.stop()


def test_an_aggregator_address_keeps_a_route_along_surviving_paths(fabric):
    topology = fabric.topology
    address = fabric.aggregator
    down = {FAILED, frozenset(("e0_0", "a0_0"))}
    fabric.replace_routes(surviving(topology, down, set()), addresses={address: JOB_SWITCH})
    walk = Forwarding(fabric.clients, topology)
    paths = 0
    for start in fabric.clients:
        if start != JOB_SWITCH:
            paths += walk.check(start, address, JOB_SWITCH, down_links=down)
    assert paths >= len(fabric.clients) - 1
    walk.check_all_hosts(down_links=down)

    # without the address, its routes go (and only they: the host routes stay)
    fabric.replace_routes(surviving(topology, down, set()))
    assert walk.routes != Forwarding(fabric.clients, topology).routes
    Forwarding(fabric.clients, topology).check_all_hosts(down_links=down)
    target = (int(ipaddress.IPv4Address(address)), 32)
    for name, client in fabric.clients.items():
        assert all(v.match["hdr.ipv4.dstAddr"] != target
                   for v in client.read_table("ipv4_lpm")), name


def test_an_address_whose_owner_is_down_has_no_route(fabric):
    topology = fabric.topology
    address = fabric.aggregator
    alive = {name: client for name, client in fabric.clients.items() if name != JOB_SWITCH}
    replace_routes(alive, surviving(topology, set(), {JOB_SWITCH}),
                   addresses={address: JOB_SWITCH})
    target = (int(ipaddress.IPv4Address(address)), 32)
    for name, client in alive.items():
        assert all(v.match["hdr.ipv4.dstAddr"] != target
                   for v in client.read_table("ipv4_lpm")), name
    Forwarding(alive, topology).check_all_hosts(down_switches={JOB_SWITCH})
    with pytest.raises(ControllerError, match="not a switch"):
        replace_routes(alive, topology, addresses={address: "h1"})


def test_members_are_written_before_the_routes_that_use_them(fabric):
    """The write order, seen from the writes themselves: no route refers to a member that is
    not in the table at the moment it is written, and no member goes while a route uses it."""
    topology = fabric.topology
    aggregator = {fabric.aggregator: JOB_SWITCH}
    client = fabric["a0_0"]
    log = []
    original = client.write

    def recording(updates, labels=()):
        original(updates, labels)
        log.append(tables({"a0_0": client})["a0_0"])

    client.write = recording
    try:
        fabric.replace_routes(surviving(topology, {FAILED}, set()), addresses=aggregator)
        fabric.replace_routes(topology, addresses=aggregator)
    finally:
        del client.write
    assert log
    for state in log:
        members = {(dict(row[1])["meta.fwd.ecmp_group"][0], dict(row[1])["meta.fwd.ecmp_member"][0])
                   for row in state if row[0].endswith("ecmp_nhop")}
        for row in state:
            if row[2].endswith("ecmp_group"):
                params = dict(row[3])
                assert {(params["group"], i) for i in range(params["size"])} <= members


def test_hosts_behind_a_down_edge_switch_get_no_route(fabric):
    """A partition: h5 and h6 hang on e1_0 only; every other switch drops their addresses (a
    miss: /32s to the hosts it reaches, no aggregated prefix covering the lost ones)."""
    topology = fabric.topology
    alive = {name: client for name, client in fabric.clients.items() if name != "e1_0"}
    summary = replace_routes(alive, surviving(topology, set(), {"e1_0"}),
                             addresses={fabric.aggregator: JOB_SWITCH})
    assert "e1_0" not in summary
    walk = Forwarding(alive, topology)
    lost = {"h5", "h6"}
    for name in alive:
        for host in topology.hosts:
            ports = walk.ports(name, host.ip)
            assert (ports is None) == (host.name in lost), (name, host.name, ports)
    for src in topology.hosts:
        if src.name in lost:
            continue
        first = topology.host_link(src.name).node
        for dst in topology.hosts:
            if dst.name not in lost and dst.name != src.name:
                walk.check(first, dst.ip, dst.name, down_switches={"e1_0"})


def test_tree_addresses_are_routed_on_the_owners_surviving_neighbours_only(fabric):
    topology = fabric.topology
    address = fabric.aggregator
    target = (int(ipaddress.IPv4Address(address)), 32)

    def holders() -> set[str]:
        return {name for name, client in fabric.clients.items()
                if any(v.match["hdr.ipv4.dstAddr"] == target
                       for v in client.read_table("ipv4_lpm"))}

    assert holders() == set(fabric.clients) - {JOB_SWITCH}          # the flat job's routes
    fabric.replace_routes(topology, tree_addresses={address: JOB_SWITCH})
    assert holders() == {"e0_0", "e0_1", "c0", "c1"}
    fabric.replace_routes(surviving(topology, {FAILED}, set()),
                          tree_addresses={address: JOB_SWITCH})
    assert holders() == {"e0_0", "e0_1", "c1"}
