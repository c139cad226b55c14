"""`simulate(...)`: one all-reduce experiment on the simulated network (`inaemu run --net sim`).

Set-up is the Mininet path's, in-process: a `SimNetwork` from the topology, the program compiled
from p4src/, pushed with the controller over P4Runtime to each switch's own server, host routes
and the jobs installed the same way. Then every worker of every job starts at virtual time 0 and
the event loop runs until each worker has its result or its error, or the virtual time limit
passes (then `SimTimeLimit` names the workers still running and their state).
Contract and record fields: docs/sim.md.
"""

from __future__ import annotations

import contextlib
import gc
import sys
import time
from pathlib import Path
from dataclasses import dataclass, field, fields
from typing import Callable

import numpy as np

from hosts.agent import gradient
from hosts.draw_ahead import DrawAhead
from hosts.errors import HostError
from hosts.ina_codec import FloatCodec
from hosts.ina_session import InaSession
from hosts.ina_wire import MAX_K, MIN_K
from hosts.max_passes import PassKey, passes_ahead
from hosts.quantize import error_bound_verdict
from hosts.ring_session import SLICE_VALUES, RingSession, ring_error_bound, segment_bounds
from hosts.collectives import PLAN_ALGOS

from inaemu.sim import control
from inaemu.sim.cores import CORES, CoreUnavailable
from inaemu.sim.frames import ip_bytes
from inaemu.sim.ina_worker import InaWorker
from inaemu.sim.network import SimNetwork
from inaemu.sim.reliable import TransportConfig
from inaemu.sim.ring_worker import RingWorker
from inaemu.sim.collective_worker import plan_worker
from inaemu.sim.setup import SetupError, SimSetup, prepare
from inaemu.sim.streamed_check import KeyedVerdict, StreamedCheck
from inaemu.sim.switch_node import SwitchCost
from topologies.model import Topology

ALGOS = ("ina", "ring", *PLAN_ALGOS)   # plan algorithms: inaemu/sim/collective_worker.py
PROGRESS_EVERY_S = 10.0    # wall seconds between a long simulation's progress lines
BAR_EVERY_S = 0.5          # wall seconds between redraws of its progress bar
STARTS_SAID_AFTER_S = 1.0  # wall seconds of workers' starts (their max passes) worth a line
RUN_GC_YOUNG = 100_000     # the collector's young-generation threshold while the loop runs


class SimError(Exception):
    """A simulation that cannot be set up or run; the message says which part and why."""


class SimUnfinished(SimError):
    """The run stopped with workers still running; `.result` holds what did finish."""

    def __init__(self, message: str, result: "SimResult"):
        super().__init__(message)
        self.result = result


class SimTimeLimit(SimUnfinished):
    """Virtual time ran out with workers still running."""


@dataclass(frozen=True)
class SimJob:
    """A job: its id (the controller's range, 0..INA_JOBS-1), its worker hosts (in job order),
    and for INA the switch that aggregates it (None: the first worker's switch) or, with
    `hierarchical`, the root of a tree of any depth from the workers' own switches up along
    shortest paths (controller.trees; `controller.trees.choose_root` picks a good root)."""

    job: int
    workers: tuple[str, ...]
    switch: str | None = None
    hierarchical: bool = False


@dataclass(frozen=True)
class InaOptions:
    """The INA session's knobs; the defaults are hosts.api.AllreduceConfig's."""

    pool_size: int = 64
    window: int | None = None      # None: pool_size
    rto: float = 0.02
    rto_max: float = 0.5
    max_retx: int = 12
    rto_min: float | None = None   # None: the session's default
    fast_retransmit: bool = True   # protocol §4.1 (False: timers only, as before)
    window_rule: str = "burst"     # or "every_loss" (hosts/congestion.py)
    query: bool = True             # early detection sends a QUERY (protocol §3.1), not values
    timeline: bool = False         # keep each session's (time, event, chunk) list in its record
    fmt: str = "int32"             # lane format and scaling (docs/formats.md)
    scaling: str = "job"
    divisor: int | None = None     # None: n, overflow-free
    fallback_slots: int | None = None   # slots in the switch; the rest on a host aggregator
    sharing: str = "static"        # or "hashed": one shared pool per switch (protocol §3.3)
    shared_pairs: int | None = None     # hashed: the shared pool's pairs of cells


