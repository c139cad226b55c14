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
from typing import Callable

from hosts.draw_ahead import DrawAhead
from inaemu.scenario import model as m
from inaemu.scenario.fabric_control import FabricControl
from inaemu.scenario.reactions import failure_learnt, repair_learnt
from inaemu.scenario.graph_run import GraphJobRun
from inaemu.scenario.results import EventRecord, FlowRecord, Samples, ScenarioResult
from inaemu.scenario.sim_job import JobRun
from inaemu.sim.cores import CoreUnavailable
from inaemu.sim.network import SimNetwork
from inaemu.sim.switch_node import SwitchCost
from inaemu.workload.graph import Workload as GraphWorkload

Say = Callable[[str], None]
FIRST_CALL_PORT = 20000        # ring / baseline calls: data port 20000 + 2c, acks + 1
FIRST_FLOW_PORT = 7000         # background flows
SAMPLE_S = 1e-4                # progress samples (the resolution of recovery_s)
LINK_SAMPLE_EVERY = 10         # link utilisation every 10 progress samples
PROGRESS_LINE_S = 30.0         # without a progress bar, a line this often (wall seconds)
BAR_EVERY_SAMPLES = 200        # with one, its virtual time and frames/s this often (samples)


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
        try:
            self.net = SimNetwork(self.topology, seed=self.options.seed, switch_cost=cost,
                                  core=self.options.sim_core)
        except CoreUnavailable as error:
            raise ScenarioError("options.sim_core", str(error)) from None
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
        self._said_at = time.perf_counter()      # the last progress line (without a bar)
        self._frames_said = 0                      # frames delivered by then
        self.control: FabricControl | None = None
        self._bar = None
        # streamed INA calls draw their inputs on other cores ahead of their reads
        self.ahead = DrawAhead()

    # -- the run ----------------------------------------------------------------------------------

    def run(self) -> ScenarioResult:
        started = time.perf_counter()
        self.say(f"scenario {self.scenario.name}: {len(self.topology.switches)} switches, "
                 f"{len(self.topology.hosts)} hosts, {len(self.runs)} jobs, "
                 f"{len(self.scenario.events)} events (simulated)")
        self.control = FabricControl.in_process(self.net, elems_k=self.options.elems_k,
                                                pool_size=self.options.pool_size, say=self.say,
                                                sharing=self.options.sharing,
                                                shared_pairs=self.options.shared_pairs)
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
            with self.ahead:
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

    # -- the clock JobLife reads ------------------------------------------------------------------

    def now(self) -> float:
        return self.loop.now

    def at(self, time: float, action, *args):
        return self.loop.at(time, action, *args)

    @staticmethod
    def stamp(time: float) -> str:
        return f"{time * 1e3:9.3f} ms"

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
            run.watch_recovery(now)
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
        failure_learnt(self, index, event)

    def _repair_learnt(self, index: int, event) -> None:
        repair_learnt(self, index, event)

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
        if samples.keep_progress():
            samples.times_s.append(now)
            for run in self.runs:
                samples.progress.setdefault(run.job.name, []).append(run.progress_fraction())
        for run in self.runs:
            if run.state == "running":
                run.note_progress(now, run.progress_units())
        self._sample_count += 1
        if self._sample_count % LINK_SAMPLE_EVERY == 1 and samples.keep_links():
            self._sample_links(now)
        samples.thin()
        if self._sample_count % 10 == 0:
            self._show_progress(now)
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

    def _show_progress(self, now: float) -> None:
        """Virtual time reached, frames per second and each running job's progress: on the
        bar, or without one (not a terminal) a line every PROGRESS_LINE_S of wall time."""
        if self._bar is not None:
            if self._sample_count % BAR_EVERY_SAMPLES == 0:
                self._bar.set_postfix_str(f"{now * 1e3:.1f} ms virtual, "
                                          f"{self._frame_rate():,.0f} frames/s")
            return
        if time.perf_counter() - self._said_at < PROGRESS_LINE_S:
            return
        rate = self._frame_rate()
        jobs = ", ".join(f"{run.job.name} {len(run.iterations)} of {run.calls_planned()} calls"
                         for run in self.runs if run.state == "running")
        self.say(f"  ... {now * 1e3:.1f} ms virtual reached{': ' + jobs if jobs else ''}"
                 f" ({rate:,.0f} frames/s)")

    def _frame_rate(self) -> float:
        """Frames delivered per wall second since the last call."""
        wall, frames = time.perf_counter(), self.net.delivered_frames()
        rate = (frames - self._frames_said) / max(wall - self._said_at, 1e-9)
        self._said_at, self._frames_said = wall, frames
        return rate

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


def _check_runnable(scenario: m.Scenario, topology) -> None:
    """What the simulator cannot do with this scenario, said before it starts."""
    for index, event in enumerate(scenario.events):
        if isinstance(event, m.SlowWorker) and event.nic_factor != 1:
            link = topology.host_link(event.host)
            if scenario.network.bw_mbps is None:
                raise m.ScenarioError(f"events[{index}] (slow_worker)",
                                      f"nic_factor needs a shaped network (network.bw_mbps); "
                                      f"{event.host}'s link to {link.node} has no rate")
