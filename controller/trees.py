"""Hierarchical (SHARP-style) aggregation trees of any depth, planned and installed over P4Runtime.

A job's tree (docs/protocol.md §6, docs/trees.md) aggregates at every tier, so each link carries
one partial aggregate per slot instead of one gradient per worker below it.

Planning is sans-I/O:
- `choose_root(topology, workers, busy)`: the switch that minimises the deepest worker, then the
  sum of the workers' depths, then the jobs already on the switches its tree would use (`busy`:
  switch -> jobs, so concurrent jobs spread over equally good roots, as ATP spreads them), then
  topology order, so ties always go the same way; `choose_roots` does it for several jobs;
- `tree_shape(topology, job_id, workers, root)`: along shortest paths towards the root, every
  switch's parent is its neighbour one hop closer to the root through its lowest such port; the
  union of the workers' paths is the tree. A switch's members are its own workers (job order),
  then its child switches (by port); member i is worker id i in that switch's job entry;
- `plan_tree(...)`: the exact entries per switch: one `ina_workers` and `ina_result_addresses`
  entry per member (a child switch is addressed by its aggregator address), the multicast group
  of the members (rid = member id), `ina_root_job` at the root and `ina_child_job(parent address,
  child index)` elsewhere, the aggregator address and /32 routes to it on its neighbours (where
  children send from) where it is new.

`TreeJobs` writes plans over P4Runtime. Like `controller.ina_control.InaJobs` (both build on
`controller.ina_switches.InaSwitches`), it first reads what each switch already holds (`ina_jobs`,
`ina_aggregator_addresses`), so flat jobs installed before, or a restarted controller, never get
the same cells or group twice. It refuses, with the reason, a job that does not fit (job id, k,
members per switch (the program's bitmap), result count, cells, groups) and rolls back a half-written job. Each job
has its own cell range and group on every switch of its tree.
"""

from __future__ import annotations

from collections import deque
from dataclasses import dataclass
from typing import Mapping

import numpy as np

from controller.client import SwitchClient
from controller.errors import ControllerError
from controller.ina_jobs import (AggregationJob, Entry, FallbackServer, InaProgram,
                                 JobRefused, aggregator_address, aggregator_mac,
                                 aggregator_routes, check_job_id)
from controller.ina_switches import (CellState, InaSwitches, check_slot, clear_for_job,
                                     delete_group, read_cell, release_owned_cells,
                                     insert_entries, remove_entries, undo_quietly)
from topologies.model import Topology

RESULT_COUNT_LIMIT = 65535  # `result_count` is bit<16> in ina.p4 (RESULT's count: 16 bits)


# -- shape ----------------------------------------------------------------------------------------

@dataclass(frozen=True)
class TreeShape:
    """Which switches aggregate a job, and how they connect. `order` is top-down (root first)."""

    root: str
    order: tuple[str, ...]
    parent: Mapping[str, str | None]
    members: Mapping[str, tuple[str, ...]]   # switch -> member names (hosts, then child switches)

    @property
    def depth(self) -> int:
        """Aggregating levels: 1 for a single switch, 3 for edge → aggregation → core."""
        levels = {self.root: 1}
        for switch in self.order[1:]:
            levels[switch] = levels[self.parent[switch]] + 1
        return max(levels.values())


def _worker_switch(topology: Topology, job_id: int, host: str) -> str:
    try:
        return topology.host_link(host).node
    except KeyError:
        raise JobRefused(job_id, f"worker {host!r} is not a host of topology "
                                 f"{topology.name}") from None