@dataclass
class WorkerRecord:
    algo: str
    job: int
    worker: int
    host: str
    time_s: float | None          # virtual seconds from start to result (None: no result)
    bytes_sent: int               # Ethernet frame bytes the host put on its link
    bytes_received: int
    packets_sent: int
    packets_received: int
    retransmissions: int
    max_abs_err: float | None
    mean_abs_err: float | None
    err_bound: float | None       # the largest per-element bound
    correct: bool
    error: str | None
    state: str
    result: np.ndarray | None = field(default=None, repr=False)
    counters: dict | None = None  # INA: the session's counters (hosts.ina_session.Counters)
    timeline: list | None = field(default=None, repr=False)   # InaOptions(timeline=True)

    def as_dict(self) -> dict:
        """JSON-ready: everything but the result array and the timeline."""
        return {k: v for k, v in self.__dict__.items() if k not in ("result", "timeline")}


@dataclass
class SimResult:
    records: list[WorkerRecord]
    links: list[dict]
    switches: dict[str, dict]
    virtual_s: float
    wall_s: float
    events: int
    frames: int                   # frames that crossed a link (delivered)
    switch_packets: int           # frames the switches processed
    runtime_wall_s: float | None  # wall seconds inside the switch runtime (time_runtime=True)
    stop: str                     # "done" or "time limit"
    trees: dict = field(default_factory=dict)   # hierarchical job id -> TreePlan.summary()
    setup_s: float = 0.0          # wall seconds configuring the switches in this call

    @property
    def frames_per_wall_s(self) -> float:
        return self.frames / self.wall_s if self.wall_s > 0 else 0.0

    @property
    def correct(self) -> bool:
        return bool(self.records) and all(r.correct for r in self.records)


def simulate(topology: Topology, jobs: list[SimJob], *, algo: str, size_bytes: int,
             elems_k: int = 32, seed: int = 0, loss: float | None = None,
             bw: float | None = None, switch_cost: SwitchCost = SwitchCost(),
             time_limit: float = 60.0, ina: InaOptions = InaOptions(),
             transport: TransportConfig = TransportConfig(), stall_timeout: float = 10.0,
             ring_accumulate: str = "float32", switch_queue_packets: int = 1024,
             deaths: dict[str, float] | None = None, trace: list[str] | None = None,
             capture_dir: str | Path | None = None,
             progress: Callable[[str], None] | None = None,
             setup: SimSetup | None = None,
             inputs: dict[int, list[np.ndarray]] | None = None,
             keep_results: bool = True, progress_bar: bool | None = None,
             core: str = "python", time_runtime: bool = False) -> SimResult:
    """Run one all-reduce of `size_bytes` of float32 per worker, for every job at once.

    `loss` (percent) and `bw` (Mbit/s) override every link's; `deaths` kills hosts at given
    virtual times (the host stops responding). `capture_dir` turns on packet capture: every
    switch writes its per-packet log and per-port pcaps there, stamped with virtual time, in the
    layout `inaemu trace` reads (docs/trace.md); without it no per-packet logging work is done.
    `setup` (from `prepare_setup`) reuses switches already configured for these jobs: the run
    then only builds its links and hosts and clears the switches' registers and counters.
    `inputs` (job id -> one float32 vector of size_bytes // 4 per worker, in job order)
    replaces the seeded gradients (inaemu train all-reduces real gradient buckets).
    `keep_results=False`: the records carry no result arrays, and an INA run with seeded
    gradients and job scaling at divisor n, or a ring run with seeded gradients, streams
    (`streams`): each worker draws its gradient and its sum is checked a block at a time, so
    the run's memory follows what is in flight, not the vector (docs/sim.md); the records'
    errors and verdicts are the same.
    `core`: "python", "native" or "auto" (native where it builds, else python;
    inaemu/sim/cores.py; the same trace and records).
    `progress_bar`: a tqdm bar on stderr while the loop runs (frames moved, frames/s, virtual
    time reached, workers running); None: when `progress` is given and stderr is a terminal
    (the 10-second progress lines then give way to it).
    `time_runtime`: measure the wall time spent inside the switch runtime
    (`SimResult.runtime_wall_s`, else None): two clock reads a switch packet, ~1-2 % of a run,
    so a profiling aid asked for, not a default.
    Raises SimError for a bad set-up and SimTimeLimit when workers are still running at
    `time_limit`.
    """
    if progress_bar is None:
        progress_bar = progress is not None and sys.stderr.isatty()
    say = progress or (lambda _line: None)
    _check_arguments(topology, algo, size_bytes, elems_k, jobs, time_limit)
    _check_link_overrides(loss, bw)
    for host, at in (deaths or {}).items():
        if host not in net_hosts(topology):
            raise SimError(f"deaths: no host named {host!r}")
        if isinstance(at, bool) or not isinstance(at, (int, float)) or at < 0:
            raise SimError(f"deaths: {host} must die at a time >= 0 s, got {at!r}")
    if setup is not None:
        _check_setup(setup, topology, jobs, algo, elems_k)
        setup.reset_data_plane()
    if core not in CORES:
        raise SimError(f"core must be one of {', '.join(CORES)}, got {core!r}")
    try:
        net = SimNetwork(topology, seed=seed, switch_cost=switch_cost, bw_mbps=bw,
                         loss_percent=loss, switch_queue_packets=switch_queue_packets,
                         trace=trace, capture_dir=capture_dir,
                         switches=setup.switches if setup is not None else None, core=core)
    except CoreUnavailable as error:
        raise SimError(str(error)) from None
    for node in net.switches.values():
        node.time_runtime = time_runtime
    try:
        return _run(net, jobs, setup, algo=algo, length=size_bytes // 4, size_bytes=size_bytes,
                    elems_k=elems_k, seed=seed, time_limit=time_limit, ina=ina,
                    transport=transport, stall_timeout=stall_timeout,
                    ring_accumulate=ring_accumulate, deaths=deaths, say=say, given=inputs,
                    keep_results=keep_results, bar=progress_bar, time_runtime=time_runtime)
    finally:
        net.close_capture()


