"""A scenario on Mininet (`inaemu scenario FILE --net mininet`, root).

The same timeline as the simulator's (inaemu/scenario/sim_engine.py, docs/scenarios.md), on
real processes and the wall clock: the topology on Mininet with one `inaemu switch` per switch,
the controller (`FabricControl.over_grpc`) holding a P4Runtime session with each for the whole
scenario, and per job its worker agents (inaemu/scenario/mininet_job.py: one
`hosts.scenario_agent` process per worker; the job holds the iteration barrier and reads each
call's result, its check against the reference, and progress). This module is the timeline:
the events, the samples, the background flows and the results. Events act on the
network: a link down/up is both veth ends set down/up, a crash is SIGKILL to the switch
process (its tables and registers die with it), a restart starts the process again, empty;
the controller learns each `detection_s` later and does what §8 of docs/protocol.md says.
A re-planned job's agents are killed and started again on the new placement, from the
current iteration's call (without its compute). Background flows are iperf3. With hashed
sharing each placement of a job has its host aggregators (`hosts.fallback_udp`, one, or one
per tree switch: inaemu/experiment/host_aggregators.py), started with it (the job's first
call waits until they listen) and stopped (SIGTERM: they write their counters) when it goes.

Not on Mininet: loss or delay changed during the run (the kernel has no netem; the switch ports
inject loss set at start), refused before anything starts.
"""

from __future__ import annotations

import heapq
import itertools
import json
import os
import queue
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path
from typing import Callable

from inaemu.experiment.host_aggregators import stop_aggregators
from inaemu.scenario import model as m
from inaemu.scenario.fabric_control import FabricControl
from inaemu.scenario.mininet_job import MininetGraphRun, MininetJobRun
from inaemu.scenario.reactions import failure_learnt, repair_learnt
from inaemu.scenario.results import EventRecord, FlowRecord, Samples, ScenarioResult

Say = Callable[[str], None]
SAMPLE_S = 0.01              # progress samples (wall)
LINK_SAMPLE_S = 0.05
FLOW_PORT = 5300


def run_mininet(scenario: m.Scenario, *, say: Say = lambda _line: None,
                bar: bool | None = None, tls=None) -> ScenarioResult:
    """`tls`: a checked `inaemu.experiment.tls.RunTLS` (P4Runtime over TLS), or None."""
    if os.geteuid() != 0:
        raise m.ScenarioError("net", "Mininet needs root (run as root, or use --net sim)")
    check_mininet_runnable(scenario)
    return MininetScenario(scenario, say=say, bar=bar, tls=tls).run()


def check_mininet_runnable(scenario: m.Scenario) -> None:
    """What Mininet cannot do, said before anything starts."""
    if scenario.options.host_pps is not None:
        raise m.ScenarioError("options.host_pps", "the simulator's rate of a host aggregator; "
                                                  "on Mininet it runs as fast as its process "
                                                  "does: leave it out, or use --net sim")
    for index, event in enumerate(scenario.events):
        where = f"events[{index}] ({m.event_kind(event)})"
        if isinstance(event, m.LinkChange) and (event.loss_percent is not None
                                                or event.delay_ms is not None):
            raise m.ScenarioError(where, "loss and delay cannot change during a Mininet run "
                                         "(no netem in this kernel; the switch ports inject "
                                         "loss set at start): use --net sim, or bw_mbps only")
        if isinstance(event, (m.SlowWorker, m.LinkChange)) and scenario.network.bw_mbps is None \
                and (getattr(event, "nic_factor", 1) != 1 or getattr(event, "bw_mbps", None)):
            raise m.ScenarioError(where, "needs a shaped network (network.bw_mbps)")