def choose_root(topology: Topology, workers: tuple[str, ...] | list[str], job_id: int = 0,
                busy: Mapping[str, int] | None = None) -> str:
    """The switch nearest to all workers: least maximum depth, then least total depth, then the
    fewest jobs already on the switches of its tree (`busy`), then the first in topology order."""
    workers = tuple(workers)
    if not workers:
        raise JobRefused(job_id, "no workers")
    table = topology.switch_distances()
    # a worker is one hop beyond its switch, so every candidate's depths come from the switch
    # distance matrix at once (a search per candidate: ~20 s at fat-tree(40))
    columns, counts = np.unique([table.index[_worker_switch(topology, job_id, host)]
                                 for host in workers], return_counts=True)
    hops = table.matrix[:, columns].astype(np.int64)
    reaches = (hops >= 0).all(axis=1).tolist()
    deepest = (hops.max(axis=1) + 1).tolist()
    total = (hops @ counts + len(workers)).tolist()
    best: tuple | None = None
    for position, switch in enumerate(topology.switches):
        if not reaches[position]:
            continue
        key = (deepest[position], total[position])
        if best is not None and key > best[0][:2]:
            continue
        load = 0
        if busy:
            shape = tree_shape(topology, job_id, workers, switch.name)
            load = sum(busy.get(s, 0) for s in shape.order)
        key = (*key, load, position)
        if best is None or key < best[0]:
            best = (key, switch.name)
    if best is None:
        raise JobRefused(job_id, "no switch reaches every worker")
    return best[1]


def choose_roots(topology: Topology, jobs: list[tuple[int, tuple[str, ...]]]) -> list[str]:
    """Roots for jobs installed in this order, each avoiding the switches the earlier ones use
    where an equally near root allows (what `TreeJobs.install` does for a job without a root)."""
    busy: dict[str, int] = {}
    roots = []
    for job_id, workers in jobs:
        root = choose_root(topology, workers, job_id, busy)
        for switch in tree_shape(topology, job_id, tuple(workers), root).order:
            busy[switch] = busy.get(switch, 0) + 1
        roots.append(root)
    return roots


MAX_MEMBERS = 64    # ina.p4's default INA_MEMBERS (the `ina_seen` bitmap); TreeJobs uses the
                    # width the switches' program really has (InaProgram.max_workers)


def tree_shape(topology: Topology, job_id: int, workers: tuple[str, ...],
               root: str | None = None, busy: Mapping[str, int] | None = None,
               max_members: int | None = MAX_MEMBERS) -> TreeShape:
    """The shortest-path tree from the workers' own switches up to `root` (None: `choose_root`
    with `busy`). Where that tree would give a switch more than `max_members` members (a spine
    of a leaf-spine with more leaves than that), the tree is grown instead within the limit
    (`_bounded_parents`): deeper, through switches with room (None: no limit)."""
    if not workers:
        raise JobRefused(job_id, "no workers")
    if len(set(workers)) != len(workers):
        raise JobRefused(job_id, "a host is listed twice among the workers")
    leaves = [_worker_switch(topology, job_id, host) for host in workers]
    if root is None:
        root = choose_root(topology, workers, job_id, busy)
    try:
        topology.switch(root)
    except KeyError:
        raise JobRefused(job_id, f"no switch named {root!r} in topology {topology.name}") from None
    distance = topology.distances_to(root)
    parent: dict[str, str | None] = {root: None}
    for leaf in leaves:
        current = leaf
        if current not in distance:
            raise JobRefused(job_id, f"{leaf} cannot reach the root {root}")
        while current not in parent:
            up = [n for n in topology.neighbours(current)
                  if topology.is_switch(n.node) and distance.get(n.node) == distance[current] - 1]
            parent[current] = up[0].node        # neighbours come by ascending port
            current = up[0].node
    shape = _assemble(topology, root, parent, workers, leaves)
    if max_members is None or all(len(m) <= max_members for m in shape.members.values()):
        return shape
    bounded = _bounded_parents(topology, root, leaves, distance, max_members)
    return shape if bounded is None else _assemble(topology, root, bounded, workers, leaves)


def _assemble(topology: Topology, root: str, parent: Mapping[str, str | None],
              workers: tuple[str, ...], leaves: list[str]) -> TreeShape:
    """Members (own workers in job order, then child switches by port) and top-down order."""
    members: dict[str, list[str]] = {switch: [] for switch in parent}
    for host, leaf in zip(workers, leaves):
        members[leaf].append(host)
    order = [root]
    queue = deque([root])
    while queue:
        switch = queue.popleft()
        below = []
        for n in topology.neighbours(switch):
            if parent.get(n.node) == switch and n.node not in below:
                below.append(n.node)
        members[switch].extend(below)
        order.extend(below)
        queue.extend(below)
    return TreeShape(root=root, order=tuple(order), parent=dict(parent),
                     members={s: tuple(m) for s, m in members.items()})


