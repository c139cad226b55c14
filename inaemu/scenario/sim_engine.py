"""A scenario on the simulated network (`inaemu scenario FILE --net sim`).

One `SimNetwork` and one controller (`FabricControl`) live for the whole timeline; jobs arrive,
run their iterations and leave; events change the network under them. Everything runs on the
virtual clock, so a scenario is a function of its file and seed.

A job's iteration: every worker computes (`compute_s`, times its host's slowdown), then starts
the iteration's all-reduce; the next iteration starts when every worker has the sum (an
iteration barrier, as synchronous data-parallel training has). INA workers keep one
`InaSession` per placement, so chunk positions continue across iterations (docs/protocol.md
§4); ring and baseline calls each get their own TCP port pair, so a late segment of one call is
never read as the next call's bytes.

Failures (docs/protocol.md §8): the controller learns that a link or switch went away
`detection_s` after it happened (the switches' port status; a crashed switch's P4Runtime stream
ends), re-routes every live switch around it, and re-plans each INA job whose tree used it:
the job's old placement is removed, a new tree (or switch) is placed under a fresh P4 job id,
and every worker restarts the current iteration's all-reduce on it from its start, so each
contribution is counted exactly once (packets of the old placement still in flight are
dropped by the switches as an unknown job). With no tree left the job moves to the ring; with
its workers cut off from each other it ends with an error.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from typing import Callable

import numpy as np

from hosts.agent import gradient
from hosts.errors import HostError
from hosts.ina_session import InaSession
from hosts.ring_session import RingSession
from hosts.scenario_agent import iteration_seed

from inaemu.scenario import model as m
from inaemu.scenario.fabric_control import FabricControl, Placement, PlacementRefused
from inaemu.scenario.results import (EventRecord, FlowRecord, IterationRecord, JobRecord,
                                     Samples, ScenarioResult)
from inaemu.sim.collective_worker import plan_worker
from inaemu.sim.driver import InaOptions, judge_worker, reference_sums
from inaemu.sim.frames import ip_bytes
from inaemu.sim.ina_worker import InaWorker
from inaemu.sim.network import SimNetwork
from inaemu.sim.reliable import TransportConfig
from inaemu.sim.ring_worker import RingWorker
from inaemu.sim.switch_node import SwitchCost

Say = Callable[[str], None]
FIRST_CALL_PORT = 20000        # ring / baseline calls: data port 20000 + 2c, acks + 1
FIRST_FLOW_PORT = 7000         # background flows
STALL_TIMEOUT_S = 10.0
SAMPLE_S = 1e-4                # progress samples (the resolution of recovery_s)
LINK_SAMPLE_EVERY = 10         # link utilisation every 10 progress samples


def run_sim(scenario: m.Scenario, *, say: Say = lambda _line: None,
            bar: bool | None = None) -> ScenarioResult:
    """Run `scenario` on the simulator; `bar`: a progress bar on the terminal (None: when
    stderr is a terminal)."""
    return SimScenario(scenario, say=say, bar=bar).run()


class SimScenario:
    def __init__(self, scenario: m.Scenario, *, say: Say = lambda _line: None,
                 bar: bool | None = None):
        self.scenario = scenario
        self.options = scenario.options
        self.say = say
        self.bar_wanted = bar
        self.topology = scenario.network.topology()
        _check_runnable(scenario, self.topology)
        cost = SwitchCost() if self.options.switch_pps is None else \
            SwitchCost.from_pps(self.options.switch_pps)
        self.net = SimNetwork(self.topology, seed=self.options.seed, switch_cost=cost)
        self.loop = self.net.loop
        self.directions: dict[frozenset, list] = {}
        for link in self.topology.links:
            pair = frozenset((link.a.node, link.b.node))
            self.directions[pair] = [self.net.links[name] for name in self.net.links
                                     if {name.split("->")[0].split(":")[0],
                                         name.split("->")[1].split(":")[0]} == set(pair)]
        self.base_bw = {name: link.seconds_per_byte for name, link in self.net.links.items()}
        self.compute_factor: dict[str, float] = {}
        self.busy_hosts: dict[str, str] = {}          # host -> job running on it
        self.next_call = 0
        from inaemu.scenario.graph_run import GraphJobRun
        from inaemu.workload.graph import Workload as GraphWorkload
        self.runs = [(GraphJobRun if isinstance(job.workload, GraphWorkload) else JobRun)(
            self, job, index) for index, job in enumerate(scenario.jobs)]
        self.events: list[EventRecord] = []
        self.event_jobs: list[dict[str, float]] = []   # per event: job -> when it was acted on
        self.flows: dict[str, object] = {}
        self._next_flow_port = FIRST_FLOW_PORT
        self.flow_specs: dict[str, m.FlowStart] = {}
        self.samples = Samples()
        self._last_link_bytes: dict[str, int] = {}
        self._sample_count = 0
        self.control: FabricControl | None = None
        self._bar = None

    # -- the run ----------------------------------------------------------------------------------

    def run(self) -> ScenarioResult:
        started = time.perf_counter()
        self.say(f"scenario {self.scenario.name}: {len(self.topology.switches)} switches, "
                 f"{len(self.topology.hosts)} hosts, {len(self.runs)} jobs, "
                 f"{len(self.scenario.events)} events (simulated)")
        self.control = FabricControl.in_process(self.net, elems_k=self.options.elems_k,
                                                pool_size=self.options.pool_size, say=self.say)
        self.say(f"scenario: switches configured ({self.control.routes} routes) in "
                 f"{time.perf_counter() - started:.1f} s")
        self._open_bar()
        try:
            # events first: one at the time a job arrives applies before the job starts
            for index, event in enumerate(self.scenario.events):
                self.events.append(EventRecord(index, event.at_s, m.event_kind(event),
                                               m.describe(event)))
                self.event_jobs.append({})
                self.loop.at(event.at_s, self._apply, index, event)
            for run in self.runs:
                if run.job.after is None:
                    self.loop.at(run.job.start_s, run.arrive)
            self.loop.at(0.0, self._sample)
            stop = self.loop.run(until=self.options.time_limit_s)
            if not self._finished():
                stop = "time limit"
                for run in self.runs:
                    run.give_up(f"still running at the time limit "
                                f"({self.options.time_limit_s:g} s virtual)")
            else:
                stop = "done"
            self._sample()
            for flow in self.flows.values():
                if getattr(flow, "stopped_at", None) is None:
                    flow.stop()
        finally:
            self._close_bar()
            self.control.close()
        return self._result(stop, time.perf_counter() - started)

    def _finished(self) -> bool:
        return all(run.state in ("done", "failed") for run in self.runs)

    def job_ended(self, run: "JobRun") -> None:
        for other in self.runs:
            if other.job.after == run.job.name and other.state == "waiting":
                self.loop.at(self.loop.now + other.job.start_s, other.arrive)
        if self._bar is not None:
            self._bar.update(1)
        if self._finished():
            self.loop.stop()

    def call_ports(self) -> tuple[int, int]:
        """A TCP port pair of its own for one ring / baseline call."""
        c = self.next_call % 10000
        self.next_call += 1
        return FIRST_CALL_PORT + 2 * c, FIRST_CALL_PORT + 2 * c + 1

    # -- events -----------------------------------------------------------------------------------

    def _apply(self, index: int, event) -> None:
        record = self.events[index]
        now = self.loop.now
        running = [run for run in self.runs if run.state == "running"]
        if isinstance(event, m.SlowWorker):        # it affects the job on that host only
            running = [run for run in running if event.host in run.job.workers]
        for run in running:
            self.event_jobs[index][run.job.name] = now
        detect = now + self.options.detection_s
        if isinstance(event, m.LinkDown):
            for wire in self.directions[frozenset((event.a, event.b))]:
                wire.up = False
            self.loop.at(detect, self._failure_learnt, index, event)
        elif isinstance(event, m.LinkUp):
            for wire in self.directions[frozenset((event.a, event.b))]:
                wire.up = True
            self.loop.at(detect, self._repair_learnt, index, event)
        elif isinstance(event, m.SwitchCrash):
            self.net.switches[event.switch].crash()
            self.loop.at(detect, self._failure_learnt, index, event)
        elif isinstance(event, m.SwitchRestart):
            if not self.net.switches[event.switch].down:
                record.actions.append(f"{event.switch} was not down: nothing to do")
                return
            self.net.switches[event.switch].restart()
            self.loop.at(detect, self._repair_learnt, index, event)
        elif isinstance(event, m.LinkChange):
            for wire in self.directions[frozenset((event.a, event.b))]:
                if event.loss_percent is not None:
                    wire.loss = event.loss_percent / 100.0
                if event.delay_ms is not None:
                    wire.delay_s = event.delay_ms / 1000.0
                if event.bw_mbps is not None:
                    wire.seconds_per_byte = 8.0 / (event.bw_mbps * 1e6)
                    self.base_bw[wire.name] = wire.seconds_per_byte
            record.actions.append("link settings changed")
        elif isinstance(event, m.SlowWorker):
            self.compute_factor[event.host] = event.compute_factor
            link = self.topology.host_link(event.host)
            for wire in self.directions[frozenset((event.host, link.node))]:
                wire.seconds_per_byte = self.base_bw[wire.name] * event.nic_factor
            record.actions.append(f"{event.host}: compute x{event.compute_factor:g}, "
                                  f"NIC rate /{event.nic_factor:g}")
        elif isinstance(event, m.FlowStart):
            self._start_flow(event, record)
        elif isinstance(event, m.FlowStop):
            flow = self.flows.get(event.name)
            if flow is not None:
                flow.stop()
                record.actions.append(f"flow {event.name} stopped")

    def _failure_learnt(self, index: int, event) -> None:
        record = self.events[index]
        record.detected_s = self.loop.now
        control = self.control
        if isinstance(event, m.LinkDown):
            control.down_links.add(frozenset((event.a, event.b)))
        else:
            control.down_switches.add(event.switch)
        summary = control.reroute()
        record.actions.append(f"re-routed ({_route_changes(summary)})")
        topology = control.topology_now()
        for run in self.runs:
            if run.state != "running":
                continue
            placement = run.placement
            hit = placement is not None and (
                placement.uses_switch(event.switch) if isinstance(event, m.SwitchCrash)
                else placement.uses_link(event.a, event.b, topology))
            if hit:
                record.actions.append(run.replan(f"{record.description} at "
                                                 f"{record.at_s * 1e3:.3f} ms"))
            self.event_jobs[index][run.job.name] = self.loop.now

    def _repair_learnt(self, index: int, event) -> None:
        record = self.events[index]
        record.detected_s = self.loop.now
        control = self.control
        if isinstance(event, m.LinkUp):
            control.down_links.discard(frozenset((event.a, event.b)))
        else:
            control.switch_restarted(event.switch)
            record.actions.append(f"{event.switch}: pipeline pushed again")
        summary = control.reroute()
        record.actions.append(f"re-routed ({_route_changes(summary)})")
        for run in self.runs:
            action = run.repaired(record.description)
            if action is not None:
                record.actions.append(action)
                self.event_jobs[index][run.job.name] = self.loop.now

    def _start_flow(self, event: m.FlowStart, record: EventRecord) -> None:
        from inaemu.sim import background
        port = self._next_flow_port          # each source takes a pair (data, acks)
        self._next_flow_port += 2 * len(event.sources)
        if event.kind == "tcp":
            flow = background.BulkFlow(self.net, event.sources[0], event.destination,
                                       size_bytes=event.size_bytes, port=port)
        elif event.kind == "udp":
            flow = background.UdpFlow(self.net, event.sources[0], event.destination,
                                      rate_mbps=event.rate_mbps, port=port)
        else:
            flow = background.Incast(self.net, list(event.sources), event.destination,
                                     size_bytes=event.size_bytes, base_port=port)
        self.flows[event.name] = flow
        self.flow_specs[event.name] = event
        flow.start()
        record.actions.append(f"flow {event.name} started")

    # -- samples ----------------------------------------------------------------------------------

    def _sample(self) -> None:
        now = self.loop.now
        samples = self.samples
        samples.times_s.append(now)
        for run in self.runs:
            samples.progress.setdefault(run.job.name, []).append(run.progress_fraction())
            run.note_progress(now)
        self._sample_count += 1
        if self._sample_count % LINK_SAMPLE_EVERY == 1:
            self._sample_links(now)
        if self._bar is not None and self._sample_count % 200 == 0:
            self._bar.set_postfix_str(f"{now * 1e3:.1f} ms virtual")
        if not self._finished():
            self.loop.at(now + SAMPLE_S, self._sample)

    def _sample_links(self, now: float) -> None:
        samples = self.samples
        previous = samples.link_times_s[-1] if samples.link_times_s else None
        samples.link_times_s.append(now)
        for name, wire in self.net.links.items():
            sent = wire.counters.delivered_bytes
            before = self._last_link_bytes.get(name, 0)
            self._last_link_bytes[name] = sent
            series = samples.link_utilisation.get(name)
            if previous is None or not wire.seconds_per_byte or now <= previous:
                if series is not None:
                    series.append(0.0)
                continue
            used = (sent - before) * wire.seconds_per_byte / (now - previous)
            if series is None:
                if not used:
                    continue
                series = samples.link_utilisation[name] = [0.0] * (len(samples.link_times_s)
                                                                    - 1)
            series.append(used)

    def _open_bar(self) -> None:
        import sys
        wanted = self.bar_wanted if self.bar_wanted is not None else sys.stderr.isatty()
        if wanted:
            from tqdm import tqdm
            self._bar = tqdm(total=len(self.runs), unit="job", desc=self.scenario.name,
                             leave=False)

    def _close_bar(self) -> None:
        if self._bar is not None:
            self._bar.close()
            self._bar = None

    # -- results ----------------------------------------------------------------------------------

    def _result(self, stop: str, wall: float) -> ScenarioResult:
        for record in self.events:
            if record.at_s > self.loop.now:
                record.actions.append(f"not reached: the scenario ended at "
                                      f"{self.loop.now * 1e3:.3f} ms")
        for index, record in enumerate(self.events):
            for name, acted in self.event_jobs[index].items():
                run = next(r for r in self.runs if r.job.name == name)
                after = run.first_progress_after(acted)
                record.recovery_s[name] = None if after is None else after - record.at_s
        flows = []
        for name, flow in self.flows.items():
            spec = self.flow_specs[name]
            flows.append(FlowRecord(name, spec.kind, spec.sources, spec.destination,
                                    flow.started_at, flow.stopped_at, flow.bytes_delivered,
                                    flow.goodput_mbps()))
        return ScenarioResult(
            name=self.scenario.name, net="sim", seed=self.options.seed,
            jobs=[run.record() for run in self.runs],
            iterations=[it for run in self.runs for it in run.iterations],
            events=self.events, flows=flows, samples=self.samples,
            duration_s=self.loop.now, wall_s=wall, stop=stop)


@dataclass
class _Worker:
    host: str
    rank: int
    app: object = None
    computing: object = None          # the compute timer's event
    done: bool = False                # has this iteration's sum
    counted: float = 0.0              # progress of ended apps


class JobRun:
    """One job of the scenario: its placement, its iterations and their all-reduces."""

    def __init__(self, engine: SimScenario, job: m.Job, index: int):
        self.engine = engine
        self.job = job
        self.index = index
        self.algo = job.algo              # what it runs now (INA may move to the ring)
        self.state = "waiting"
        self.arrived_s: float | None = None
        self.ended_s: float | None = None
        self.error: str | None = None
        self.iteration = 0
        self.iterations: list[IterationRecord] = []
        self.placement: Placement | None = None
        self.placements: list[dict] = []
        self.sessions: dict[str, InaSession] = {}
        self.workers = [_Worker(host, rank) for rank, host in enumerate(job.workers)]
        self.generation = 0               # apps of an older generation are abandoned
        self.suspended = None             # the give-up event while cut off by a failure
        self.retransmissions = 0
        self.progress_log: list[tuple[float, float]] = []   # (time, progress) when it grew
        self._inputs: list[np.ndarray] = []
        self._reference = None
        self._units_at_start = 0.0
        self._current: IterationRecord | None = None
        self._correct = True

    # -- arrival and end --------------------------------------------------------------------------

    def arrive(self) -> None:
        engine = self.engine
        now = engine.loop.now
        taken = [h for h in self.job.workers if h in engine.busy_hosts]
        if taken:
            self._fail(f"its hosts {', '.join(taken)} still run job "
                       f"{engine.busy_hosts[taken[0]]} (one job per host at a time)")
            return
        for host in self.job.workers:
            engine.busy_hosts[host] = self.job.name
        self.state = "running"
        self.arrived_s = now
        engine.say(f"{now * 1e3:9.3f} ms  job {self.job.name} arrives ({self.algo}, "
                   f"{len(self.workers)} workers)")
        if self.algo == "ina":
            try:
                self._place()
            except PlacementRefused as refused:
                self._fail(f"cannot be placed: {refused}")
                return
        self._begin_iteration()

    def _place(self) -> None:
        tree = self.engine.scenario.network.kind != "star"
        self.placement = self.engine.control.place(self.job.workers, root=self.job.root,
                                                   tree=tree)
        self.sessions = {}
        self.placements.append({"at_s": self.engine.loop.now, "p4_job": self.placement.p4_job,
                                "switches": list(self.placement.switches)})

    def _finish(self) -> None:
        self.state = "done"
        self._leave()

    def _fail(self, error: str) -> None:
        self.error = f"job {self.job.name}: {error}"
        self.engine.say(f"{self.engine.loop.now * 1e3:9.3f} ms  {self.error}")
        self.state = "failed"
        self._abandon_apps()
        if self._current is not None and self._current.ended_s is None:
            self._current.error = error
            self._current.correct = False
        self._leave()

    def _leave(self) -> None:
        engine = self.engine
        self.ended_s = engine.loop.now
        for host in self.job.workers:
            if engine.busy_hosts.get(host) == self.job.name:
                del engine.busy_hosts[host]
        if self.placement is not None and engine.control is not None:
            engine.control.remove(self.placement)
        engine.job_ended(self)

    def give_up(self, reason: str) -> None:
        if self.state == "running":
            self._fail(reason)
        elif self.state == "waiting":
            self.error = f"job {self.job.name}: never started: {reason}"
            self.state = "failed"

    # -- iterations -------------------------------------------------------------------------------

    def _begin_iteration(self) -> None:
        engine = self.engine
        now = engine.loop.now
        length = self.job.workload.size_bytes // 4
        seed = iteration_seed(engine.options.seed * 1_000_003 + self.index, self.iteration)
        self._inputs = [gradient(seed, w, length) for w in range(len(self.workers))]
        self._reference = reference_sums({0: self._inputs})[0]
        self._current = IterationRecord(self.job.name, self.iteration, self.algo, now, now,
                                        None, None, True, 0)
        self._units_at_start = self.progress_units()
        for worker in self.workers:
            worker.done = False
            if self.algo != "ina":        # transports up before compute: see RingWorker.start
                self._open_app(worker)
            factor = engine.compute_factor.get(worker.host, 1.0)
            worker.computing = engine.loop.at(now + self.job.workload.compute_s * factor,
                                              self._computed, worker)

    def _computed(self, worker: _Worker) -> None:
        worker.computing = None
        self._current.compute_done_s = max(self._current.compute_done_s, self.engine.loop.now)
        if self.suspended is not None:      # cut off: it starts when the job is placed again
            return
        self._start_allreduce(worker)

    def _start_allreduce(self, worker: _Worker) -> None:
        if worker.app is None and not self._open_app(worker):
            return
        worker.app.start()

    def _open_app(self, worker: _Worker) -> bool:
        """The worker's app for this call, not started; False if the job failed."""
        engine = self.engine
        net = engine.net
        n = len(self.workers)
        vector = self._inputs[worker.rank]
        generation = self.generation

        def ended(app, worker=worker, generation=generation) -> None:
            self._allreduce_ended(worker, app, generation)

        try:
            if self.algo == "ina":
                app = self._ina_app(worker, vector, ended)
            else:
                data_port, ack_port = self._ports_for_call()
                if self.algo == "ring":
                    topology = engine.topology
                    right = topology.host(self.job.workers[(worker.rank + 1) % n]).ip
                    left = topology.host(self.job.workers[(worker.rank - 1) % n]).ip
                    app = RingWorker(net.hosts[worker.host],
                                     RingSession(rank=worker.rank, n=n), ip_bytes(right),
                                     ip_bytes(left), vector, TransportConfig(), STALL_TIMEOUT_S,
                                     ended, data_port=data_port, ack_port=ack_port)
                else:
                    app = plan_worker(net, self.job.workers, worker.rank, self.algo, vector,
                                      TransportConfig(), STALL_TIMEOUT_S, "float32", ended,
                                      data_port=data_port, ack_port=ack_port)
        except HostError as error:
            self._fail(f"worker {worker.rank}: {error}")
            return False
        worker.app = app
        return True

    def _ports_for_call(self) -> tuple[int, int]:
        """All workers of one call share its port pair: the first to start takes it."""
        key = (self.iteration, self.generation)
        if getattr(self, "_call_key", None) != key:
            self._call_key = key
            self._call_ports = self.engine.call_ports()
        return self._call_ports

    def _ina_app(self, worker: _Worker, vector, ended) -> InaWorker:
        placement = self.placement
        session = self.sessions.get(worker.host)
        options = self.engine.options
        if session is None:
            ina = InaOptions()       # hosts.api's defaults
            session = InaSession(job=placement.p4_job, worker=placement.worker_ids[worker.rank],
                                 n=len(self.workers), k=options.elems_k,
                                 pool_size=options.pool_size, window=options.pool_size,
                                 rto=ina.rto, rto_max=ina.rto_max, max_retx=ina.max_retx)
            self.sessions[worker.host] = session
        return InaWorker(self.engine.net.hosts[worker.host], session,
                         ip_bytes(placement.addresses[worker.rank]), vector, ended)

    def _allreduce_ended(self, worker: _Worker, app, generation: int) -> None:
        if generation != self.generation or self.state != "running":
            return                          # an abandoned call (re-planned or failed)
        worker.counted += _app_progress(app)
        worker.app = None
        outcome = app.outcome
        self.retransmissions += outcome.retransmissions
        self._current.retransmissions += outcome.retransmissions
        if outcome.error is not None:
            self._fail(f"iteration {self.iteration}, worker {worker.rank} ({worker.host}): "
                       f"{outcome.error}")
            return
        verdict = judge_worker(self.algo, app, self._reference)
        if not verdict[3]:
            self._correct = False
            self._current.correct = False
        worker.done = True
        if all(w.done for w in self.workers):
            self._iteration_done()

    def _iteration_done(self) -> None:
        now = self.engine.loop.now
        current = self._current
        current.ended_s = now
        current.allreduce_s = now - current.compute_done_s
        current.algo = self.algo
        self.iterations.append(current)
        self._current = None
        self.iteration += 1
        if self.iteration >= self.job.workload.iterations:
            self._finish()
        else:
            self._begin_iteration()

    # -- failures ---------------------------------------------------------------------------------

    def replan(self, why: str) -> str:
        """The controller's answer to a failure on this job's placement: a new placement (or
        the ring), and every worker not computing restarts this iteration's all-reduce."""
        engine = self.engine
        old = self.placement
        self._abandon_apps()
        if old is not None:
            engine.control.remove(old)
            self.placement = None
        self.sessions = {}
        self._units_at_start = self.progress_units()    # the iteration starts over
        if self._current is not None:
            self._current.restarts += 1
        try:
            self._place()
            action = (f"job {self.job.name}: re-planned on {', '.join(self.placement.switches)} "
                      f"(P4 job {self.placement.p4_job})")
        except PlacementRefused as refused:
            if not _connected(engine.control.topology_now(), self.job.workers):
                return self._suspend(why, str(refused))
            self.algo = "ring"
            action = f"job {self.job.name}: no tree left ({refused}); moved to the ring"
        self.suspended = None
        engine.say(f"{engine.loop.now * 1e3:9.3f} ms  {action}")
        for worker in self.workers:
            worker.done = False
            if self._in_call(worker):
                self._start_allreduce(worker)
            elif self.algo != "ina" and self.state == "running":
                self._open_app(worker)
        return action

    def _in_call(self, worker: _Worker) -> bool:
        """Whether the worker has reached the current call (it restarts it after a re-plan);
        here: its compute for the iteration is over."""
        return worker.computing is None

    def _suspend(self, why: str, reason: str) -> str:
        """Workers cut off from each other: wait for a repair (a link or switch back), at most
        options.repair_wait_s, then end with the reason; never hang."""
        engine = self.engine
        wait = engine.options.repair_wait_s
        if self.suspended is None:
            self.suspended = engine.loop.at(engine.loop.now + wait, self._fail,
                                            f"its workers stayed cut off from each other for "
                                            f"{wait:g} s after {why} ({reason})")
        action = (f"job {self.job.name}: workers cut off from each other; waiting up to "
                  f"{wait:g} s for a repair")
        engine.say(f"{engine.loop.now * 1e3:9.3f} ms  {action}")
        return action

    def repaired(self, why: str) -> str | None:
        """A repair was learnt: a suspended job tries to place itself again."""
        if self.suspended is None or self.state != "running":
            return None
        self.suspended.cancel()
        self.suspended = None
        return self.replan(why)

    def _abandon_apps(self) -> None:
        self.generation += 1
        for worker in self.workers:
            app = worker.app
            if app is not None:
                worker.counted += _app_progress(app)
                self.retransmissions += _app_retransmissions(app)
                _silence(app)
                worker.app = None
            if worker.computing is not None and self.state == "failed":
                worker.computing.cancel()
                worker.computing = None

    # -- progress ---------------------------------------------------------------------------------

    def progress_units(self) -> float:
        return sum(w.counted + (_app_progress(w.app) if w.app is not None else 0.0)
                   for w in self.workers)

    def note_progress(self, now: float) -> None:
        units = self.progress_units()
        if not self.progress_log or units > self.progress_log[-1][1]:
            self.progress_log.append((now, units))

    def first_progress_after(self, when: float) -> float | None:
        """The first sample after `when` at which the job had progressed (None: never)."""
        before = 0.0
        for at, units in self.progress_log:
            if at <= when:
                before = units
            elif units > before:
                return at
        return None

    def progress_fraction(self) -> float:
        """Iterations done, plus the share of the current all-reduce received so far (INA:
        every worker gets the whole vector back; ring: each gets 2(n-1)/n of it; other
        algorithms count finished workers)."""
        done = float(len(self.iterations))
        if self.state != "running" or self._current is None:
            return done
        n, size = len(self.workers), self.job.workload.size_bytes
        expected = {"ina": n * size / 1024, "ring": 2 * (n - 1) * size / 1024}.get(self.algo)
        if expected:
            share = (self.progress_units() - self._units_at_start) / expected
        else:
            share = sum(w.done for w in self.workers) / n
        return done + min(0.999, max(0.0, share))

    def calls_planned(self) -> int:
        return self.job.workload.iterations

    def record(self) -> JobRecord:
        return JobRecord(
            name=self.job.name, algo=self.job.algo, workers=self.job.workers,
            arrived_s=self.arrived_s, ended_s=self.ended_s,
            iterations_done=len(self.iterations), iterations=self.calls_planned(),
            correct=self._correct and self.error is None
            and len(self.iterations) == self.calls_planned(),
            error=self.error, retransmissions=self.retransmissions,
            placements=self.placements, final_algo=self.algo)


