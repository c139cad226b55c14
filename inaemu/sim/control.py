"""The control plane of a simulated run, done as on Mininet: over P4Runtime, with the controller.

Compiles the P4 program once per (program, defines) in this process, pushes it to every simulated
switch through `controller.fabric.Fabric`, installs the host routes the controller computes, the
routes towards each aggregator address, and each aggregation job's tables and multicast group
(docs/protocol.md §2). Jobs here are flat: one aggregating switch per job, its workers anywhere
(their packets are routed to the aggregator address like any traffic).
"""

from __future__ import annotations

import ipaddress
import json
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path

from controller.client import SwitchClient
from controller.fabric import Fabric
from controller.p4info import P4InfoIndex
from controller.routing import L3_FORWARD
from p4switch.compiler import compile_file
from topologies.model import Topology

PROJECT_ROOT = Path(__file__).resolve().parents[2]
INA_PROGRAM = PROJECT_ROOT / "p4src" / "ina.p4"
L3_PROGRAM = PROJECT_ROOT / "p4src" / "l3_forward.p4"
INA_CELLS = 2048       # ina.p4's default pool


class SetupError(Exception):
    """A job that cannot be installed (too many workers, pool exhausted, unknown host...)."""


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
    """One job as installed: its id, worker hosts (worker id = position), the aggregating switch,
    the aggregator address, and the cells it got there."""

    job: int
    workers: tuple[str, ...]
    switch: str
    address: str
    base: int
    pool_size: int


def push_program(fabric: Fabric, program: Program) -> None:
    for client in fabric.clients.values():
        client.set_pipeline(program.p4info, program.config)


def install_host_routes(fabric: Fabric) -> int:
    return fabric.install_routes(L3_FORWARD)


def aggregator_address(switch_index: int) -> str:
    """10.254.x.y = 10.254.0.0 + index + 1: one per switch (ina_jobs is keyed by address and job),
    outside every host subnet the builders use (10.0.0.0/16)."""
    return str(ipaddress.IPv4Address((10 << 24) | (254 << 16) | (switch_index + 1)))


def place_jobs(topology: Topology, jobs: list[tuple[int, tuple[str, ...], str | None]],
               pool_size: int, cells: int = INA_CELLS) -> list[JobPlacement]:
    """Choose each job's switch (given, or the first worker's) and disjoint cell ranges."""
    next_base: dict[str, int] = {}
    seen_ids: set[int] = set()
    placements = []
    switch_index = {s.name: i for i, s in enumerate(topology.switches)}
    for job, workers, switch in jobs:
        if not 1 <= job <= 0xFFFF:
            raise SetupError(f"job id {job} must be 1..65535 (it is also the multicast group id)")
        if job in seen_ids:
            raise SetupError(f"job id {job} is used twice")
        seen_ids.add(job)
        if not 1 <= len(workers) <= 32:
            raise SetupError(f"job {job}: {len(workers)} workers; a job has 1 to 32")
        for host in workers:
            try:
                topology.host(host)
            except KeyError as error:
                raise SetupError(f"job {job}: {error.args[0]}") from None
        if switch is None:
            switch = topology.host_link(workers[0]).node
        if switch not in switch_index:
            raise SetupError(f"job {job}: no switch named {switch!r}")
        base = next_base.get(switch, 0)
        need = 2 * pool_size + 2
        if base + need > cells:
            raise SetupError(f"job {job}: switch {switch} has {cells - base} free cells, "
                             f"the job needs {need} (pool of {pool_size})")
        next_base[switch] = base + need
        placements.append(JobPlacement(job, tuple(workers), switch,
                                       aggregator_address(switch_index[switch]),
                                       base, pool_size))
    return placements


def next_hop_port(topology: Topology, switch: str, target: str) -> int:
    """The lowest port of `switch` whose neighbour is one hop closer to `target` (as routing.py)."""
    distance = topology.distances_to(target)
    closer = [n for n in topology.neighbours(switch)
              if distance.get(n.node, -1) == distance[switch] - 1]
    return closer[0].port


def install_jobs(fabric: Fabric, topology: Topology, placements: list[JobPlacement],
                 switch_macs: dict[str, str]) -> None:
    """Aggregator addresses, routes to them, job/worker/result entries and multicast groups."""
    announced: set[str] = set()
    for placement in placements:
        agg = placement.address
        owner = fabric[placement.switch]
        if agg in announced:
            _install_job(owner, topology, placement)
            continue
        announced.add(agg)
        owner.add_entry("ina_aggregator_addresses", {"hdr.ipv4.dstAddr": agg},
                        "ina_aggregate_here")
        _install_job(owner, topology, placement)
        for switch in topology.switches:
            if switch.name == placement.switch:
                continue
            if switch.name not in topology.distances_to(placement.switch):
                continue
            fabric[switch.name].add_entry(
                "ipv4_lpm", {"hdr.ipv4.dstAddr": f"{agg}/32"}, "ipv4_forward",
                {"dstAddr": switch_macs[placement.switch],
                 "port": next_hop_port(topology, switch.name, placement.switch)})


def _install_job(owner: SwitchClient, topology: Topology, placement: JobPlacement) -> None:
    agg = placement.address
    n = len(placement.workers)
    owner.add_entry("ina_jobs", {"hdr.ipv4.dstAddr": agg, "hdr.ina.job": placement.job},
                    "ina_root_job", {"base": placement.base, "pool_size": placement.pool_size,
                                     "n": n, "mgid": placement.job, "result_count": n})
    replicas = []
    for worker, host_name in enumerate(placement.workers):
        host = topology.host(host_name)
        port = next_hop_port(topology, placement.switch, host_name)
        owner.add_entry("ina_workers", {"hdr.ina.job": placement.job, "hdr.ina.worker": worker},
                        "ina_worker_port", {"port": port})
        owner.add_entry("ina_result_addresses",
                        {"hdr.ina.job": placement.job, "meta.ina.receiver": worker},
                        "ina_address_result", {"dstMac": host.mac, "dstAddr": host.ip})
        replicas.append((port, worker))
    owner.set_multicast_group(placement.job, replicas)