def _bounded_parents(topology: Topology, root: str, leaves: list[str],
                     distance: Mapping[str, int], limit: int) -> dict[str, str | None] | None:
    """Parents of a tree in which no switch has more than `limit` members, or None when no such
    tree is found (then the shortest-path tree is kept and refused with its reason).

    Greedy, nearest workers' switches first: each joins the tree by the shortest path (over
    switches not yet in it) to a tree switch with room left, and the switches on that path join
    too. On a leaf-spine rooted at spine 1, the first `limit` leaves join spine 1, the next ones
    spine 2, which joins as a child of a leaf already in the tree."""
    own: dict[str, int] = {}
    for leaf in leaves:
        own[leaf] = own.get(leaf, 0) + 1
    if any(count > limit for count in own.values()):
        return None
    position = {s.name: i for i, s in enumerate(topology.switches)}
    parent: dict[str, str | None] = {root: None}
    load = {root: own.get(root, 0)}
    for leaf in sorted(set(leaves) - {root}, key=lambda s: (distance[s], position[s])):
        if leaf in parent:
            continue
        came_from: dict[str, str | None] = {leaf: None}
        queue, found = deque([leaf]), None
        while queue and found is None:
            current = queue.popleft()
            for n in topology.neighbours(current):
                node = n.node
                if node in came_from or not topology.is_switch(node):
                    continue
                if node in parent:
                    if load[node] < limit:
                        found = (node, current)
                        break
                    continue                # full: neither a parent nor a way through
                if own.get(node, 0) + 1 > limit:
                    continue
                came_from[node] = current
                queue.append(node)
        if found is None:
            return None
        above, node = found
        while node is not None:
            parent[node] = above
            load[above] += 1
            load[node] = own.get(node, 0)
            above, node = node, came_from[node]
    return parent


# -- plan -----------------------------------------------------------------------------------------

@dataclass(frozen=True)
class FallbackNearTiers:
    """A hashed tree job's host aggregators, one per tree switch, each on the job's worker host
    nearest its switch (`tier_hosts`), the i-th switch of the tree (top-down) on UDP port
    `port + i`. *Why near*: a chunk a tier's host aggregator holds crosses the path switch →
    host → switch for every packet of it, retransmissions and the parent's answers too; on
    one host for the whole tree (a `FallbackServer`), a leaf's chunk crossed the spine and
    another leaf twice each way, and at 10 % loss on every link a leaf-spine job's recoveries
    failed so often that workers gave up (docs/fallback.md, "Trees"). Only the job's own
    worker hosts are used, so two jobs (which never share a worker host) never share a port."""

    port: int = 48880


def tier_hosts(topology: Topology, shape: TreeShape, workers: tuple[str, ...]) -> dict[str, str]:
    """switch -> the job's worker host nearest it among the workers below it in the tree (its
    own workers first: one link away); ties to the host holding the fewest tier aggregators
    chosen so far (top-down), then job order, so a root spreads away from its children's."""
    below: dict[str, list[str]] = {switch: [] for switch in shape.order}
    for host in workers:
        switch = topology.host_link(host).node
        while switch is not None:
            below[switch].append(host)
            switch = shape.parent[switch]
    chosen: dict[str, str] = {}
    held: dict[str, int] = {}
    for switch in shape.order:
        distance = topology.distances_to(switch)
        host = min(below[switch], key=lambda h: (distance[h], held.get(h, 0),
                                                 workers.index(h)))
        chosen[switch] = host
        held[host] = held.get(host, 0) + 1
    return chosen