def prepare_setup(topology: Topology, jobs: list[SimJob], *, elems_k: int = 32,
                  pool_size: int = 64, ina: bool = True, ina_everywhere: bool = False,
                  progress: Callable[[str], None] | None = None,
                  fallback_slots: int | None = None, transport: str | None = None,
                  sharing: str = "static", shared_pairs: int | None = None,
                  core: str = "python") -> SimSetup:
    """Configure a topology's switches once for several `simulate(..., setup=)` calls (every
    algorithm of a run); `ina` installs the INA jobs too, `ina_everywhere` loads ina.p4 also
    where no job aggregates (inaemu/sim/setup.py). `transport`: how the controller reaches the
    switches, "local" (in-process P4Runtime, the default) or "grpc" (a server per switch);
    None reads $INAEMU_SIM_P4RUNTIME. `core`: the core whose switch nodes make the runtime
    switches (the native one's are guarded by a lock its ports take in C; any core runs on
    either). SimError if it cannot be done."""
    _check_arguments(topology, "ina" if ina else "ring", 4, elems_k, jobs, 1.0)
    # (the switches are all it configures)
    net = SimNetwork(topology, seed=0, wires=False, core=core)
    try:
        return prepare(net, jobs, elems_k=elems_k, pool_size=pool_size, ina=ina,
                       ina_everywhere=ina_everywhere, fallback_slots=fallback_slots,
                       say=progress or (lambda _line: None), transport=transport,
                       sharing=sharing, shared_pairs=shared_pairs)
    except SetupError as error:
        raise SimError(str(error)) from None


def _check_setup(setup: SimSetup, topology: Topology, jobs: list[SimJob], algo: str,
                 elems_k: int) -> None:
    if setup.topology != topology:
        raise SimError("setup: prepared for another topology")
    if tuple(jobs) != setup.jobs:
        raise SimError("setup: prepared for other jobs")
    if algo == "ina" and (setup.placements is None or setup.elems_k != elems_k):
        raise SimError("setup: no INA jobs installed for this k (prepare_setup(ina=True, "
                       f"elems_k={elems_k}))")


