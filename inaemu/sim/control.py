"""The control plane of a simulated run, done as on Mininet: over P4Runtime, with the controller.

Compiles the P4 program once per (program, defines) in this process, pushes it to every simulated
switch through `controller.fabric.Fabric`, installs the host routes the controller computes, and
each aggregation job with the controller's own job set-up (`controller.ina_control.InaJobs`:
aggregator address and the routes to it, job/worker/result entries, the multicast group), or,
for hierarchical jobs, with the controller's tree set-up (`controller.trees.TreeJobs`).
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path

from controller.fabric import Fabric
from controller.ina_control import InaJobs
from controller.ina_jobs import FallbackServer
from hosts.fallback import fallback_port
from controller.p4info import P4InfoIndex
from controller.routing import L3_FORWARD
from controller.trees import FallbackNearTiers, TreeJob, TreeJobs, TreePlan
from inaemu.compile_cache import compile_cached
from topologies.model import Topology

PROJECT_ROOT = Path(__file__).resolve().parents[2]
INA_PROGRAM = PROJECT_ROOT / "p4src" / "ina.p4"
L3_PROGRAM = PROJECT_ROOT / "p4src" / "l3_forward.p4"


@dataclass(frozen=True)
class Program:
    p4info: P4InfoIndex
    config: bytes


@lru_cache(maxsize=8)
def compile_program(path: str, defines: tuple[tuple[str, str], ...] = ()) -> Program:
    """`inaemu compile` in-process, once per (sources, defines): in this process, and across
    processes through the content-addressed disk cache (inaemu/compile_cache.py)."""
    build = compile_cached(path, dict(defines))
    if build.p4info_binary:
        return Program(P4InfoIndex.from_binary(build.p4info_binary, source=path),
                       build.bmv2_json)
    return Program(P4InfoIndex.from_text(build.p4info_text, source=path), build.bmv2_json)


@dataclass(frozen=True)
class JobPlacement:
    """One job as its workers see it: id, worker hosts (in job order), pool size, and per worker
    the aggregator address it sends to and its worker id there (flat: one address, ids 0..n-1;
    a tree: its leaf's address and its index among that leaf's members; None for the ring)."""

    job: int
    workers: tuple[str, ...]
    pool_size: int
    addresses: tuple[str, ...] | None = None
    worker_ids: tuple[int, ...] | None = None
    # slots the switch holds when fewer than pool_size: the rest go to the job's host
    # aggregator on its worker 0's host, UDP port fallback_port (docs/fallback.md)
    switch_slots: int | None = None
    fallback_port: int | None = None
    # "hashed": the job's data chunks hash into the switch's shared pool and those that find
    # their cell taken go to its host aggregator (docs/protocol.md §3.3)
    sharing: str = "static"


def push_program(fabric: Fabric, program: Program) -> None:
    for client in fabric.clients.values():
        client.set_pipeline(program.p4info, program.config)


def install_host_routes(fabric: Fabric) -> int:
    return fabric.install_routes(L3_FORWARD)


def install_ina_jobs(fabric: Fabric, topology: Topology,
                     jobs: list[tuple[int, tuple[str, ...], str]], *, k: int,
                     pool_size: int, fallback_slots: int | None = None,
                     sharing: str = "static",
                     shared_pairs: int | None = None) -> list[JobPlacement]:
    """Every (job id, workers, switch) through the controller; JobRefused says why one can't.
    With `fallback_slots` each job holds that many of its `pool_size` slots in the switch and
    the rest go to a host aggregator on its worker 0's host (docs/fallback.md). With
    `sharing="hashed"` every job draws from one shared pool of `shared_pairs` pairs per switch
    and has a host aggregator there for its collisions (docs/protocol.md §3.3)."""
    installer = InaJobs(topology, fabric.clients)
    placements = []
    hashed = sharing == "hashed"
    for job, workers, switch in jobs:
        server = None if fallback_slots is None and not hashed else FallbackServer(
            topology.host(workers[0]).ip, fallback_port(job))
        plan = installer.install(job, workers, switch, k=k, pool_size=pool_size,
                                 fallback=server, switch_slots=fallback_slots,
                                 sharing=sharing, shared_pairs=shared_pairs)
        placements.append(JobPlacement(job, tuple(workers), pool_size,
                                       (plan.job.aggregator_ip,) * len(workers),
                                       tuple(range(len(workers))),
                                       None if server is None or hashed else plan.job.pool_size,
                                       None if server is None else server.port, sharing))
    return placements


def install_tree_jobs(fabric: Fabric, topology: Topology,
                      jobs: list[tuple[int, tuple[str, ...], str | None]], *, k: int,
                      pool_size: int, sharing: str = "static",
                      shared_pairs: int | None = None) -> tuple[list[JobPlacement],
                                                                list[TreePlan]]:
    """Every (job id, workers, root switch or None) as a tree of any depth (controller.trees);
    JobRefused says why one can't. With `sharing="hashed"` every tree switch draws the job's
    cells from its shared pool and has a host aggregator for it on the job's worker host
    nearest that switch (UDP fallback_port(job) + the switch's place in the tree, top-down:
    controller.trees.FallbackNearTiers)."""
    installer = TreeJobs(topology, fabric.clients)
    placements, plans = [], []
    for job, workers, root in jobs:
        server = FallbackNearTiers(fallback_port(job)) if sharing == "hashed" else None
        plan = installer.install(TreeJob(job, tuple(workers), k, pool_size, root, sharing,
                                         server), shared_pairs=shared_pairs)
        placements.append(JobPlacement(job, tuple(workers), pool_size,
                                       tuple(e.address for e in plan.endpoints),
                                       tuple(e.worker_id for e in plan.endpoints),
                                       sharing=sharing))
        plans.append(plan)
    return placements, plans
