"""Set-up of a simulated fabric, once per run: program, routes and INA jobs over P4Runtime.

Why apart from `simulate`: configuring the switches is the same for every algorithm of a run
(the program, the routes, the jobs), and at 64 workers it cost more than the simulations. A
`SimSetup` is made once (`prepare`) and each `simulate(..., setup=...)` then builds a fresh
network (clock, links, hosts) around the already configured runtime switches, after clearing
their registers and counters, so every run starts from a clean data plane and the same control
plane, as a job does on a real fabric that is already up.

Routes are the aggregated prefixes (`Fabric.install_routes(aggregate=True)`, controller/prefixes.py),
as a fabric operator writes them; the INA jobs are installed only when an INA run will use them.
Switches that aggregate no job run `p4src/l3_forward.p4` (the same forwarding code, ina.p4
includes it) unless `ina_everywhere`: loading ina.p4 into the runtime costs 0.3-3 s per switch at
k = 256 against 0.01 s for l3_forward, and a fat-tree(16) has 320 switches.
"""

from __future__ import annotations

import gc
import os
import time
from dataclasses import dataclass, field
from typing import Callable

from controller.errors import ControllerError
from controller.fabric import Fabric
from controller.ina_jobs import InaProgram
from controller.trees import tree_shape
from p4switch.compiler.errors import CompileError
from p4switch.runtime import Switch
from topologies.model import Topology

from inaemu.sim import control


# How the controller reaches the simulated switches: "local", P4Runtime served in this process
# without gRPC's transport (p4switch/server/inprocess.py: the same handlers, bytes and statuses),
# or "grpc", a gRPC server per switch on 127.0.0.1 as on Mininet.
TRANSPORTS = ("local", "grpc")
TRANSPORT_VARIABLE = "INAEMU_SIM_P4RUNTIME"


class SetupError(Exception):
    """The fabric could not be configured; the message says which part and why."""


def transport_choice(given: str | None = None) -> str:
    """`given`, else $INAEMU_SIM_P4RUNTIME, else "local"; SetupError for anything else."""
    chosen = given if given is not None else os.environ.get(TRANSPORT_VARIABLE) or "local"
    if chosen not in TRANSPORTS:
        source = "" if given is not None else f" (${TRANSPORT_VARIABLE})"
        raise SetupError(f"set-up: P4Runtime transport{source} must be one of "
                         f"{', '.join(TRANSPORTS)}, not {chosen!r}")
    return chosen


@dataclass
class SimSetup:
    """Configured runtime switches (by name) of one topology, and what the jobs became."""

    topology: Topology
    jobs: tuple                                  # the SimJobs it was prepared for
    elems_k: int
    pool_size: int
    switches: dict[str, Switch]
    placements: list[control.JobPlacement] | None   # INA jobs (None: not installed)
    trees: dict = field(default_factory=dict)       # tree job id -> TreePlan.summary()
    routes: int = 0
    wall_s: float = 0.0                          # what the set-up took
    phases: dict[str, float] = field(default_factory=dict)   # compile, connect, push, ...
    aggregating: frozenset = frozenset()         # switches running ina.p4
    clean: bool = True                           # no run since the last reset

    def reset_data_plane(self) -> None:
        """Zero every register and counter of every switch (tables and groups stay), unless
        nothing ran since the last reset."""
        if self.clean:
            self.clean = False
            return
        for switch in self.switches.values():
            with switch.lock:
                for name in switch.registers():
                    switch.register_reset(name)
                for name in switch.counters():
                    switch.counter_reset(name)
                switch.discard_queued()


def aggregating_switches(topology: Topology, jobs, max_members: int) -> set[str]:
    """The switches that aggregate one of the jobs: its tree's (as `TreeJobs` shapes it for
    the program's member limit), or its one switch."""
    used: set[str] = set()
    for job in jobs:
        if job.hierarchical:
            used.update(tree_shape(topology, job.job, tuple(job.workers), job.switch,
                                   max_members=max_members).order)
        else:
            used.add(job.switch or topology.host_link(job.workers[0]).node)
    return used


