"""The controller of a scenario: one P4Runtime session per switch for the whole timeline.

It does what the controller of a real fabric does around aggregation jobs that come and go
and failures (docs/protocol.md §8): configure every switch (ina.p4, so any switch can take
part in a tree placed later, and the routes), place a job (a tree on multi-tier networks, its
one switch on a star) under a fresh P4 job id, remove it, re-route the fabric around links and
switches that are down, and give a restarted switch its pipeline and routes again. Which
links and switches are down is its own view (what it has learnt), not the network's.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from controller.errors import ControllerError
from controller.fabric import Fabric
from controller.ina_control import InaJobs
from controller.ina_jobs import FallbackServer
from controller.ina_switches import release_owned_cells
from hosts.fallback import fallback_port
from controller.ina_jobs import aggregator_address
from controller.ina_switches import delete_group, remove_entries
from controller.routing import L3_FORWARD
from controller.trees import FallbackNearTiers, TreeJob, TreeJobs, choose_root
from topologies.model import Topology

from inaemu.sim import control

MAX_P4_JOB_ID = 1023


class PlacementRefused(Exception):
    """No aggregation tree can be placed for the job on what survives."""


@dataclass
class Placement:
    """One placement of a job: its P4 job id (a fresh one each time, so packets of an older
    placement still in flight are dropped as an unknown job, never counted), where each worker
    sends, and what was written (to remove it)."""

    p4_job: int
    workers: tuple[str, ...]
    addresses: tuple[str, ...]
    worker_ids: tuple[int, ...]
    switches: tuple[str, ...]          # the aggregating switches, root first
    summary: dict
    plan: object = field(repr=False)
    tree: bool = True
    sharing: str = "static"            # "hashed": a host aggregator takes its collisions
    fallback_port: int | None = None   # hashed: its UDP port on `fallback_host`
    fallback_host: str | None = None   # hashed: the worker host that runs it

    def uses_switch(self, switch: str) -> bool:
        return switch in self.switches

    def uses_link(self, a: str, b: str, topology: Topology) -> bool:
        """Whether the link a-b carries this placement's traffic: between two of its switches
        that are parent and child, or between a worker and its switch."""
        ends = {a, b}
        if self.tree:
            for switch, node in self.summary.items():
                parent = node.get("parent")
                if parent is not None and ends == {switch, parent}:
                    return True
        for host in self.workers:
            if host in ends and topology.host_link(host).node in ends:
                return True
        if not self.tree and len(ends & set(self.switches)) == 1:
            # a flat job's workers reach its one switch along routed paths: any switch link
            # next to it may carry them
            return all(n in {s.name for s in topology.switches} for n in ends)
        return False


class FabricControl:
    """Sessions with every switch of a network, kept for the scenario: in process for the
    simulator (`in_process`), over gRPC for Mininet (`over_grpc`)."""

    def __init__(self, topology: Topology, fabric: Fabric, reconnect, *, elems_k: int,
                 pool_size: int, say=lambda _line: None, on_close=lambda: None,
                 sharing: str = "static", shared_pairs: int | None = None):
        self.topology = topology
        self.fabric = fabric
        self.reconnect = reconnect        # switch name -> a new SwitchClient (after a restart)
        self.elems_k = elems_k
        self.pool_size = pool_size
        self.sharing = sharing
        self.shared_pairs = shared_pairs or pool_size
        self.say = say
        self.on_close = on_close
        self.program = control.compile_program(str(control.INA_PROGRAM),
                                               (("INA_K", str(elems_k)),))
        self.down_links: set[frozenset[str]] = set()
        self.down_switches: set[str] = set()
        self._next_id = 1
        for client in self.fabric.clients.values():
            client.set_pipeline(self.program.p4info, self.program.config)
        self.routes = self.fabric.install_routes(L3_FORWARD, aggregate=True)
        self.placements: dict[int, Placement] = {}
        self.flat_owners: set[str] = set()      # switches that hold (or held) a flat job
        self.tree_owners: set[str] = set()      # switches that are (or were) tree nodes

    @classmethod
    def in_process(cls, network, **options) -> "FabricControl":
        """For a `SimNetwork`: P4Runtime served in this process."""
        from controller.client import SwitchClient

        def reconnect(name: str) -> SwitchClient:
            spec = network.topology.switch(name)
            return SwitchClient(name, "in process", spec.device_id, election_id=(0, 1),
                                timeout=10.0, channel=network.switches[name].start_local())

        fabric = Fabric(network.topology, timeout=10.0, channels=network.start_local())
        return cls(network.topology, fabric, reconnect, on_close=network.stop_servers,
                   **options)

    @classmethod
    def over_grpc(cls, topology: Topology, *, tls=None, **options) -> "FabricControl":
        """For switch processes serving P4Runtime on 127.0.0.1 at their `grpc_port`; `tls`: the
        controller's `ClientTLS` when they serve it over TLS (also after a restart)."""
        from controller.client import SwitchClient

        def reconnect(name: str) -> SwitchClient:
            spec = topology.switch(name)
            return SwitchClient(name, f"127.0.0.1:{spec.grpc_port}", spec.device_id,
                                election_id=(0, 1), timeout=10.0, tls=tls)

        return cls(topology, Fabric(topology, timeout=10.0, tls=tls), reconnect, **options)

    def close(self) -> None:
        self.fabric.close()
        self.on_close()

    # -- what survives --------------------------------------------------------------------------

    def topology_now(self) -> Topology:
        if not self.down_links and not self.down_switches:
            return self.topology
        from topologies.degraded import surviving
        return surviving(self.topology, self.down_links, self.down_switches)

    def clients_now(self) -> dict:
        return {name: client for name, client in self.fabric.clients.items()
                if name not in self.down_switches}

    def reroute(self) -> dict:
        """Make every live switch forward along what survives, aggregator addresses too."""
        topology = self.topology_now()
        # every address a placement ever used: a switch keeps its aggregator addresses after
        # a job leaves (and writes no route for them again), so their routes must stay
        flat = {aggregator_address(topology, s): s for s in self.flat_owners}
        tree = {aggregator_address(topology, s): s for s in self.tree_owners}
        # one switch at a time: a switch that does not answer (it failed and that is not
        # learnt yet) is left out and said; its own failure will be learnt and acted on
        from controller.reroute import replace_switch_routes
        from controller.routing import forwarding_plans
        plans = forwarding_plans(topology, True)
        summary = {}
        for name, client in self.clients_now().items():
            try:
                summary[name] = replace_switch_routes(
                    client, topology, L3_FORWARD, aggregate=True, addresses=flat,
                    tree_addresses=tree, plans=plans)
            except ControllerError as error:
                self.say(f"controller: {name} did not take its routes: {error}")
        return summary

    def switch_restarted(self, name: str) -> None:
        """A switch back from a crash: a new session and its pipeline (routes: `reroute`)."""
        old = self.fabric.clients.pop(name, None)
        if old is not None:
            try:
                old.close()
            except Exception:          # its server went away with the crash
                pass
        client = self.reconnect(name)
        client.set_pipeline(self.program.p4info, self.program.config)
        self.fabric.clients[name] = client
        self.down_switches.discard(name)
        # its aggregator addresses went with its tables: placed again, they get new routes
        self.flat_owners.discard(name)
        self.tree_owners.discard(name)

    # -- jobs -----------------------------------------------------------------------------------

    def place(self, workers: tuple[str, ...], *, root: str | None, tree: bool) -> Placement:
        """A fresh placement of a job on what survives; PlacementRefused says why not."""
        topology = self.topology_now()
        p4_job = self._fresh_id()
        clients = self.clients_now()
        try:
            if tree:
                if root is None or root in self.down_switches:
                    root = choose_root(topology, workers, p4_job)
                hashed = self.sharing == "hashed"
                # hashed: a host aggregator per tree switch, on the job's worker host nearest
                # it (UDP fallback_port(p4_job) + the switch's place top-down)
                plan = TreeJobs(topology, clients).install(
                    TreeJob(p4_job, tuple(workers), self.elems_k, self.pool_size, root,
                            self.sharing,
                            FallbackNearTiers(fallback_port(p4_job)) if hashed else None),
                    shared_pairs=self.shared_pairs if hashed else None)
                placement = Placement(p4_job, tuple(workers),
                                      tuple(e.address for e in plan.endpoints),
                                      tuple(e.worker_id for e in plan.endpoints),
                                      tuple(plan.nodes), plan.summary(), plan, True,
                                      self.sharing)
            else:
                switch = root or topology.host_link(workers[0]).node
                if switch in self.down_switches:
                    raise PlacementRefused(f"its switch {switch} is down")
                hashed = self.sharing == "hashed"
                # jobs' host aggregators spread over their workers' hosts (worker
                # p4_job mod n), not all on the first workers' (often one leaf's) hosts
                host = workers[p4_job % len(workers)]
                server = FallbackServer(topology.host(host).ip,
                                        fallback_port(p4_job)) if hashed else None
                plan = InaJobs(topology, clients).install(
                    p4_job, list(workers), switch, k=self.elems_k, pool_size=self.pool_size,
                    fallback=server, sharing=self.sharing,
                    shared_pairs=self.shared_pairs if hashed else None)
                placement = Placement(p4_job, tuple(workers),
                                      (plan.job.aggregator_ip,) * len(workers),
                                      tuple(range(len(workers))), (switch,),
                                      {switch: {"base": plan.base, "mgid": plan.mgid}}, plan,
                                      False, self.sharing,
                                      server.port if server is not None else None,
                                      host if hashed else None)
        except (ControllerError, KeyError, ValueError) as error:
            raise PlacementRefused(str(error)) from None
        self.placements[p4_job] = placement
        (self.tree_owners if tree else self.flat_owners).update(placement.switches)
        return placement

    def remove(self, placement: Placement) -> None:
        """Delete a placement's entries and groups on the switches that are still up (a crashed
        switch lost them already)."""
        self.placements.pop(placement.p4_job, None)
        plan = placement.plan
        live = self.clients_now()
        if placement.tree:
            pairs = [(live[s], e) for s, e in plan.entries if s in live]
            groups = [(live[s], node.mgid) for s, node in plan.nodes.items() if s in live]
        else:
            pairs = [(live[s], e) for s, entries in plan.entries.items() if s in live
                     for e in entries]
            groups = [(live[plan.job.switch], plan.mgid)] if plan.job.switch in live else []
        try:
            # the pools are read before the entries go (the last hashed job's entry names one)
            pools = {}
            if placement.sharing == "hashed":
                for switch in placement.switches:
                    pool = self.shared_pool(switch) if switch in live else None
                    if pool is not None:
                        pools[switch] = pool
            remove_entries(pairs)
            for client, mgid in groups:
                delete_group(client, mgid)
            for switch, shared in pools.items():
                release_owned_cells(live[switch], placement.p4_job, shared)
        except ControllerError as error:
            self.say(f"controller: removing job {placement.p4_job}: {error}")

    def switch_chunks(self, placement: Placement) -> int | None:
        """The chunks of a placement its root switch completed in its own cells: each took one
        first contribution from every member there (the `ina_contributions` counter, §7; the
        others went to its host aggregator). None when the root is down or does not answer."""
        root = placement.switches[0]
        client = self.clients_now().get(root)
        if client is None:
            return None
        members = len(placement.summary[root]["members"]) if placement.tree \
            else len(placement.workers)
        try:
            found = client.read_counter("ina_contributions", placement.p4_job)
        except ControllerError:
            return None
        return found.get(placement.p4_job, (0, 0))[0] // members

    def shared_pool(self, switch: str) -> tuple[int, int] | None:
        """The hashed jobs' shared pool on `switch`: (first cell, pairs), or None."""
        client = self.clients_now().get(switch)
        for view in (client.read_table("ina_sharing") if client is not None else ()):
            return view.params["pool_base"], view.params["pool_pairs"]
        return None

    def _fresh_id(self) -> int:
        if self._next_id > MAX_P4_JOB_ID:
            raise PlacementRefused("out of P4 job ids (1..1023) for this scenario")
        chosen = self._next_id
        self._next_id += 1
        return chosen


def connected(topology, hosts) -> bool:
    """Whether every host can reach the first through what survives."""
    adjacency: dict[str, set[str]] = {}
    for link in topology.links:
        adjacency.setdefault(link.a.node, set()).add(link.b.node)
        adjacency.setdefault(link.b.node, set()).add(link.a.node)
    seen, frontier = {hosts[0]}, [hosts[0]]
    while frontier:
        node = frontier.pop()
        for other in adjacency.get(node, ()):
            if other not in seen:
                seen.add(other)
                frontier.append(other)
    return all(h in seen for h in hosts)


def route_changes(summary: dict) -> str:
    """'12 routes_modified, 4 members_inserted on 6 switches' from replace_routes' summary."""
    total: dict[str, int] = {}
    changed = 0
    for changes in summary.values():
        changed += bool(changes.total)
        for key, value in vars(changes).items():
            if value:
                total[key] = total.get(key, 0) + value
    if not total:
        return "no change"
    return f"{', '.join(f'{v} {k}' for k, v in total.items())} on {changed} switches"