def _run(net: SimNetwork, jobs: list[SimJob], setup: SimSetup | None, *, algo: str, length: int,
         size_bytes: int, elems_k: int, seed: int, time_limit: float, ina: InaOptions,
         transport: TransportConfig, stall_timeout: float, ring_accumulate: str,
         deaths: dict[str, float] | None, say: Callable[[str], None],
         given: dict[int, list[np.ndarray]] | None = None,
         keep_results: bool = True, bar: bool = False,
         time_runtime: bool = False) -> SimResult:
    setup_s = 0.0
    if setup is None:
        try:
            setup = prepare(net, jobs, elems_k=elems_k, pool_size=ina.pool_size,
                            ina=algo == "ina", fallback_slots=ina.fallback_slots, say=say,
                            sharing=ina.sharing, shared_pairs=ina.shared_pairs)
        except SetupError as error:
            raise SimError(str(error)) from None
        setup_s = setup.wall_s
    if algo == "ina":
        placements, trees = setup.placements, setup.trees
    else:
        placements = [control.JobPlacement(j.job, tuple(j.workers), ina.pool_size)
                      for j in jobs]
        trees = {}
    remaining = [0]
    references: dict = {}
    verdicts: dict = {}       # id(app) -> judge_worker(...) at the worker's end (frees INA's bounds)
    jobs_of: dict = {}
    ranks_of: dict = {}       # id(app) -> its rank in its job
    checks: dict = {}         # streamed: job -> StreamedCheck
    stream = not keep_results and given is None and streams(algo, ina)

    def ended(app) -> None:
        remaining[0] -= 1
        if stream and id(app) in jobs_of:
            # by rank in the job (the session's worker id is its member id at its switch: in a
            # tree, several workers of a job share one)
            check, rank = checks[jobs_of[id(app)]], ranks_of[id(app)]
            check.end(rank)
            verdicts[id(app)] = check.verdict(rank, app.outcome.error is None)
        elif app.outcome.result is not None and id(app) in jobs_of:
            verdicts[id(app)] = judge_worker(algo, app, references[jobs_of[id(app)]])
        if not keep_results:
            app.outcome.result = None     # judged: the array is not kept
        if not remaining[0]:
            net.loop.stop()

    # streamed runs: the workers' inputs are drawn on other cores ahead of their reads
    ahead = DrawAhead()
    members, inputs = _create_workers(net, placements, algo, length, seed, elems_k, ina,
                                      transport, stall_timeout, ring_accumulate, ended,
                                      given=given, trees=trees,
                                      checks=checks if stream else None, ahead=ahead)
    remaining[0] = len(members)
    references.update(reference_sums(inputs))
    del inputs                # (the workers hold their own vectors while they need them)
    jobs_of.update({id(member.app): member.job for member in members})
    ranks_of.update({id(member.app): member.rank for member in members})
    by_host = {member.host: member for member in members}
    for host, at in (deaths or {}).items():
        net.loop.at(at, _kill, net, host, by_host.get(host))
    say(f"sim: {len(members)} workers, {algo}, {size_bytes} bytes each, "
        f"{len(net.links)} link directions")
    started = time.perf_counter()
    # what exists now (the switches' programs and state, the inputs) is left out of the cyclic
    # collector's walks during the run, which allocates per frame; unfrozen after it
    gc.freeze()
    # and the young generation collected every RUN_GC_YOUNG allocations, not 700: a frame's
    # objects live while it is in flight, which at 16,000 workers outlasts many collections,
    # so they were promoted and walked again by full ones (11 % of fat-tree(40)'s run; docs/sim.md)
    thresholds = gc.get_threshold()
    gc.set_threshold(RUN_GC_YOUNG, *thresholds[1:])
    watch = _Progress(net, say, remaining, started, bar=bar)
    try:
        with ahead:
            if algo == "ina":
                block = FloatCodec.block_values(elems_k, ina.fmt)
                for check in checks.values():
                    check.max_passes_ahead(block)
            elif algo == "ring" and stream:
                for check in checks.values():
                    check.marks_ahead()
                    check.first_reads_ahead()
            began = time.perf_counter()
            for member in members:
                member.app.start()
            watch.workers_started(len(members), began)
            stop = (net.loop.run(until=time_limit, done=watch, done_every=_Progress.EVERY)
                    if remaining[0] else "done")
    finally:
        watch.close()
        gc.set_threshold(*thresholds)
        gc.unfreeze()
    wall = time.perf_counter() - started
    result = _collect(net, members, references, verdicts, algo, wall, stop, checks,
                      time_runtime)
    result.trees = trees
    result.setup_s = setup_s
    say(f"sim: {stop} at {net.loop.now:.6f} s virtual, {result.events} events, "
        f"{result.frames} frames in {wall:.2f} s wall ({result.frames_per_wall_s:,.0f} frames/s)")
    if remaining[0]:
        running = [f"{r.host} (job {r.job} worker {r.worker}, state {r.state})"
                   for r in result.records if r.time_s is None and r.error is None]
        unfinished = f"{len(running)} workers unfinished: {', '.join(running)}"
        if stop == "time limit":
            raise SimTimeLimit(f"virtual time limit {time_limit:g} s reached with {unfinished}",
                               result)
        raise SimUnfinished(f"nothing left to happen at {net.loop.now:.6f} s virtual with "
                            f"{unfinished} (a worker waits without a timer)", result)
    return result