def _app_progress(app) -> float:
    """What an all-reduce app has received so far: INA results accepted, or in-order stream
    bytes (ring, baselines), in units of 1 KiB so both weigh alike."""
    session = getattr(app, "session", None)
    if app.algo == "ina":
        c = session.counters
        accepted = (c.packets_received - c.duplicates_ignored - c.foreign_ignored
                    - c.malformed_ignored)
        return float(accepted) * session.k * 4 / 1024
    receiver = getattr(app, "receiver", None)
    if receiver is not None:
        return receiver.next_expected / 1024
    receivers = getattr(app, "receivers", None) or {}
    return sum(r.next_expected for r in receivers.values()) / 1024


def _app_retransmissions(app) -> int:
    session = getattr(app, "session", None)
    if app.algo == "ina":
        return session.counters.retransmissions
    if hasattr(app, "senders"):
        return app.retransmissions
    return app.sender.counters.retransmissions


def _silence(app) -> None:
    """Stop an abandoned app: its timers, and any further effect of its packets."""
    app.outcome.finished_at = app.node.loop.now
    for name in ("_timer", "_rto_timer", "_stall_timer"):
        timer = getattr(app, name, None)
        if timer is not None:
            timer.cancel()
    for timer in getattr(app, "_rto_timers", {}).values():
        timer.cancel()
    app.on_end = lambda _app: None
    if app.outcome.error is None and app.outcome.result is None:
        app.outcome.error = "abandoned (re-planned)"


def _connected(topology, hosts) -> bool:
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


def _route_changes(summary: dict) -> str:
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


def _check_runnable(scenario: m.Scenario, topology) -> None:
    """What the simulator cannot do with this scenario, said before it starts."""
    for index, event in enumerate(scenario.events):
        if isinstance(event, m.SlowWorker) and event.nic_factor != 1:
            link = topology.host_link(event.host)
            if scenario.network.bw_mbps is None:
                raise m.ScenarioError(f"events[{index}] (slow_worker)",
                                      f"nic_factor needs a shaped network (network.bw_mbps); "
                                      f"{event.host}'s link to {link.node} has no rate")