class MininetScenario:
    def __init__(self, scenario: m.Scenario, *, say: Say, bar: bool | None = None, tls=None):
        self.scenario = scenario
        self.tls = tls
        self.bar_wanted = bar
        self._bar = None
        self.options = scenario.options
        self.say = say
        self.topology = scenario.network.topology()
        self.run_dir = Path(tempfile.mkdtemp(prefix="inaemu-scenario-"))
        self.messages: queue.Queue = queue.Queue()
        self._timers: list = []
        self._sequence = itertools.count()
        self.t0 = 0.0
        self.compute_factor: dict[str, float] = {}
        self.busy_hosts: dict[str, str] = {}
        self.runs = [(MininetJobRun if isinstance(job.workload, m.Workload) else MininetGraphRun)(
            self, job, index) for index, job in enumerate(scenario.jobs)]
        self.events: list[EventRecord] = []
        self.event_jobs: list[dict[str, float]] = []
        self.flows: dict[str, "_Iperf"] = {}
        self.retired_agents: list[subprocess.Popen] = []   # ended jobs' agents, stopping
        self.retired_aggregators: list[subprocess.Popen] = []  # told to stop (SIGTERM)
        self.samples = Samples()
        self.net = None
        self.control: FabricControl | None = None
        self._link_bytes: dict[str, int] = {}

    def now(self) -> float:
        return time.time() - self.t0

    def at(self, when: float, action, *args) -> "_Timer":
        timer = _Timer()
        heapq.heappush(self._timers, (when, next(self._sequence), timer, action, args))
        return timer

    @staticmethod
    def stamp(time_s: float) -> str:
        return f"{time_s:8.3f} s"

    # -- the run ----------------------------------------------------------------------------------

    def run(self) -> ScenarioResult:
        from topologies.networks import mininet_network
        started = time.perf_counter()
        over = f", P4Runtime over {self.tls.describe()}" if self.tls is not None else ""
        self.say(f"scenario {self.scenario.name}: {len(self.topology.switches)} switches, "
                 f"{len(self.topology.hosts)} hosts, {len(self.runs)} jobs on Mininet{over}")
        stop = "done"
        with mininet_network(self.topology, run_dir=str(self.run_dir / "net"),
                             seed=self.options.seed,
                             tls=self.tls.switch() if self.tls is not None else None) as net:
            self.net = net
            self.control = FabricControl.over_grpc(
                self.topology, elems_k=self.options.elems_k, pool_size=self.options.pool_size,
                say=self.say, tls=self.tls.client() if self.tls is not None else None,
                sharing=self.options.sharing, shared_pairs=self.options.shared_pairs)
            self.say(f"scenario: network up and configured ({self.control.routes} routes) in "
                     f"{time.perf_counter() - started:.1f} s")
            if self.bar_wanted if self.bar_wanted is not None else sys.stderr.isatty():
                from tqdm import tqdm
                self._bar = tqdm(total=len(self.runs), unit="job", desc=self.scenario.name,
                                 leave=False)
            try:
                stop = self._timeline()
            finally:
                if self._bar is not None:
                    self._bar.close()
                for run in self.runs:
                    run.kill_agents()
                    run.stop_aggregators()
                for process in self.retired_agents:
                    if process.poll() is None:
                        process.kill()
                # they write their counters on SIGTERM: waited for, read by the job records
                stop_aggregators(self.retired_aggregators, self.say)
                for flow in self.flows.values():
                    flow.stop()
                self.control.close()
        result = self._result(stop, time.perf_counter() - started)
        if result.correct:           # agent configs and logs are kept only when a job failed
            shutil.rmtree(self.run_dir, ignore_errors=True)
        return result

    def _timeline(self) -> str:
        self.t0 = time.time()
        for index, event in enumerate(self.scenario.events):
            self.events.append(EventRecord(index, event.at_s, m.event_kind(event),
                                           m.describe(event)))
            self.event_jobs.append({})
            self.at(event.at_s, self._apply, index, event)
        for run in self.runs:
            if run.job.after is None:
                self.at(run.job.start_s, run.arrive)
        next_sample = next_links = 0.0
        limit = self.options.time_limit_s
        while not self._finished():
            now = self.now()
            if now > limit:
                for run in self.runs:
                    run.give_up(f"still running at the time limit ({limit:g} s)")
                return "time limit"
            while self._timers and self._timers[0][0] <= now:
                _, _, timer, action, args = heapq.heappop(self._timers)
                if not timer.cancelled:
                    action(*args)
            if now >= next_sample:
                self._sample(now)
                next_sample = now + SAMPLE_S
            if now >= next_links:
                if self.samples.keep_links():
                    self._sample_links(now)
                    self.samples.thin()
                next_links = now + LINK_SAMPLE_S
            due = min([self._timers[0][0]] if self._timers else [now + SAMPLE_S])
            try:
                run, gen, rank, message = self.messages.get(
                    timeout=max(0.0, min(due, next_sample) - self.now()))
            except queue.Empty:
                continue
            if rank is None:                  # one of its host aggregators
                run.aggregator_said(gen, message)
            else:
                run.message(gen, rank, message)
        self._sample(self.now())
        return "done"

    def _finished(self) -> bool:
        return all(run.state in ("done", "failed") for run in self.runs)

    def job_ended(self, run: "MininetJobRun") -> None:
        if self._bar is not None:
            self._bar.update(1)
        for other in self.runs:
            if other.job.after == run.job.name and other.state == "waiting":
                self.at(self.now() + other.job.start_s, other.arrive)

    # -- events -----------------------------------------------------------------------------------

    def _apply(self, index: int, event) -> None:
        record = self.events[index]
        now = self.now()
        record.at_s = now                       # when it really happened (wall)
        running = [run for run in self.runs if run.state == "running"]
        if isinstance(event, m.SlowWorker):
            running = [run for run in running if event.host in run.job.workers]
        for run in running:
            self.event_jobs[index][run.job.name] = now
            run.watch_recovery(now)
        detect = now + self.options.detection_s
        mininet = self.net.net
        if isinstance(event, (m.LinkDown, m.LinkUp)):
            mininet.configLinkStatus(event.a, event.b,
                                     "down" if isinstance(event, m.LinkDown) else "up")
            self.at(detect, self._failure_learnt if isinstance(event, m.LinkDown)
                    else self._repair_learnt, index, event)
        elif isinstance(event, m.SwitchCrash):
            switch = self.net.switch(event.switch)
            if switch.process is not None:
                try:
                    os.killpg(switch.process.pid, signal.SIGKILL)
                except ProcessLookupError:
                    pass
                # reaped aside: the kernel takes ~0.1 s to tear the process down, and the
                # timeline (the controller learning it) must not wait for that
                threading.Thread(target=switch.process.wait, daemon=True).start()
                switch.process = None
            self.at(detect, self._failure_learnt, index, event)
        elif isinstance(event, m.SwitchRestart):
            switch = self.net.switch(event.switch)
            if switch.process is not None:
                record.actions.append(f"{event.switch} was not down: nothing to do")
                return
            switch.launch()
            switch.wait_ready()
            record.actions.append(f"{event.switch}: process started again "
                                  f"({self.now() - now:.2f} s)")
            self.at(self.now() + self.options.detection_s, self._repair_learnt, index, event)
        elif isinstance(event, m.LinkChange):
            for intf in self._link_intfs(event.a, event.b):
                intf.config(bw=event.bw_mbps)
            record.actions.append(f"rate set to {event.bw_mbps:g} Mbit/s")
        elif isinstance(event, m.SlowWorker):
            self.compute_factor[event.host] = event.compute_factor
            if event.nic_factor != 1:
                link = self.topology.host_link(event.host)
                for intf in self._link_intfs(event.host, link.node):
                    intf.config(bw=self.scenario.network.bw_mbps / event.nic_factor)
            record.actions.append(f"{event.host}: compute x{event.compute_factor:g}, "
                                  f"NIC rate /{event.nic_factor:g}")
        elif isinstance(event, m.FlowStart):
            self.flows[event.name] = _Iperf(self, event, FLOW_PORT + 10 * len(self.flows))
            record.actions.append(f"flow {event.name} started (iperf3)")
        elif isinstance(event, m.FlowStop):
            flow = self.flows.get(event.name)
            if flow is not None:
                flow.stop()
                record.actions.append(f"flow {event.name} stopped")

    def _link_intfs(self, a: str, b: str) -> list:
        links = self.net.net.linksBetween(self.net.net.get(a), self.net.net.get(b))
        return [intf for link in links for intf in (link.intf1, link.intf2)]

    def _failure_learnt(self, index: int, event) -> None:
        failure_learnt(self, index, event)

    def _repair_learnt(self, index: int, event) -> None:
        repair_learnt(self, index, event)

    # -- samples ----------------------------------------------------------------------------------

    def _sample(self, now: float) -> None:
        if self.samples.keep_progress():
            self.samples.times_s.append(now)
            for run in self.runs:
                self.samples.progress.setdefault(run.job.name, []).append(
                    run.progress_fraction())
            self.samples.thin()

    def _sample_links(self, now: float) -> None:
        samples = self.samples
        previous = samples.link_times_s[-1] if samples.link_times_s else None
        samples.link_times_s.append(now)
        for link in self.topology.links:
            for src, dst in ((link.a, link.b), (link.b, link.a)):
                if src.node not in {s.name for s in self.topology.switches}:
                    continue
                name = f"{src.node}:{src.port}->{dst.node}:{dst.port}"
                try:
                    sent = int(Path(f"/sys/class/net/{src.node}-eth{src.port}/statistics/"
                                    f"tx_bytes").read_text())
                except (OSError, ValueError):
                    sent = self._link_bytes.get(name, 0)
                before = self._link_bytes.get(name)
                self._link_bytes[name] = sent
                series = samples.link_utilisation.get(name)
                if before is None or previous is None or not link.bw_mbps or now <= previous:
                    if series is not None:
                        series.append(0.0)
                    continue
                used = (sent - before) * 8 / (link.bw_mbps * 1e6) / (now - previous)
                if series is None:
                    if not used:
                        continue
                    series = samples.link_utilisation[name] = [0.0] * (
                        len(samples.link_times_s) - 1)
                series.append(used)

    # -- results ----------------------------------------------------------------------------------

    def _result(self, stop: str, wall: float) -> ScenarioResult:
        end = self.samples.times_s[-1] if self.samples.times_s else 0.0
        for record in self.events:
            if record.detected_s is None and not record.actions and record.at_s > end:
                record.actions.append("not reached: the scenario ended first")
        for index, record in enumerate(self.events):
            for name, acted in self.event_jobs[index].items():
                run = next(r for r in self.runs if r.job.name == name)
                after = run.first_progress_after(acted)
                record.recovery_s[name] = None if after is None else after - record.at_s
        flows = [FlowRecord(name, flow.spec.kind, flow.spec.sources, flow.spec.destination,
                            flow.started_at, flow.stopped_at, flow.bytes_delivered,
                            flow.goodput_mbps())
                 for name, flow in self.flows.items()]
        return ScenarioResult(
            name=self.scenario.name, net="mininet", seed=self.options.seed,
            jobs=[run.record() for run in self.runs],
            iterations=[it for run in self.runs for it in run.iterations], events=self.events,
            flows=flows, samples=self.samples, duration_s=end, wall_s=wall, stop=stop)