class _Progress:
    """The loop's `done` hook that never ends the run, asked every EVERY events: it looks at
    the clock and, every PROGRESS_EVERY_S of wall time, says the virtual time reached, the
    workers still running and the frames per second since the last line (a 1,024-worker run
    took minutes without a word). With `bar`, a tqdm bar instead, redrawn every BAR_EVERY_S:
    the frames moved and their rate (tqdm's), the virtual time reached, the workers running."""

    EVERY = 4096

    def __init__(self, net: SimNetwork, say: Callable[[str], None], remaining: list,
                 started: float, bar: bool = False):
        self.net, self.say, self.remaining = net, say, remaining
        self.said_at, self.frames_then = started, 0
        self.bar = None
        if bar:
            from tqdm import tqdm
            self.bar = tqdm(unit="frame", unit_scale=True, desc="sim", leave=False,
                            file=sys.stderr, mininterval=BAR_EVERY_S)
            self.drawn_at, self.frames_drawn = started, 0

    def frames(self) -> int:
        return self.net.delivered_frames()

    def workers_started(self, count: int, began: float) -> None:
        """The workers' starts (each streamed INA worker's max pass over its input) took
        from `began` to now: said when it was long (16,000 workers: ~20 s before any frame),
        and the next line's rate counts from here."""
        now = time.perf_counter()
        if now - began >= STARTS_SAID_AFTER_S:
            self.say(f"sim: {count} workers started in {now - began:.1f} s")
        self.said_at = now
        if self.bar is not None:
            self.drawn_at = now

    def close(self) -> None:
        if self.bar is not None:
            self.bar.close()
            self.bar = None

    def __call__(self) -> bool:
        now = time.perf_counter()
        if self.bar is not None:
            if now - self.drawn_at >= BAR_EVERY_S:
                frames = self.frames()
                self.bar.set_postfix_str(f"{self.net.loop.now * 1e3:.3f} ms virtual, "
                                         f"{self.remaining[0]} workers running", refresh=False)
                self.bar.update(frames - self.frames_drawn)
                self.drawn_at, self.frames_drawn = now, frames
            return False
        if now - self.said_at >= PROGRESS_EVERY_S:
            frames = self.frames()
            self.say(f"sim: {self.net.loop.now * 1e3:.3f} ms virtual, {self.remaining[0]} "
                     f"workers running, {(frames - self.frames_then) / (now - self.said_at):,.0f}"
                     f" frames/s")
            self.said_at, self.frames_then = now, frames
        return False


def _check_arguments(topology: Topology, algo: str, size_bytes: int, elems_k: int,
                     jobs: list[SimJob], time_limit: float) -> None:
    if algo not in ALGOS:
        raise SimError(f"algo must be one of {', '.join(ALGOS)}, got {algo!r}")
    if isinstance(size_bytes, bool) or not isinstance(size_bytes, int) or size_bytes < 4:
        raise SimError(f"size_bytes must be an integer >= 4 (one float32), got {size_bytes!r}")
    if (isinstance(elems_k, bool) or not isinstance(elems_k, int) or not MIN_K <= elems_k <= MAX_K
            or elems_k % 4):
        raise SimError(f"elems_k must be a multiple of 4 from {MIN_K} to {MAX_K}, got {elems_k!r}")
    if not jobs:
        raise SimError("no jobs to run")
    if not time_limit > 0:
        raise SimError(f"time_limit must be positive, got {time_limit!r}")
    for job in jobs:
        if not job.workers:
            raise SimError(f"job {job.job}: no workers")
        if job.switch is not None and job.switch not in {s.name for s in topology.switches}:
            raise SimError(f"job {job.job}: no switch named {job.switch!r}")
        for host in job.workers:
            try:
                topology.host(host)
            except KeyError as error:
                raise SimError(f"job {job.job}: {error.args[0]}") from None
    if len({j.hierarchical for j in jobs}) > 1:
        raise SimError("jobs are either all hierarchical or all flat in one run")
    for job in jobs:
        if job.hierarchical and job.switch is None:
            raise SimError(f"job {job.job}: a hierarchical job needs its root switch")
    hosts = [h for j in jobs for h in j.workers]
    if len(hosts) != len(set(hosts)):
        raise SimError("a host is a worker of two jobs (one worker per host)")


def _check_link_overrides(loss: float | None, bw: float | None) -> None:
    def number(value) -> bool:
        return not isinstance(value, bool) and isinstance(value, (int, float))

    if loss is not None and not (number(loss) and 0 <= loss <= 100):
        raise SimError(f"loss must be a percentage 0..100, got {loss!r}")
    if bw is not None and not (number(bw) and bw > 0):
        raise SimError(f"bw must be a positive number of Mbit/s, got {bw!r}")


