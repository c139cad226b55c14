"""Hierarchical aggregation jobs (docs/protocol.md §6), set up over P4Runtime for the simulator.

The controller's job set-up (`controller.ina_control.InaJobs`) installs flat jobs only; until it
grows trees, this module writes a two-level tree with the controller's generic writes
(`SwitchClient.add_entry`, `set_multicast_group`) and its address and route rules
(`controller.ina_jobs.aggregator_address`, `aggregator_routes`):

- every worker sends to the aggregator address of its own switch (its *leaf*), as worker id =
  its position among that leaf's workers;
- a leaf other than the root has the job as `ina_child_job(..., parent = the root's aggregator
  address, child_index)`, and sends each completed cell up as child `child_index`;
- the root has `ina_root_job` with one member per child: each leaf (reached through the port
  towards it, results addressed to the leaf's aggregator address) and each worker attached to
  the root itself;
- `result_count` everywhere, and the n of every worker's session, is the tree's worker count;
- every aggregator address gets a /32 route on every other switch.
Cells: `2·pool_size + 2` per job per switch, allocated first-fit from 0 by this module (so a run
is either all flat jobs or all tree jobs); multicast groups from 1024 up, one per job.
"""

from __future__ import annotations

from dataclasses import dataclass

from controller.fabric import Fabric
from controller.ina_jobs import aggregator_address, aggregator_mac, aggregator_routes
from controller.routing import host_routes
from topologies.model import Topology


class TreeError(Exception):
    """A tree job that cannot be built (no root, a worker unreachable, too many members)."""


@dataclass(frozen=True)
class TreeMember:
    """Where one worker sends: its leaf's aggregator address and its worker id there."""

    host: str
    leaf: str
    address: str
    worker_id: int


@dataclass(frozen=True)
class TreePlan:
    job: int
    root: str
    members: tuple[TreeMember, ...]          # in the job's worker order
    children: tuple[str, ...]                # the root's members: leaf switch or host, by index
    bases: dict                              # switch -> base cell


def plan_tree(topology: Topology, job: int, workers: tuple[str, ...], root: str,
              pool_size: int, bases: dict[str, int], cells: int) -> TreePlan:
    """Leaves, member ids and cells of one tree job; `bases` is the next free cell per switch."""
    leaves: dict[str, list[str]] = {}
    for host in workers:
        leaves.setdefault(topology.host_link(host).node, []).append(host)
    children = tuple([s for s in leaves if s != root] + leaves.get(root, []))
    members = []
    for host in workers:
        leaf = topology.host_link(host).node
        worker_id = children.index(host) if leaf == root else leaves[leaf].index(host)
        members.append(TreeMember(host, leaf, aggregator_address(topology, leaf), worker_id))
    if len(children) > 32 or any(len(hosts) > 32 for hosts in leaves.values()):
        raise TreeError(f"job {job}: more than 32 members at one switch")
    need = 2 * pool_size + 2
    used = {}
    for switch in set(leaves) | {root}:
        base = bases.get(switch, 0)
        if base + need > cells:
            raise TreeError(f"job {job}: switch {switch} has no {need} free cells")
        used[switch] = base
        bases[switch] = base + need
    return TreePlan(job, root, tuple(members), children, used)


def install_tree(fabric: Fabric, topology: Topology, plan: TreePlan, *, pool_size: int,
                 mgid: int, announced: set[str]) -> None:
    """Write one tree job; `announced` holds the aggregator addresses already routed."""
    total = len(plan.members)
    root_address = aggregator_address(topology, plan.root)
    ports = {s: {r.host: r.port for r in rs} for s, rs in host_routes(topology).items()}
    for switch in {m.leaf for m in plan.members} | {plan.root}:
        address = aggregator_address(topology, switch)
        if address in announced:
            continue
        announced.add(address)
        fabric[switch].add_entry("ina_aggregator_addresses", {"hdr.ipv4.dstAddr": address},
                                 "ina_aggregate_here")
        for route in aggregator_routes(topology, switch, address):
            fabric[route.switch].add_entry(
                "ipv4_lpm", {"hdr.ipv4.dstAddr": (address, 32)}, "ipv4_forward",
                {"dstAddr": route.dst_mac, "port": route.port})
    leaves = sorted({m.leaf for m in plan.members if m.leaf != plan.root})
    for leaf in leaves:
        local = [m for m in plan.members if m.leaf == leaf]
        client = fabric[leaf]
        client.add_entry("ina_jobs",
                         {"hdr.ipv4.dstAddr": local[0].address, "hdr.ina.job": plan.job},
                         "ina_child_job",
                         {"base": plan.bases[leaf], "pool_size": pool_size, "n": len(local),
                          "mgid": mgid, "result_count": total, "parent": root_address,
                          "child_index": plan.children.index(leaf)})
        replicas = []
        for m in local:
            host = topology.host(m.host)
            port = ports[leaf][m.host]
            client.add_entry("ina_workers",
                             {"hdr.ina.job": plan.job, "hdr.ina.worker": m.worker_id},
                             "ina_worker_port", {"port": port})
            client.add_entry("ina_result_addresses",
                             {"hdr.ina.job": plan.job, "meta.ina.receiver": m.worker_id},
                             "ina_address_result", {"dstMac": host.mac, "dstAddr": host.ip})
            replicas.append((port, m.worker_id))
        client.set_multicast_group(mgid, replicas)
    root = fabric[plan.root]
    replicas = []
    for index, child in enumerate(plan.children):
        if child in leaves:
            address = aggregator_address(topology, child)
            port = _port_towards(topology, plan.root, child)
            mac = aggregator_mac(address)
        else:
            host = topology.host(child)
            address, mac, port = host.ip, host.mac, ports[plan.root][child]
        root.add_entry("ina_workers", {"hdr.ina.job": plan.job, "hdr.ina.worker": index},
                       "ina_worker_port", {"port": port})
        root.add_entry("ina_result_addresses",
                       {"hdr.ina.job": plan.job, "meta.ina.receiver": index},
                       "ina_address_result", {"dstMac": mac, "dstAddr": address})
        replicas.append((port, index))
    root.set_multicast_group(mgid, replicas)
    root.add_entry("ina_jobs", {"hdr.ipv4.dstAddr": root_address, "hdr.ina.job": plan.job},
                   "ina_root_job", {"base": plan.bases[plan.root], "pool_size": pool_size,
                                    "n": len(plan.children), "mgid": mgid,
                                    "result_count": total})


def _port_towards(topology: Topology, switch: str, target: str) -> int:
    distance = topology.distances_to(target)
    closer = [n for n in topology.neighbours(switch)
              if distance.get(n.node, -1) == distance[switch] - 1]
    if not closer:
        raise TreeError(f"{switch} cannot reach {target}")
    return closer[0].port