@dataclass(frozen=True)
class TreeJob(AggregationJob):
    """A hierarchical job: id, worker hosts in job order, k, pool size, root (None: choose).

    `sharing="hashed"` (docs/protocol.md §3.3): every switch of the tree draws the job's data
    cells from its shared pool and has a host aggregator for the chunks that find their cell
    taken, the i-th switch of the tree (top-down) on UDP port `fallback.port + i`: with
    `FallbackNearTiers` on the worker host nearest that switch (`tier_hosts`), with a
    `FallbackServer` all on its one host."""

    root: str | None = None
    sharing: str = "static"
    fallback: FallbackServer | FallbackNearTiers | None = None

    @property
    def cells(self) -> int:
        """Cells of the job's own per switch: its slice, or hashed its MAX pair alone."""
        return 2 if self.sharing == "hashed" else 2 * self.pool_size + 2


@dataclass(frozen=True)
class TreeNode:
    """One aggregating switch of a job's tree."""

    switch: str
    address: str                   # its aggregator address
    base: int                      # first of its 2·pool_size + 2 cells
    mgid: int                      # the multicast group of its members
    members: tuple[str, ...]       # member id i = members[i]
    parent: str | None             # parent switch (None at the root)
    child_index: int | None        # its member id at the parent
    fallback_port: int | None = None   # hashed: its host aggregator's UDP port
    fallback_address: str | None = None   # hashed: ... and the host's address


@dataclass(frozen=True)
class WorkerEndpoint:
    """Where a worker sends: its own switch's aggregator address, as member `worker_id` there."""

    host: str
    switch: str
    address: str
    worker_id: int


@dataclass(frozen=True)
class TreePlan:
    job: TreeJob
    shape: TreeShape
    nodes: Mapping[str, TreeNode]                          # top-down
    groups: Mapping[str, tuple[tuple[int, int], ...]]      # switch -> (port, rid) replicas
    entries: tuple[tuple[str, Entry], ...]                 # (switch, entry) in write order
    endpoints: tuple[WorkerEndpoint, ...]                  # in job worker order

    def cell_range(self, switch: str) -> range:
        base = self.nodes[switch].base
        return range(base, base + self.job.cells)

    def cell(self, switch: str, slot: int, version: int) -> int:
        return self.nodes[switch].base + 2 * slot + version

    def summary(self) -> dict:
        """JSON-ready: per switch its cells, group, parent and members."""
        return {s: {"base": n.base, "cells": self.job.cells, "mgid": n.mgid, "parent": n.parent,
                    "child_index": n.child_index, "address": n.address,
                    "members": list(n.members), "fallback_port": n.fallback_port,
                    "fallback_address": n.fallback_address}
                for s, n in self.nodes.items()}


def check_tree_job(topology: Topology, programs: Mapping[str, InaProgram], job: TreeJob,
                   shape: TreeShape) -> None:
    """Refuse a job that a switch of its tree cannot hold; the reason names the limit."""
    refuse = lambda why: JobRefused(job.job_id, why)  # noqa: E731
    total = len(job.workers)
    if not 1 <= total <= RESULT_COUNT_LIMIT:
        raise refuse(f"{total} workers; a tree counts at most {RESULT_COUNT_LIMIT} "
                     "(result_count is 16 bits)")
    if isinstance(job.pool_size, bool) or not isinstance(job.pool_size, int) \
            or not 1 <= job.pool_size <= 0xFFFF:
        raise refuse(f"pool size {job.pool_size!r} outside 1..65535")
    for switch in shape.order:
        program = programs[switch]
        check_job_id(program, job.job_id)
        if job.k != program.k:
            raise refuse(f"k mismatch: the job's hosts send {job.k} values per packet, {switch} "
                         f"runs INA_K={program.k}")
        count = len(shape.members[switch])
        if count > program.max_workers:
            raise refuse(f"{switch} would aggregate {count} members; its worker bitmap holds "
                         f"{program.max_workers}")
        if job.cells > program.cells:
            raise refuse(f"a pool of {job.pool_size} slots needs {job.cells} cells, {switch} "
                         f"has {program.cells} (INA_CELLS)")
    if job.sharing not in ("static", "hashed"):
        raise refuse(f"sharing {job.sharing!r}: must be static or hashed")
    if job.sharing == "hashed":
        _check_tier_fallback(topology, job, len(shape.order), refuse)