def net_hosts(topology: Topology) -> set[str]:
    return {h.name for h in topology.hosts}


@dataclass
class _Member:
    """One worker of one job, and the application running it on its host."""

    job: int
    rank: int
    host: str
    app: InaWorker | RingWorker


def _create_workers(net: SimNetwork, placements: list[control.JobPlacement], algo: str,
                    length: int, seed: int, k: int, ina: InaOptions,
                    transport: TransportConfig, stall_timeout: float, accumulate: str,
                    on_end: Callable[[object], None],
                    given: dict[int, list[np.ndarray]] | None = None,
                    trees: dict | None = None,
                    checks: dict | None = None,
                    ahead: DrawAhead | None = None) -> tuple[list[_Member], dict]:
    """The workers, and job -> their input vectors (none for a streamed run: `checks` given,
    filled with each job's StreamedCheck)."""
    members, inputs = [], {}
    for placement in placements:
        n = len(placement.workers)
        if checks is not None and algo == "ring":
            # the ranks' next reads drawn on the other core (seekable_gradient.py: by
            # fastnormals.c's thread, else on a Python thread for a slice or more), and the
            # check's verdicts (each block's every rank)
            check = checks[placement.job] = StreamedCheck.for_ring(
                seed=seed, n=n, length=length, cuts=ring_cuts(length, n),
                segments=segment_bounds(length, n), ahead=ahead)
            vectors = [check.seekable(w) for w in range(n)]
        elif checks is not None:
            check = checks[placement.job] = StreamedCheck(seed=seed, n=n, length=length,
                                                          ahead=ahead, lanes=net.job_lanes(n))
            vectors = [check.source(w) for w in range(n)]
        else:
            vectors = [gradient(seed, w, length) for w in range(n)] if given is None else \
                [np.asarray(v, dtype=np.float32) for v in given.get(placement.job, ())]
            if len(vectors) != n or any(v.shape != (length,) for v in vectors):
                raise SimError(f"inputs: job {placement.job} needs {n} vectors of {length} "
                               f"float32")
            inputs[placement.job] = vectors
        if algo == "ina" and placement.sharing == "hashed" and placement.job in (trees or {}):
            _tier_aggregators(net, placement, trees[placement.job], k)
        elif algo == "ina" and (placement.switch_slots is not None or
                                placement.sharing == "hashed"):
            _host_aggregator(net, placement, k)
        for w, host in enumerate(placement.workers):
            node = net.hosts[host]
            try:
                if algo == "ina":
                    session = InaSession(job=placement.job, worker=placement.worker_ids[w],
                                         n=n, k=k, pool_size=placement.pool_size,
                                         window=ina.window or placement.pool_size,
                                         rto=ina.rto, rto_max=ina.rto_max, max_retx=ina.max_retx,
                                         rto_min=ina.rto_min,
                                         fast_retransmit=ina.fast_retransmit,
                                         window_rule=ina.window_rule, query=ina.query,
                                         fmt=ina.fmt, scaling=ina.scaling,
                                         divisor=ina.divisor,
                                         switch_slots=placement.switch_slots,
                                         sharing=placement.sharing,
                                         timer_heap=net.timer_heap)
                    if ina.timeline:
                        session.timeline = []
                    sink = None if checks is None else checks[placement.job].sink(
                        w, SessionBound(session))
                    app = InaWorker(node, session, ip_bytes(placement.addresses[w]),
                                    vectors[w], on_end, sink=sink)
                elif algo != "ring":
                    app = plan_worker(net, placement.workers, w, algo, vectors[w], transport,
                                      stall_timeout, accumulate, on_end)
                else:
                    right = net.topology.host(placement.workers[(w + 1) % n]).ip
                    left = net.topology.host(placement.workers[(w - 1) % n]).ip
                    sink = None if checks is None else checks[placement.job].sink(
                        w, ring_bound(n, accumulate))
                    app = RingWorker(node, RingSession(rank=w, n=n, accumulate=accumulate),
                                     ip_bytes(right), ip_bytes(left), vectors[w], transport,
                                     stall_timeout, on_end, sink=sink)
            except HostError as error:
                raise SimError(f"job {placement.job} worker {w}: {error}") from None
            members.append(_Member(placement.job, w, host, app))
    return members, inputs