class _Timer:
    """A timeline action that can be called off (JobLife's give-up while waiting)."""

    cancelled = False

    def cancel(self) -> None:
        self.cancelled = True


class _Iperf:
    """A background flow as iperf3: one server per source on the destination (`-1`: it exits
    after its test and prints its JSON), one client per source."""

    def __init__(self, engine: MininetScenario, spec: m.FlowStart, base_port: int):
        self.engine, self.spec = engine, spec
        self.started_at = engine.now()
        self.stopped_at: float | None = None
        self.servers, self.clients = [], []
        net = engine.net
        destination = engine.topology.host(spec.destination).ip
        for i, source in enumerate(spec.sources):
            port = base_port + i
            self.servers.append(net.host(spec.destination).popen(
                ["iperf3", "-s", "-1", "-J", "-p", str(port)], stdout=subprocess.PIPE,
                stderr=subprocess.DEVNULL, text=True))
            time.sleep(0.05)
            command = ["iperf3", "-c", destination, "-p", str(port), "-J"]
            if spec.kind == "udp":
                command += ["-u", "-b", f"{spec.rate_mbps}M", "-l", "1472", "-t", "86400"]
            elif spec.size_bytes is not None:
                command += ["-n", str(spec.size_bytes)]
            else:
                command += ["-t", "86400"]
            self.clients.append(net.host(source).popen(
                command, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL))
        self.bytes_delivered = 0

    def stop(self) -> None:
        if self.stopped_at is not None:
            return
        self.stopped_at = self.engine.now()
        for client in self.clients:
            if client.poll() is None:
                client.send_signal(signal.SIGINT)
        for client in self.clients:
            try:
                client.wait(timeout=5)
            except subprocess.TimeoutExpired:
                client.kill()
        total = 0
        for server in self.servers:
            try:
                out, _ = server.communicate(timeout=5)
                total += _received_bytes(json.loads(out))
            except (subprocess.TimeoutExpired, json.JSONDecodeError, ValueError):
                server.kill()
                server.wait()
        self.bytes_delivered = total

    def goodput_mbps(self) -> float:
        ran = (self.stopped_at or self.engine.now()) - self.started_at
        return self.bytes_delivered * 8 / ran / 1e6 if ran > 0 else 0.0


def _received_bytes(report: dict) -> int:
    end = report.get("end", {})
    for key in ("sum_received", "sum"):
        if isinstance(end.get(key), dict) and "bytes" in end[key]:
            return int(end[key]["bytes"])
    return 0
