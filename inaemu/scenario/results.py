"""What a scenario run produced, as plain data: per job, per iteration, per event, and the
samples behind the timeline plot. One definition, read by the report writer
(inaemu/scenario/report.py), the plot (inaemu/scenario/plot.py), the CLI and user scripts.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, field


@dataclass
class IterationRecord:
    """One iteration of one job: compute, then its all-reduce. Times are seconds from the
    start of the scenario (virtual in the simulator, wall on Mininet); `allreduce_s` runs from
    the end of the slowest worker's compute until the last worker has the sum."""

    job: str
    iteration: int
    algo: str
    started_s: float
    compute_done_s: float
    ended_s: float | None
    allreduce_s: float | None
    correct: bool
    retransmissions: int
    restarts: int = 0          # times this iteration's all-reduce was restarted after a re-plan
    error: str | None = None

    def as_dict(self) -> dict:
        return asdict(self)


@dataclass
class JobRecord:
    """One job over the whole scenario."""

    name: str
    algo: str
    workers: tuple[str, ...]
    arrived_s: float | None        # None: never started (the scenario ended first)
    ended_s: float | None
    iterations_done: int
    iterations: int
    correct: bool                  # every iteration's sum was right at every worker
    error: str | None
    retransmissions: int
    placements: list[dict] = field(default_factory=list)   # how INA placed it, one per (re)plan
    final_algo: str | None = None  # what it ran at the end (a job moved to the ring says so)
    workload: dict | None = None   # a workload graph's job: time, compute, exposed comm
    # hashed sharing (docs/protocol.md §3.3), over all its placements: the chunks its root
    # switch completed in its shared pool, and those its host aggregator (a tree's: the
    # root's) completed, the chunks whose cell was taken; None without hashed sharing, and
    # switch_chunks None when a root switch crashed (its counters went with it)
    switch_chunks: int | None = None
    host_chunks: int | None = None

    @property
    def jct_s(self) -> float | None:
        """Job completion time: from its arrival to its end."""
        if self.arrived_s is None or self.ended_s is None:
            return None
        return self.ended_s - self.arrived_s

    @property
    def host_share(self) -> float | None:
        """Hashed sharing: the share of its chunks its host aggregator completed."""
        if self.switch_chunks is None or self.host_chunks is None or \
                self.switch_chunks + self.host_chunks == 0:
            return None
        return self.host_chunks / (self.switch_chunks + self.host_chunks)

    def as_dict(self) -> dict:
        out = asdict(self)
        out["workers"] = list(self.workers)
        out["jct_s"], out["host_share"] = self.jct_s, self.host_share
        return out


@dataclass
class EventRecord:
    """One event of the timeline: when it happened, when the controller learnt it (failures),
    what the controller did, and per job it affected how long until that job made progress
    again (`recovery_s`, seconds from the event; None: it never did)."""

    index: int
    at_s: float
    kind: str
    description: str
    detected_s: float | None = None
    actions: list[str] = field(default_factory=list)
    recovery_s: dict[str, float | None] = field(default_factory=dict)

    def as_dict(self) -> dict:
        return asdict(self)


@dataclass
class FlowRecord:
    """A background flow: its bytes delivered and mean goodput while it ran."""

    name: str
    kind: str
    sources: tuple[str, ...]
    destination: str
    started_s: float
    stopped_s: float | None
    bytes_delivered: int
    goodput_mbps: float

    def as_dict(self) -> dict:
        out = asdict(self)
        out["sources"] = list(self.sources)
        return out


MAX_POINTS = 2000          # per series; a longer timeline keeps every other point, and so on


@dataclass
class Samples:
    """The timeline at regular times: each job's progress (iterations done, fractional: 2.5
    is halfway through the third all-reduce) and each busy link direction's utilisation
    (fraction of its bandwidth, over the interval ending at the sample).

    A long scenario (hundreds of jobs, hours of samples) would hold jobs × samples values, so
    the engines offer every sample (`keep_progress`, `keep_links`) and store one in `stride`;
    past MAX_POINTS, `thin` keeps every other progress point, merges link intervals pairwise,
    and doubles the stride."""

    times_s: list[float] = field(default_factory=list)
    progress: dict[str, list[float]] = field(default_factory=dict)
    link_times_s: list[float] = field(default_factory=list)
    link_utilisation: dict[str, list[float]] = field(default_factory=dict)
    progress_stride: int = 1            # engine samples per stored point
    link_stride: int = 1
    _progress_offered: int = field(default=0, repr=False)
    _links_offered: int = field(default=0, repr=False)

    def keep_progress(self) -> bool:
        """Whether to store this progress sample (one in `progress_stride`)."""
        self._progress_offered += 1
        return (self._progress_offered - 1) % self.progress_stride == 0

    def keep_links(self) -> bool:
        """Whether to take this link sample (one in `link_stride`; the utilisation then
        covers the whole interval since the last one taken)."""
        self._links_offered += 1
        return (self._links_offered - 1) % self.link_stride == 0

    def thin(self) -> None:
        """Keep every series under MAX_POINTS (see the class docstring)."""
        if len(self.times_s) > MAX_POINTS:
            self.times_s = self.times_s[::2]
            self.progress = {name: values[::2] for name, values in self.progress.items()}
            self.progress_stride *= 2
        if len(self.link_times_s) > MAX_POINTS:
            # each kept time ends an interval twice as long: the mean of the two it joins
            self.link_times_s = self.link_times_s[1::2]
            self.link_utilisation = {
                name: [(a + b) / 2 for a, b in zip(values[0::2], values[1::2])]
                for name, values in self.link_utilisation.items()}
            self.link_stride *= 2


@dataclass
class ScenarioResult:
    name: str
    net: str                       # "sim" or "mininet"
    seed: int
    jobs: list[JobRecord]
    iterations: list[IterationRecord]
    events: list[EventRecord]
    flows: list[FlowRecord]
    samples: Samples
    duration_s: float              # virtual (sim) or wall (Mininet) seconds of the timeline
    wall_s: float
    stop: str = "done"             # or "time limit"

    @property
    def correct(self) -> bool:
        return bool(self.jobs) and all(job.correct and job.error is None for job in self.jobs)

    def job(self, name: str) -> JobRecord:
        for job in self.jobs:
            if job.name == name:
                return job
        raise KeyError(f"no job named {name!r}")

    def iterations_of(self, name: str) -> list[IterationRecord]:
        return [it for it in self.iterations if it.job == name]

    def summary(self) -> dict:
        """Everything but the samples, JSON-ready (summary.json)."""
        return {"name": self.name, "net": self.net, "seed": self.seed,
                "correct": self.correct, "stop": self.stop, "duration_s": self.duration_s,
                "wall_s": self.wall_s,
                "jobs": [job.as_dict() for job in self.jobs],
                "iterations": [it.as_dict() for it in self.iterations],
                "events": [event.as_dict() for event in self.events],
                "flows": [flow.as_dict() for flow in self.flows]}
