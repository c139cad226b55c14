"""What a scenario is: one network, the jobs that arrive on it, and the events of its timeline.

Plain frozen dataclasses, checked when built, so a scenario written in Python and one read from
a file (inaemu/scenario/parse.py) are the same objects and refused for the same reasons. The
file format is docs/scenarios.md; the engines that run it are inaemu/scenario/sim_engine.py and
inaemu/scenario/mininet_engine.py.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Union

from inaemu.sim.driver import ALGOS

TOPOLOGY_KINDS = ("star", "leaf-spine", "fat-tree")
FLOW_KINDS = ("tcp", "udp", "incast")


class ScenarioError(ValueError):
    """A scenario that cannot run; `where` names the part (and the file line, when read from
    a file) and the message says why."""

    def __init__(self, where: str, problem: str, line: int | None = None):
        self.where, self.problem, self.line = where, problem, line
        at = f"line {line}: " if line is not None else ""
        super().__init__(f"{at}{where}: {problem}")


def _positive(where: str, value, *, zero: bool = False, integer: bool = False) -> None:
    kinds = (int,) if integer else (int, float)
    if isinstance(value, bool) or not isinstance(value, kinds) or not math.isfinite(value) \
            or value < 0 or (value == 0 and not zero):
        what = "an integer" if integer else "a number"
        raise ScenarioError(where, f"must be {what} {'>=' if zero else '>'} 0, got {value!r}")


@dataclass(frozen=True)
class Network:
    """The topology and its link settings, up for the whole scenario.

    `kind` star (`hosts`), leaf-spine (`leaves`, `spines`, `hosts_per_leaf`) or fat-tree (`k`);
    `bw_mbps`, `delay_ms`, `loss_percent` for every link (None: unshaped / none)."""

    kind: str = "star"
    hosts: int = 4
    leaves: int = 2
    spines: int = 2
    hosts_per_leaf: int = 2
    k: int = 4
    bw_mbps: float | None = None
    delay_ms: float = 0.0
    loss_percent: float = 0.0

    def __post_init__(self) -> None:
        if self.kind not in TOPOLOGY_KINDS:
            raise ScenarioError("network.topology",
                                f"expected one of {', '.join(TOPOLOGY_KINDS)}, got {self.kind!r}")
        for name in ("hosts", "leaves", "spines", "hosts_per_leaf", "k"):
            _positive(f"network.{name}", getattr(self, name), integer=True)
        if self.kind == "fat-tree" and self.k % 2:
            raise ScenarioError("network.k", f"a fat-tree needs an even k, got {self.k}")
        if self.bw_mbps is not None:
            _positive("network.bw_mbps", self.bw_mbps)
        _positive("network.delay_ms", self.delay_ms, zero=True)
        _check_loss("network.loss_percent", self.loss_percent)

    def topology(self):
        """The `topologies.model.Topology` this network describes."""
        from topologies.builders import fat_tree, leaf_spine, star
        shaping = {"bw": self.bw_mbps, "loss": self.loss_percent, "delay_ms": self.delay_ms}
        if self.kind == "star":
            return star(self.hosts, **shaping)
        if self.kind == "leaf-spine":
            return leaf_spine(self.leaves, self.spines, self.hosts_per_leaf, **shaping)
        return fat_tree(self.k, **shaping)


def _check_loss(where: str, value) -> None:
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not 0 <= value <= 100:
        raise ScenarioError(where, f"must be a percentage 0..100, got {value!r}")


@dataclass(frozen=True)
class Workload:
    """What each worker of a job does: `iterations` times, compute for `compute_s` (the forward
    and backward pass) then all-reduce `size_bytes` of float32."""

    size_bytes: int
    iterations: int = 1
    compute_s: float = 0.0

    def __post_init__(self) -> None:
        _positive("workload.size_bytes", self.size_bytes, integer=True)
        if self.size_bytes < 4 or self.size_bytes % 4:
            raise ScenarioError("workload.size_bytes",
                                f"must be a multiple of 4 (float32 values), got {self.size_bytes}")
        _positive("workload.iterations", self.iterations, integer=True)
        _positive("workload.compute_s", self.compute_s, zero=True)


@dataclass(frozen=True)
class Job:
    """A job: its `name`, `algo` (ina, ring or a baseline of docs/algorithms.md), its worker
    hosts in rank order, its workload, and when it arrives: at `start_s`, or when the job named
    `after` has ended. INA jobs aggregate along a tree rooted where the controller chooses
    (`root`: a given switch) on multi-tier networks, in their one switch on a star."""

    name: str
    algo: str
    workers: tuple[str, ...]
    workload: "Workload | object"   # or an inaemu.workload.graph.Workload (docs/workloads.md)
    start_s: float = 0.0
    after: str | None = None
    root: str | None = None

    def __post_init__(self) -> None:
        where = f"jobs[{self.name}]"
        if not isinstance(self.name, str) or not self.name:
            raise ScenarioError("jobs", f"a job needs a name, got {self.name!r}")
        if self.algo not in ALGOS:
            raise ScenarioError(f"{where}.algo",
                                f"expected one of {', '.join(ALGOS)}, got {self.algo!r}")
        if not isinstance(self.workers, tuple) or not all(isinstance(h, str)
                                                          for h in self.workers):
            raise ScenarioError(f"{where}.workers", f"expected a tuple of host names, got "
                                                    f"{self.workers!r}")
        if len(self.workers) < 2:
            raise ScenarioError(f"{where}.workers", "a job needs at least 2 workers")
        if len(set(self.workers)) != len(self.workers):
            raise ScenarioError(f"{where}.workers", "a host is named twice")
        _positive(f"{where}.start_s", self.start_s, zero=True)
        n = getattr(self.workload, "n", None)     # a workload graph (inaemu/workload/graph.py)
        if n is not None and n != len(self.workers):
            raise ScenarioError(f"{where}.workers", f"the workload {self.workload.name!r} has "
                                                    f"{n} ranks, the job {len(self.workers)} "
                                                    f"workers")


@dataclass(frozen=True)
class LinkDown:
    """The link between nodes `a` and `b` fails (both directions lose everything)."""
    at_s: float
    a: str
    b: str


@dataclass(frozen=True)
class LinkUp:
    at_s: float
    a: str
    b: str


@dataclass(frozen=True)
class LinkChange:
    """New loss (percent), delay (ms) or bandwidth (Mbit/s) for both directions of a link;
    None leaves that setting as it is."""
    at_s: float
    a: str
    b: str
    loss_percent: float | None = None
    delay_ms: float | None = None
    bw_mbps: float | None = None


@dataclass(frozen=True)
class SwitchCrash:
    """The switch's process dies: it forwards nothing and its tables, groups and registers
    are lost."""
    at_s: float
    switch: str


@dataclass(frozen=True)
class SwitchRestart:
    """The crashed switch comes back empty; the controller gives it its pipeline and state."""
    at_s: float
    switch: str


@dataclass(frozen=True)
class SlowWorker:
    """From now on the host computes `compute_factor` times slower and its NIC runs at
    1/`nic_factor` of its rate (1 each: back to normal)."""
    at_s: float
    host: str
    compute_factor: float = 1.0
    nic_factor: float = 1.0


@dataclass(frozen=True)
class FlowStart:
    """Background traffic named `name`: `tcp` bulk from `sources[0]` to `destination`
    (`size_bytes`, None: until stopped), `udp` at `rate_mbps`, or an `incast` of TCP bulk from
    every source to the destination at once."""
    at_s: float
    name: str
    kind: str
    sources: tuple[str, ...]
    destination: str
    rate_mbps: float | None = None
    size_bytes: int | None = None


@dataclass(frozen=True)
class FlowStop:
    at_s: float
    name: str


Event = Union[LinkDown, LinkUp, LinkChange, SwitchCrash, SwitchRestart, SlowWorker, FlowStart,
              FlowStop]
EVENT_KINDS = {"link_down": LinkDown, "link_up": LinkUp, "link_change": LinkChange,
               "switch_crash": SwitchCrash, "switch_restart": SwitchRestart,
               "slow_worker": SlowWorker, "flow_start": FlowStart, "flow_stop": FlowStop}
KIND_OF_EVENT = {cls: kind for kind, cls in EVENT_KINDS.items()}


def event_kind(event: Event) -> str:
    return KIND_OF_EVENT[type(event)]


def describe(event: Event) -> str:
    """One line naming the event, for tables and plots."""
    kind = event_kind(event)
    if isinstance(event, (LinkDown, LinkUp)):
        return f"{kind} {event.a}-{event.b}"
    if isinstance(event, LinkChange):
        settings = [f"{n}={getattr(event, n)}" for n in ("loss_percent", "delay_ms", "bw_mbps")
                    if getattr(event, n) is not None]
        return f"{kind} {event.a}-{event.b} {' '.join(settings)}"
    if isinstance(event, (SwitchCrash, SwitchRestart)):
        return f"{kind} {event.switch}"
    if isinstance(event, SlowWorker):
        return f"{kind} {event.host} compute x{event.compute_factor:g} nic /{event.nic_factor:g}"
    if isinstance(event, FlowStart):
        return f"{kind} {event.name} ({event.kind} {','.join(event.sources)} -> " \
               f"{event.destination})"
    return f"{kind} {event.name}"


@dataclass(frozen=True)
class Options:
    """How the scenario runs. `detection_s`: how long the controller takes to learn that a link
    or switch went away (docs/protocol.md §8); `time_limit_s`: virtual (sim) or wall (Mininet)
    seconds after which the scenario stops and says what was still running."""

    seed: int = 0
    elems_k: int = 32
    pool_size: int = 64
    detection_s: float = 0.001
    time_limit_s: float = 60.0
    switch_pps: float | None = None    # sim: packets per second of each switch (None: default)
    repair_wait_s: float = 10.0        # how long a job cut off by a failure waits for a repair
    # how INA jobs share a switch's cells: "static" slices of pool_size slots each, or
    # "hashed": one shared pool of shared_pairs pairs per switch that every job's chunks hash
    # into, collisions going to the job's host aggregator (docs/protocol.md §3.3)
    sharing: str = "static"
    shared_pairs: int | None = None    # hashed: the pool's pairs (None: pool_size)
    host_pps: float | None = None      # sim, hashed: packets per second of a host aggregator
                                       # (None: switch_pps, else inaemu's switch cost)
    # "tree" (every tier aggregates, on multi-tier networks) or "single": one switch per job
    # (the job's root, else its first worker's switch); hashed trees: every tree switch
    # hashes into its own pool, each with a host aggregator near it (docs/fallback.md)
    aggregation: str = "tree"
    # the simulator's core (inaemu/sim/cores.py): "python", "native" (C parts, the same
    # events) or "auto" (native where it builds, else python)
    sim_core: str = "python"

    def __post_init__(self) -> None:
        _positive("options.seed", self.seed, zero=True, integer=True)
        _positive("options.elems_k", self.elems_k, integer=True)
        _positive("options.pool_size", self.pool_size, integer=True)
        _positive("options.detection_s", self.detection_s, zero=True)
        _positive("options.time_limit_s", self.time_limit_s)
        _positive("options.repair_wait_s", self.repair_wait_s, zero=True)
        if self.switch_pps is not None:
            _positive("options.switch_pps", self.switch_pps)
        if self.sharing not in ("static", "hashed"):
            raise ScenarioError("options.sharing", f"must be static or hashed, got "
                                                   f"{self.sharing!r}")
        if self.shared_pairs is not None:
            _positive("options.shared_pairs", self.shared_pairs, integer=True)
        if self.host_pps is not None:
            _positive("options.host_pps", self.host_pps)
        if self.aggregation not in ("tree", "single"):
            raise ScenarioError("options.aggregation", f"must be tree or single, got "
                                                       f"{self.aggregation!r}")
        if self.sim_core not in ("python", "native", "auto"):
            raise ScenarioError("options.sim_core", f"must be python, native or auto, got "
                                                    f"{self.sim_core!r}")


@dataclass(frozen=True)
class Scenario:
    """A network, its jobs and its timeline. Checked as a whole when built: names refer to
    hosts, switches, links, jobs and flows that exist, and no host runs two jobs at once."""

    network: Network
    jobs: tuple[Job, ...]
    events: tuple[Event, ...] = ()
    options: Options = field(default_factory=Options)
    name: str = "scenario"

    def __post_init__(self) -> None:
        check_scenario(self)


def check_scenario(scenario: Scenario) -> None:
    """Cross-references: every name used exists. ScenarioError says which and where."""
    if not scenario.jobs:
        raise ScenarioError("jobs", "a scenario needs at least one job")
    topology = scenario.network.topology()
    hosts = {h.name for h in topology.hosts}
    switches = {s.name for s in topology.switches}
    links = {frozenset((link.a.node, link.b.node)) for link in topology.links}
    names = [job.name for job in scenario.jobs]
    for job in scenario.jobs:
        where = f"jobs[{job.name}]"
        if names.count(job.name) > 1:
            raise ScenarioError(where, "two jobs have this name")
        for host in job.workers:
            if host not in hosts:
                raise ScenarioError(f"{where}.workers",
                                    f"no host {host!r} in the {scenario.network.kind} "
                                    f"(hosts {_span(topology.hosts)})")
        if job.after is not None and job.after not in names:
            raise ScenarioError(f"{where}.after", f"no job named {job.after!r}")
        if job.after == job.name:
            raise ScenarioError(f"{where}.after", "a job cannot wait for itself")
        if job.root is not None and job.root not in switches:
            raise ScenarioError(f"{where}.root", f"no switch {job.root!r}")
    _check_after_cycles(scenario.jobs)
    flows: dict[str, float] = {}      # name -> when it starts
    for index, event in sorted(enumerate(scenario.events), key=lambda pair: pair[1].at_s):
        where = f"events[{index}] ({event_kind(event)})"
        _positive(f"{where}.at", event.at_s, zero=True)
        if isinstance(event, (LinkDown, LinkUp, LinkChange)):
            if frozenset((event.a, event.b)) not in links:
                raise ScenarioError(where, f"no link between {event.a!r} and {event.b!r}")
            if isinstance(event, LinkChange):
                if event.loss_percent is not None:
                    _check_loss(f"{where}.loss_percent", event.loss_percent)
                if event.delay_ms is not None:
                    _positive(f"{where}.delay_ms", event.delay_ms, zero=True)
                if event.bw_mbps is not None:
                    _positive(f"{where}.bw_mbps", event.bw_mbps)
                if (event.loss_percent, event.delay_ms, event.bw_mbps) == (None, None, None):
                    raise ScenarioError(where, "changes nothing (give loss_percent, delay_ms "
                                               "or bw_mbps)")
        elif isinstance(event, (SwitchCrash, SwitchRestart)):
            if event.switch not in switches:
                raise ScenarioError(where, f"no switch {event.switch!r}")
        elif isinstance(event, SlowWorker):
            if event.host not in hosts:
                raise ScenarioError(where, f"no host {event.host!r}")
            _positive(f"{where}.compute_factor", event.compute_factor)
            _positive(f"{where}.nic_factor", event.nic_factor)
        elif isinstance(event, FlowStart):
            if event.kind not in FLOW_KINDS:
                raise ScenarioError(f"{where}.kind",
                                    f"expected one of {', '.join(FLOW_KINDS)}, got {event.kind!r}")
            if event.name in flows:
                raise ScenarioError(where, f"a flow named {event.name!r} was started before")
            flows[event.name] = event.at_s
            ends = (*event.sources, event.destination)
            for host in ends:
                if host not in hosts:
                    raise ScenarioError(where, f"no host {host!r}")
            if event.destination in event.sources:
                raise ScenarioError(where, "a flow's destination is one of its sources")
            if not event.sources or (event.kind != "incast" and len(event.sources) != 1):
                raise ScenarioError(where, f"a {event.kind} flow has exactly one source"
                                    if event.kind != "incast" else "an incast needs sources")
            if event.kind == "udp":
                if event.rate_mbps is None:
                    raise ScenarioError(where, "a udp flow needs rate_mbps")
                _positive(f"{where}.rate_mbps", event.rate_mbps)
            if event.size_bytes is not None:
                _positive(f"{where}.size_bytes", event.size_bytes, integer=True)
        elif isinstance(event, FlowStop):
            if event.name not in flows:
                raise ScenarioError(where, f"no flow named {event.name!r} starts before "
                                           f"{event.at_s:g} s")


def _check_after_cycles(jobs: tuple[Job, ...]) -> None:
    after = {job.name: job.after for job in jobs}
    for job in jobs:
        seen, name = set(), job.name
        while name is not None:
            if name in seen:
                raise ScenarioError(f"jobs[{job.name}].after", "jobs wait for each other in a "
                                                                "circle")
            seen.add(name)
            name = after[name]


def _span(hosts) -> str:
    names = [h.name for h in hosts]
    return f"{names[0]}..{names[-1]}" if len(names) > 2 else ", ".join(names)