def max_passes_ahead(jobs: list[SimJob], *, algos, size_bytes: int, seed: int,
                     ina: InaOptions):
    """A context manager in which the max passes of every streamed INA worker's input
    (`simulate(..., keep_results=False)` with seeded gradients) are made on a thread from its
    start: a run enters it before `prepare_setup`, whose second or so on one core they then
    fill (hosts/max_passes.py). A no-op for runs that make no max pass."""
    if "ina" not in algos or not streams("ina", ina):
        return contextlib.nullcontext()
    length = size_bytes // 4
    return passes_ahead(PassKey(seed, rank, length)       # (a key twice: made once)
                        for job in jobs for rank in range(len(job.workers)))


def streams(algo: str, ina: InaOptions) -> bool:
    """Whether a run without kept results streams its workers' vectors: INA with job scaling
    at the overflow-free divisor (FloatCodec's streamed mode; no chunk is ever redone), and
    the ring (RingSession's streamed mode)."""
    return algo == "ring" or (algo == "ina" and ina.scaling == "job" and ina.divisor is None)


def ring_cuts(length: int, n: int, slice_values: int = SLICE_VALUES) -> list[int]:
    """Where the ring's slices start (every segment's, every `slice_values` values): the
    marks of its ranks' seekable inputs, and so the only places their reads start."""
    bounds = segment_bounds(length, n)
    return sorted({0, *(first for a, b in zip(bounds, bounds[1:])
                        for first in range(a, b, slice_values))})


def ring_bound(n: int, accumulate: str) -> Callable[[np.ndarray, np.ndarray, np.ndarray], tuple]:
    """(largest bound, every error within its bound) of a block of a ring's sum, its errors
    and its sums of |x|: `ring_error_bound`, as `judge_worker` applies it to a whole result."""
    def verdict(values: np.ndarray, error: np.ndarray, abs_sum: np.ndarray) -> tuple:
        bounds = ring_error_bound(abs_sum, values, n, accumulate)
        return float(np.max(bounds)), bool(np.all(error <= bounds))
    return verdict


class SessionBound(KeyedVerdict):
    """(largest bound, every error within its bound) of a block of a streamed session's sum
    and its errors: its codec's `error_bound` (one scale: `error_bound_scaled` at the call's
    scale), folded without the per-element array (`quantize.error_bound_verdict`). Its key is
    (n, scale), read when asked: the scale is agreed during the call."""
    __slots__ = ("session",)

    def __init__(self, session: InaSession):
        self.session = session

    def __call__(self, values: np.ndarray, error: np.ndarray) -> tuple:
        codec = self.session._codec
        return error_bound_verdict(codec.n, codec.scale, values, error)

    def key(self) -> tuple:
        codec = self.session._codec
        return (codec.n, codec.scale)


def _host_aggregator(net: SimNetwork, placement: control.JobPlacement, k: int) -> None:
    """The job's host aggregator (docs/fallback.md) on its worker 0's host, for the slots the
    switch does not hold; its completed sums go to the switch, which multicasts them."""
    from hosts.fallback import FallbackAggregator
    from hosts.fallback_node import SimFallbackServer
    hashed = placement.sharing == "hashed"
    if not hashed and placement.switch_slots >= placement.pool_size:
        return
    n = len(placement.workers)
    SimFallbackServer(net.hosts[placement.workers[0]],
                      FallbackAggregator(job=placement.job, n=n, k=k,
                                         first_slot=0 if hashed else placement.switch_slots,
                                         pool_size=placement.pool_size, via_switch=True,
                                         hashed=hashed),
                      [ip_bytes(net.topology.host(h).ip) for h in placement.workers],
                      port=placement.fallback_port, switch_ip=ip_bytes(placement.addresses[0]))


def _tier_aggregators(net: SimNetwork, placement: control.JobPlacement, tree: dict,
                      k: int) -> None:
    """A hashed tree job's host aggregators (docs/protocol.md §3.3, "Tiers"), one per tree
    switch, on the host the controller gave it (`fallback_address`): the root's completes sums
    for the root to multicast, a child's (hosts/fallback_tier.py) sends partial sums up and the
    parent's RESULTs down."""
    from hosts.fallback import FallbackAggregator
    from hosts.fallback_node import SimFallbackServer
    from hosts.fallback_tier import TierAggregator
    for switch, node in tree.items():
        host = net.hosts[net.topology.host_by_ip(node["fallback_address"]).name]
        members = node["members"]
        ips = [ip_bytes(tree[m]["address"] if m in tree else net.topology.host(m).ip)
               for m in members]
        if node["parent"] is None:
            aggregator = FallbackAggregator(job=placement.job, n=len(members), k=k,
                                            first_slot=0, pool_size=placement.pool_size,
                                            via_switch=True, hashed=True,
                                            result_count=len(placement.workers))
            parent_ip = None
        else:
            aggregator = TierAggregator(job=placement.job, n=len(members), k=k,
                                        pool_size=placement.pool_size,
                                        parent_member=node["child_index"])
            parent_ip = ip_bytes(tree[node["parent"]]["address"])
        SimFallbackServer(host, aggregator, ips, port=node["fallback_port"],
                          switch_ip=ip_bytes(node["address"]), parent_ip=parent_ip)