def _check_tier_fallback(topology: Topology, job: TreeJob, switches: int, refuse) -> None:
    """A hashed tree's host aggregators: given, on a host of the topology, their ports (one per
    tree switch) inside 1..65535."""
    server = job.fallback
    if server is None:
        raise refuse("hashed sharing needs a host aggregator (fallback) for the chunks that "
                      "find their cell taken")
    if isinstance(server, FallbackServer) and \
            not any(h.ip == server.address for h in topology.hosts):
        raise refuse(f"host aggregator {server.address} is not a host of topology "
                     f"{topology.name} (the switches route only to hosts)")
    port = server.port
    if isinstance(port, bool) or not isinstance(port, int) or \
            not 1 <= port <= 0xFFFF - (switches - 1):
        raise refuse(f"host aggregator port {port!r}: the tree's {switches} switches need "
                     f"ports {port!r}..{port!r}+{switches - 1} inside 1..65535")


def plan_tree(topology: Topology, job: TreeJob, shape: TreeShape, *, bases: Mapping[str, int],
              mgids: Mapping[str, int], new_addresses: set[str],
              shared: Mapping[str, tuple[int, int]] | None = None) -> TreePlan:
    """The entries of a checked tree placed at `bases`/`mgids` per switch. Aggregator addresses in
    `new_addresses` get their address entry and the routes to them on the neighbouring switches
    (`tree_address_routes`); a hashed job's also on every switch (its host aggregators send
    to them), and each switch its `ina_fallback` and `ina_sharing` entries (`shared`: the
    switch's pool, (first cell, pairs))."""
    hashed = job.sharing == "hashed"
    jid, total = job.job_id, len(job.workers)
    addresses = {s: aggregator_address(topology, s) for s in shape.order}
    servers: dict[str, str] = {}
    if hashed and isinstance(job.fallback, FallbackNearTiers):
        servers = {s: topology.host(h).ip
                   for s, h in tier_hosts(topology, shape, job.workers).items()}
    elif hashed:
        servers = {s: job.fallback.address for s in shape.order}
    nodes: dict[str, TreeNode] = {}
    groups: dict[str, tuple[tuple[int, int], ...]] = {}
    writes: list[tuple[str, Entry]] = []
    for switch in shape.order:
        up = shape.parent[switch]
        members = shape.members[switch]
        node = TreeNode(switch, addresses[switch], bases[switch], mgids[switch], members, up,
                        None if up is None else shape.members[up].index(switch),
                        job.fallback.port + shape.order.index(switch) if hashed else None,
                        servers.get(switch))
        nodes[switch] = node
        replicas = []
        for index, member in enumerate(members):
            if member in shape.parent:        # a child switch
                port = topology.port_towards(switch, member)
                address = addresses[member]
                mac = aggregator_mac(address)
            else:
                host = topology.host(member)
                port, address, mac = topology.host_link(member).remote_port, host.ip, host.mac
            writes.append((switch, Entry(
                "ina_workers", {"hdr.ina.job": jid, "hdr.ina.worker": index}, "ina_worker_port",
                {"port": port}, f"job {jid} member {index} ({member}) on port {port}")))
            writes.append((switch, Entry(
                "ina_result_addresses", {"hdr.ina.job": jid, "meta.ina.receiver": index},
                "ina_address_result", {"dstMac": mac, "dstAddr": address},
                f"job {jid} results to member {index} ({address})")))
            replicas.append((port, index))
        groups[switch] = tuple(replicas)
        if hashed:
            writes.append((switch, Entry(
                "ina_fallback", {"hdr.ina.job": jid}, "ina_fall_back",
                {"server": node.fallback_address, "port": node.fallback_port},
                f"job {jid} collisions to {node.fallback_address}:{node.fallback_port}")))
            writes.append((switch, Entry(
                "ina_sharing", {"hdr.ina.job": jid}, "ina_share_pool",
                {"pool_base": shared[switch][0], "pool_pairs": shared[switch][1]},
                f"job {jid} hashed into {switch}'s shared pool")))
        params = {"base": node.base, "pool_size": job.pool_size, "n": len(members),
                  "mgid": node.mgid, "result_count": total}
        if up is None:
            action, role = "ina_root_job", "root"
        else:
            action, role = "ina_child_job", f"child {node.child_index} of {up}"
            params.update(parent=addresses[up], child_index=node.child_index)
        writes.append((switch, Entry(
            "ina_jobs", {"hdr.ipv4.dstAddr": node.address, "hdr.ina.job": jid}, action, params,
            f"job {jid} at {node.address} ({role}): "
            f"cells {node.base}..{node.base + job.cells - 1}")))
        if node.address in new_addresses:
            writes.append((switch, Entry(
                "ina_aggregator_addresses", {"hdr.ipv4.dstAddr": node.address},
                "ina_aggregate_here", {}, f"aggregator address {node.address}")))
            routes = aggregator_routes(topology, switch, node.address) if hashed else \
                tree_address_routes(topology, switch, node.address)
            for route in routes:
                writes.append((route.switch, Entry(
                    "ipv4_lpm", {"hdr.ipv4.dstAddr": (node.address, 32)}, "ipv4_forward",
                    {"dstAddr": route.dst_mac, "port": route.port},
                    f"route to aggregator {node.address} -> port {route.port}")))
    endpoints = []
    for host in job.workers:
        leaf = topology.host_link(host).node
        endpoints.append(WorkerEndpoint(host, leaf, addresses[leaf],
                                        shape.members[leaf].index(host)))
    return TreePlan(job=job, shape=shape, nodes=nodes, groups=groups, entries=tuple(writes),
                    endpoints=tuple(endpoints))


