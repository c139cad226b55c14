"""The control plane of a simulated run, done as on Mininet: over P4Runtime, with the controller.

Compiles the P4 program once per (program, defines) in this process, pushes it to every simulated
switch through `controller.fabric.Fabric`, installs the host routes the controller computes, and
each aggregation job with the controller's own job set-up (`controller.ina_control.InaJobs`:
aggregator address and the routes to it, job/worker/result entries, the multicast group).
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path

from controller.fabric import Fabric
from controller.ina_control import InaJobs
from controller.p4info import P4InfoIndex
from controller.routing import L3_FORWARD
from p4switch.compiler import compile_file
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
    """`inaemu compile` in-process (cached: tests build many networks from one program)."""
    build = compile_file(path, defines=dict(defines))
    return Program(P4InfoIndex.from_text(build.p4info_text(), source=path),
                   json.dumps(build.bmv2).encode())


@dataclass(frozen=True)
class JobPlacement:
    """One job as the workers see it: id, worker hosts (worker id = position), pool size, and
    the aggregator address its switch answers on (None when no INA job was installed)."""

    job: int
    workers: tuple[str, ...]
    pool_size: int
    address: str | None = None


def push_program(fabric: Fabric, program: Program) -> None:
    for client in fabric.clients.values():
        client.set_pipeline(program.p4info, program.config)


def install_host_routes(fabric: Fabric) -> int:
    return fabric.install_routes(L3_FORWARD)


def install_ina_jobs(fabric: Fabric, topology: Topology,
                     jobs: list[tuple[int, tuple[str, ...], str]], *, k: int,
                     pool_size: int) -> list[JobPlacement]:
    """Every (job id, workers, switch) through the controller; JobRefused says why one can't."""
    installer = InaJobs(topology, fabric.clients)
    placements = []
    for job, workers, switch in jobs:
        plan = installer.install(job, workers, switch, k=k, pool_size=pool_size)
        placements.append(JobPlacement(job, tuple(workers), pool_size, plan.job.aggregator_ip))
    return placements