def _retransmissions(app) -> int:
    """What the worker resent so far: also for a worker still running at the time limit (its
    outcome is filled only when it ends)."""
    if app.outcome.finished:
        return app.outcome.retransmissions
    counters = _session_counters(app)
    if counters is not None:
        return counters["retransmissions"]
    if hasattr(app, "senders"):               # a plan worker's transports
        return app.retransmissions
    sender = getattr(app, "sender", None)     # the ring's transport
    return sender.counters.retransmissions if sender is not None else 0


def _session_counters(app) -> dict | None:
    session = getattr(app, "session", None)
    counters = getattr(session, "counters", None)
    if counters is None or app.algo != "ina":
        return None
    return {f.name: getattr(counters, f.name) for f in fields(counters)}


def _kill(net: SimNetwork, host: str, member: _Member | None) -> None:
    net.loop.record(f"{host} killed")
    net.hosts[host].kill()
    if member is not None and not member.app.outcome.finished:
        member.app.abort(f"{host} was killed at {net.loop.now:g} s")


def reference_sums(inputs: dict) -> dict:
    """job -> (float64 sum, float64 sum of magnitudes, n), one vector at a time (stacking 1024
    workers' 1 MiB in float64 took 2 GiB, 4 with its abs)."""
    references = {}
    for job, vectors in inputs.items():
        exact = np.zeros(len(vectors[0]), dtype=np.float64)
        abs_sum = np.zeros_like(exact)
        for vector in vectors:
            wide = vector.astype(np.float64)
            exact += wide
            abs_sum += np.abs(wide)
        references[job] = (exact, abs_sum, len(vectors))
    return references


def judge_worker(algo: str, app, reference) -> tuple:
    """(max error, mean error, largest bound, correct) of a worker's result; all None/False
    without one. INA's per-element bound array is dropped once used (2 MiB per worker)."""
    exact, abs_sum, n = reference
    outcome = app.outcome
    if outcome.result is None:
        return None, None, None, False
    diff = np.abs(outcome.result.astype(np.float64) - exact)
    if algo == "ina":
        bounds = outcome.extra.pop("err_bound")
    else:
        bounds = ring_error_bound(abs_sum, outcome.result, n, app.session.accumulate)
    return (float(diff.max()), float(diff.mean()), float(np.max(bounds)),
            bool(np.all(diff <= bounds)))


def _collect(net: SimNetwork, members: list[_Member], references: dict, verdicts: dict,
             algo: str, wall: float, stop: str, checks: dict,
             time_runtime: bool = False) -> SimResult:
    records = []
    for member in members:
        outcome = member.app.outcome
        node = net.hosts[member.host]
        verdict = verdicts.get(id(member.app))
        if verdict is None and member.job in checks:     # streamed, still running
            verdict = None, None, None, False
        elif verdict is None:
            verdict = judge_worker(algo, member.app, references[member.job])
        max_err, mean_err, bound, correct = verdict
        records.append(WorkerRecord(
            algo=algo, job=member.job, worker=member.rank, host=member.host,
            time_s=outcome.finished_at if outcome.error is None and outcome.finished else None,
            bytes_sent=node.counters.bytes_sent, bytes_received=node.counters.bytes_received,
            packets_sent=node.counters.frames_sent,
            packets_received=node.counters.frames_received,
            retransmissions=_retransmissions(member.app), max_abs_err=max_err,
            mean_abs_err=mean_err, err_bound=bound, correct=correct, error=outcome.error,
            state="killed" if not node.alive else member.app.state, result=outcome.result,
            counters=_session_counters(member.app),
            timeline=getattr(getattr(member.app, "session", None), "timeline", None)))
    links = net.link_report()
    return SimResult(records=records, links=links, switches=net.switch_report(),
                     virtual_s=net.loop.now, wall_s=wall, events=net.loop.events_run,
                     frames=sum(link["delivered_packets"] for link in links),
                     switch_packets=sum(n.counters.processed for n in net.switches.values()),
                     runtime_wall_s=sum(n.runtime_wall_s for n in net.switches.values())
                     if time_runtime else None,
                     stop=stop)