def tree_address_routes(topology: Topology, switch: str, address: str):
    """The /32s towards a tree switch's aggregator address: on its neighbours only. In a tree
    only a child (always a neighbour) sends to that address (its partials and queries, routed by
    `ipv4_lpm`); workers send to their own switch, results and NACKs leave by member port. So
    the routes grow with the links, not with switches squared (a fat-tree(16) tree over 145
    switches would write 46,000 routes on every switch, beyond `ipv4_lpm`'s 1024)."""
    return aggregator_routes(topology, switch, address,
                             only={n.node for n in topology.neighbours(switch)})


# -- installation over P4Runtime ------------------------------------------------------------------

class TreeJobs(InaSwitches[TreePlan]):
    """The tree jobs of a network. `clients` maps switch name -> a session whose pipeline (ina.p4)
    is already pushed (`Fabric.clients`)."""

    def install(self, job: TreeJob, *, shared_pairs: int | None = None) -> TreePlan:
        """Plan, place and write one tree job; `JobRefused` (nothing written) if it cannot.
        A hashed job's first on a switch creates its shared pool of `shared_pairs` pairs."""
        busy: dict[str, int] = {}
        for plan in self.plans.values():
            for switch in plan.nodes:
                busy[switch] = busy.get(switch, 0) + 1
        root = job.root
        if root is None:
            root = choose_root(self.topology, job.workers, job.job_id, busy)
        try:        # the member limit is the program's bitmap, read from the root's P4Info
            limit = self._state(root).program.max_workers
        except (KeyError, ControllerError):
            limit = MAX_MEMBERS       # an unknown root: tree_shape refuses it with the reason
        shape = tree_shape(self.topology, job.job_id, job.workers, root, busy,
                           max_members=limit)
        states = {switch: self._state(switch) for switch in shape.order}
        check_tree_job(self.topology, {s: st.program for s, st in states.items()}, job, shape)
        for switch in states:
            self._refuse_taken_id(job.job_id, switch)
        if job.sharing == "hashed":
            for switch, state in states.items():
                if state.shared is None:
                    self.create_shared_pool(job.job_id, switch, shared_pairs)
        bases: dict[str, int] = {}
        try:
            for switch, state in states.items():
                try:
                    bases[switch] = state.pool.allocate(job.job_id, job.cells)
                except JobRefused as refused:
                    raise JobRefused(job.job_id, f"on {switch}: {refused.reason}") from None
            mgids = {switch: state.free_group(job.job_id, f" on {switch}")
                     for switch, state in states.items()}
            new = {aggregator_address(self.topology, s) for s in shape.order
                   if aggregator_address(self.topology, s) not in states[s].addresses}
            plan = plan_tree(self.topology, job, shape, bases=bases, mgids=mgids,
                             new_addresses=new,
                             shared={s: st.shared for s, st in states.items()})
            self._write(plan)
        except BaseException:
            for switch in bases:
                states[switch].pool.release(job.job_id, used=False)
            raise
        for switch, node in plan.nodes.items():
            states[switch].groups[job.job_id] = node.mgid
            states[switch].addresses.add(node.address)
        self.plans[job.job_id] = plan
        self.progress(f"job {job.job_id}: tree of depth {shape.depth} rooted at {shape.root} "
                      f"over {len(shape.order)} switches, {len(job.workers)} workers, "
                      f"k={job.k}, pool {job.pool_size} slots")
        return plan

    def _write(self, plan: TreePlan) -> None:
        """Groups first, then the entries in batches per switch (plan order within a switch);
        on a failure, undo what was written: earlier batches, and the updates of the failed
        batch that the switch did not report as failed."""
        groups_done: list[tuple[SwitchClient, int]] = []
        written: list[tuple[SwitchClient, Entry]] = []
        per_switch: dict[str, list[Entry]] = {}
        for switch, entry in plan.entries:
            per_switch.setdefault(switch, []).append(entry)
        try:
            for switch in plan.nodes:
                clear_for_job(self._client(switch), self._state(switch).pool, plan.job.job_id,
                              switch, plan.cell_range(switch))
            for switch, replicas in plan.groups.items():
                client = self._client(switch)
                client.set_multicast_group(plan.nodes[switch].mgid, replicas)
                groups_done.append((client, plan.nodes[switch].mgid))
            for switch, entries in per_switch.items():
                insert_entries(self._client(switch), entries, written)
        except BaseException:
            undo_quietly(written, groups_done)
            raise

    def remove(self, job_id: int) -> None:
        """Delete the job's entries and groups on every switch and free its cells. Aggregator
        addresses and routes stay (other jobs may use them)."""
        plan = self._plan(job_id)
        remove_entries([(self._client(switch), entry) for switch, entry in plan.entries])
        for switch, node in plan.nodes.items():
            delete_group(self._client(switch), node.mgid)
            state = self._state(switch)
            state.pool.release(job_id)
            state.groups.pop(job_id, None)
            if plan.job.sharing == "hashed" and state.shared is not None:
                release_owned_cells(self._client(switch), job_id, state.shared)
        del self.plans[job_id]
        self.progress(f"job {job_id}: tree removed from {len(plan.nodes)} switches")

    # -- monitoring -------------------------------------------------------------------------------

    def counters(self, job_id: int) -> dict[str, dict[str, int]]:
        """switch -> packets per counter of docs/protocol.md §7, for this job's switches."""
        plan = self._plan(job_id)
        return {switch: self._job_counters(switch, job_id) for switch in plan.nodes}

    def cell_state(self, job_id: int, switch: str, cell: int) -> CellState:
        """One of the job's cells on one switch of its tree, as the registers hold it."""
        plan = self._plan(job_id)
        if switch not in plan.nodes:
            raise ControllerError(f"job {job_id}: {switch} is not in its tree "
                                  f"({', '.join(plan.nodes)})")
        cells = plan.cell_range(switch)
        if cell not in cells:
            raise ControllerError(f"job {job_id}: cell {cell} is not one of its cells "
                                  f"{cells.start}..{cells.stop - 1} on {switch}")
        return read_cell(self._client(switch), self._state(switch).program, cell)

    def slot_state(self, job_id: int, switch: str, slot: int, version: int) -> CellState:
        plan = self._plan(job_id)
        check_slot(job_id, plan.job.pool_size, slot, version)
        return self.cell_state(job_id, switch, plan.cell(switch, slot, version))