def prepare(network, jobs, *, elems_k: int, pool_size: int, ina: bool,
            ina_everywhere: bool = False, fallback_slots: int | None = None,
            say: Callable[[str], None] = lambda _line: None,
            transport: str | None = None, sharing: str = "static",
            shared_pairs: int | None = None) -> SimSetup:
    """Configure the switches of `network` (a SimNetwork) for `jobs` over P4Runtime: ina.p4 at
    k = `elems_k` where a job aggregates (everywhere with `ina_everywhere`), l3_forward.p4
    elsewhere, aggregated routes, and with `ina` the jobs (trees or single switches).
    `transport`: "local" or "grpc" (`transport_choice`)."""
    transport = transport_choice(transport)
    started = time.perf_counter()
    phases: dict[str, float] = {}
    mark = [started]

    def phase(name: str) -> None:
        now = time.perf_counter()
        phases[name] = now - mark[0]
        mark[0] = now

    trees: dict = {}
    placements = None
    collecting = gc.isenabled()
    # Loading a program makes many objects; the cyclic collector would walk every switch loaded
    # before at each collection (0.47 -> 0.34 s per ina.p4 switch at 40 switches without it).
    gc.disable()
    try:
        program = control.compile_program(str(control.INA_PROGRAM), (("INA_K", str(elems_k)),))
        router = control.compile_program(str(control.L3_PROGRAM))
        limit = InaProgram.from_p4info(program.p4info).max_workers
        aggregating = set(network.switches) if ina_everywhere else \
            aggregating_switches(network.topology, jobs, limit) if ina else set()
        phase("compile")
        if transport == "grpc":
            topology, channels = network.start_servers(), None
        else:
            topology, channels = network.topology, network.start_local()
        with Fabric(topology, timeout=10.0, channels=channels) as fabric:
            phase("connect")
            for name, client in fabric.clients.items():
                chosen = program if name in aggregating else router
                client.set_pipeline(chosen.p4info, chosen.config)
            phase("pipeline")
            routes = fabric.install_routes(control.L3_FORWARD, aggregate=True)
            phase("routes")
            if ina and jobs[0].hierarchical and fallback_slots is not None:
                raise SetupError("set-up: a host aggregator (fallback) serves flat jobs only "
                                 "(one aggregating switch), not trees")
            if ina and jobs[0].hierarchical:
                placements, plans = control.install_tree_jobs(
                    fabric, topology, [(j.job, tuple(j.workers), j.switch) for j in jobs],
                    k=elems_k, pool_size=pool_size, sharing=sharing, shared_pairs=shared_pairs)
                trees = {plan.job.job_id: plan.summary() for plan in plans}
            elif ina:
                placements = control.install_ina_jobs(
                    fabric, topology,
                    [(j.job, tuple(j.workers),
                      j.switch or topology.host_link(j.workers[0]).node) for j in jobs],
                    k=elems_k, pool_size=pool_size, fallback_slots=fallback_slots,
                    sharing=sharing, shared_pairs=shared_pairs)
            phase("jobs")
    except (ControllerError, CompileError) as error:
        raise SetupError(f"set-up: {error}") from None
    finally:
        network.stop_servers()
        if collecting:
            # What the set-up made lives as long as the switches. Left in the young generation,
            # all of it was walked by the first collection after the set-up (0.1-0.3 s at 80
            # switches); frozen, it is out of the collector's walks until `simulate`'s
            # gc.unfreeze() after its run hands it to the oldest generation.
            gc.freeze()
            gc.enable()
    wall = time.perf_counter() - started
    via = " (gRPC)" if transport == "grpc" else ""
    say(f"sim: {len(network.switches)} switches configured over P4Runtime{via} in {wall:.1f} s "
        f"({len(aggregating)} with ina.p4, {routes} routes, {len(placements or ())} INA jobs)")
    return SimSetup(network.topology, tuple(jobs), elems_k, pool_size,
                    {name: node.switch for name, node in network.switches.items()},
                    placements, trees, routes, wall, phases, frozenset(aggregating))
