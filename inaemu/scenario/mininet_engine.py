"""A scenario on Mininet (`inaemu scenario FILE --net mininet`, root).

The same timeline as the simulator's (inaemu/scenario/sim_engine.py, docs/scenarios.md), on
real processes and the wall clock: the topology on Mininet with one `inaemu switch` per switch,
the controller (`FabricControl.over_grpc`) holding a P4Runtime session with each for the whole
scenario, and per job one `hosts.scenario_agent` process per worker, driven over its stdin and
stdout: the engine holds the iteration barrier (`go` when every worker has the last sum) and
reads each call's result, its check against the reference, and progress. Events act on the
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
from dataclasses import replace
from pathlib import Path
from typing import Callable

from inaemu.experiment.host_aggregators import learn_aggregator, stop_aggregators
from inaemu.scenario import model as m
from inaemu.scenario.fabric_control import FabricControl, Placement
from inaemu.scenario.reactions import failure_learnt, repair_learnt
from inaemu.scenario.results import (EventRecord, FlowRecord, IterationRecord,
                                     Samples, ScenarioResult)
from inaemu.scenario.job_life import JobLife
from inaemu.scenario.mininet_aggregators import PlacementAggregators
from inaemu.workload import graph as _g

Say = Callable[[str], None]
PROJECT_ROOT = Path(__file__).resolve().parents[2]
RING_PORT = 47100            # + the job's generation: each agent set listens on its own port
SAMPLE_S = 0.01              # progress samples (wall)
LINK_SAMPLE_S = 0.05
FLOW_PORT = 5300
CALL_TIMEOUT_S = 60.0


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


class MininetJobRun(JobLife):
    """One job on Mininet: its agents, one set per placement (generation)."""

    def __init__(self, engine: MininetScenario, job: m.Job, index: int):
        super().__init__(engine, job, index)
        self.iteration = 0
        self.generation = 0
        self.agents: dict[int, subprocess.Popen] = {}
        self.ready: set[int] = set()
        self.done: dict[int, dict] = {}
        self.restarted_call = False
        self.received: dict[int, float] = {}      # rank -> KiB in the current generation
        self.counted = 0.0                        # KiB of earlier generations
        self._went = False                        # this generation's first call was started
        # hashed sharing: each placement's host aggregators
        self.aggregators = PlacementAggregators(self)

    # -- JobLife's hooks --------------------------------------------------------------------------

    def _start_work(self) -> None:
        self._start_agents()

    def _placed(self, placement: Placement) -> None:
        for rank, host in enumerate(self.job.workers):     # the aggregator answers no ARP
            learn_aggregator(self.engine.net.host(host), placement.addresses[rank])
        self.stop_aggregators()
        if placement.sharing == "hashed":
            self._start_aggregators(placement)

    def _start_aggregators(self, placement: Placement) -> None:
        engine, options = self.engine, self.engine.options
        self.aggregators.start(
            engine.net, engine.topology, placement, k=options.elems_k,
            pool_size=options.pool_size,
            prefix=engine.run_dir / f"{self.job.name}-p{placement.p4_job}-aggregator",
            messages=engine.messages)

    def stop_aggregators(self) -> None:
        self.aggregators.stop(self.engine.retired_aggregators)

    def aggregator_said(self, p4_job: int, message: dict) -> None:
        """A host aggregator of placement `p4_job` listens, or has exited."""
        if "exited" in message:
            last = self.aggregators.stopped_one(p4_job)
            if last is not None:                        # told to stop: it did
                if last:
                    engine = self.engine
                    engine.say(f"{engine.stamp(engine.now())}  job {self.job.name}: the host "
                               f"aggregators of P4 job {p4_job} have stopped")
                return
        if self.placement is None or p4_job != self.placement.p4_job or \
                self.state != "running":
            return                                  # an earlier placement's, or the job ended
        if "listening" in message:
            self.aggregators.listens(message["listening"])
            self._go_when_ready()
        elif "exited" in message:
            spec = self.aggregators.specs[message["exited"]]
            self._fail(f"its host aggregator on {spec.host} exited with status "
                       f"{message['status']} (log in {spec.stats.with_suffix('.log')})")

    def host_chunks(self) -> int | None:
        return self.aggregators.host_chunks()

    def _go_when_ready(self) -> None:
        """The generation's first call starts when every agent is ready and every host
        aggregator of the placement listens (a chunk sent to one not yet bound is lost)."""
        if self._went or len(self.ready) < len(self.job.workers) or \
                not self.aggregators.all_listen():
            return
        self._went = True
        self._go()

    def _stop_calls(self) -> None:
        self.kill_agents()
        self.stop_aggregators()
        self.generation += 1          # what the killed agents still say is ignored
        self.counted = self.progress_units()
        self.received = {}

    def _restart_calls(self) -> None:
        self.restarted_call = True    # the call again, without its compute
        self._start_agents()

    def progress_units(self) -> float:
        return self.counted + sum(self.received.values())

    def _call_deadline_s(self) -> float:
        """One call's hard deadline (stalls are caught sooner: INA's retransmission limit, the
        ring's idle timeout): CALL_TIMEOUT_S plus, for big calls on slow links, 8x the time of
        moving 2n times the largest call over one link (a parameter server moves n)."""
        workload = self.job.workload
        largest = max(workload.allreduce_bytes()) if hasattr(workload, "allreduce_bytes") \
            else workload.size_bytes
        bw_mbps = self.engine.scenario.network.bw_mbps or 1000.0
        n = len(self.job.workers)
        return CALL_TIMEOUT_S + 8 * 2 * n * largest * 8 / (bw_mbps * 1e6)

    def _start_agents(self) -> None:
        engine = self.engine
        self.generation += 1
        self.ready, self.done, self.received = set(), {}, {}
        self._went = False
        options = engine.options
        n = len(self.job.workers)
        topology = engine.topology
        ring_port = RING_PORT + self.generation % 100 + 100 * self.index
        for rank, host in enumerate(self.job.workers):
            length = getattr(self.job.workload, "size_bytes", 4) // 4   # graphs: per call
            config = {"algo": self.algo, "rank": rank, "length": length,
                      "seed_base": options.seed * 1_000_003 + self.index,
                      "n": n, "timeout": self._call_deadline_s()}
            if self.algo == "ina":
                config.update(job=self.placement.p4_job,
                              worker=self.placement.worker_ids[rank],
                              aggregator=self.placement.addresses[rank], k=options.elems_k,
                              pool_size=options.pool_size, rto=0.02, rto_max=0.5,
                              max_retx=12)
                if self.placement.sharing != "static":     # docs/protocol.md §3.3
                    config.update(sharing=self.placement.sharing)
            else:
                config.update(job=self.index, worker=rank,
                              peers=[f"{topology.host(h).ip}:{ring_port}"
                                     for h in self.job.workers], idle_timeout=10.0)
                if self.algo == "hring":       # ranks grouped by their switch
                    blocks: dict[str, list[int]] = {}
                    for r, h in enumerate(self.job.workers):
                        blocks.setdefault(topology.host_link(h).node, []).append(r)
                    config.update(switch_blocks=list(blocks.values()))
            path = engine.run_dir / f"{self.job.name}-g{self.generation}-w{rank}.json"
            path.write_text(json.dumps(config))
            log = (engine.run_dir / f"{path.stem}.log").open("wb")
            try:
                process = engine.net.host(host).popen(
                    [sys.executable, "-m", "hosts.scenario_agent", "--config", str(path)],
                    stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=log,
                    cwd=str(PROJECT_ROOT), text=True, bufsize=1)
            finally:
                log.close()
            self.agents[rank] = process
            threading.Thread(target=_read_agent, daemon=True,
                             args=(engine.messages, self, self.generation, rank,
                                   process)).start()

    def kill_agents(self) -> None:
        for process in self.agents.values():
            if process.poll() is None:
                process.kill()
            try:
                process.wait(timeout=5)
            except subprocess.TimeoutExpired:
                pass
            _close_quietly(process.stdin)  # stdout: its reader closes it at the end of file
        self.agents = {}

    def _release(self) -> None:
        """The job is over: its agents, told to stop, exit on their own (their readers reap
        them); their pipes are closed now, so a long scenario does not collect descriptors
        and processes job after job. Any still running at the scenario's end are killed."""
        retired = self.engine.retired_agents
        retired[:] = [process for process in retired if process.poll() is None]
        for process in self.agents.values():
            _close_quietly(process.stdin)
            retired.append(process)
        self.agents = {}
        self.stop_aggregators()

    def _go(self) -> None:
        engine = self.engine
        now = engine.now()
        if self._current is None:
            self._current = IterationRecord(self.job.name, self.iteration, self.algo, now, now,
                                            None, None, True, 0)
            self._units_at_start = self.progress_units()
        for rank, host in enumerate(self.job.workers):
            compute = 0.0 if self.restarted_call else \
                self.job.workload.compute_s * engine.compute_factor.get(host, 1.0)
            self._send(rank, {"go": self.iteration, "compute_s": compute})
        self.restarted_call = False

    def _send(self, rank: int, command: dict) -> None:
        process = self.agents.get(rank)
        if process is None or process.poll() is not None:
            return
        try:
            process.stdin.write(json.dumps(command) + "\n")
            process.stdin.flush()
        except (BrokenPipeError, OSError):
            pass

    def message(self, generation: int, rank: int, message: dict) -> None:
        if generation != self.generation or self.state != "running":
            return                                  # an earlier placement's agents
        engine = self.engine
        if "ready" in message:
            self.ready.add(rank)
            self._go_when_ready()
        elif "progress" in message:
            self.received[rank] = message["progress"] / 1024
            self.note_progress(message["t"] - engine.t0, self.progress_units())
        elif "started" in message:
            if self._current is not None:
                self._current.compute_done_s = max(self._current.compute_done_s,
                                                   message["t"] - engine.t0)
        elif "done" in message:
            self.done[rank] = message
            self.retransmissions += message.get("retransmissions", 0)
            self._current.retransmissions += message.get("retransmissions", 0)
            if not message.get("correct"):
                self._correct = False
                self._current.correct = False
            if len(self.done) == len(self.job.workers):
                self._iteration_done(max(d["t"] for d in self.done.values()) - engine.t0)
        elif "error" in message:
            self._fail(f"iteration {self.iteration}, worker {rank} "
                       f"({self.job.workers[rank]}): {message['error']}")
        elif "eof" in message and rank not in self.done and self.state == "running":
            self._fail(f"worker {rank} ({self.job.workers[rank]}) exited with status "
                       f"{message['status']} (log in {engine.run_dir})")

    def _iteration_done(self, at: float) -> None:
        self._close_record(at)
        self.done = {}
        self.iteration += 1
        if self.iteration >= self.job.workload.iterations:
            for rank in self.agents:
                self._send(rank, {"stop": True})
            self._finish()
        else:
            self._go()

    # -- progress ---------------------------------------------------------------------------------

    def progress_fraction(self) -> float:
        done = float(len(self.iterations))
        if self.state != "running" or self._current is None:
            return done
        n, size = len(self.job.workers), self.job.workload.size_bytes
        expected = {"ina": n * size / 1024, "ring": 2 * (n - 1) * size / 1024}.get(self.algo)
        if expected:
            share = (self.progress_units() - self._units_at_start) / expected
        else:
            share = len(self.done) / n
        return done + min(0.999, max(0.0, share))


def _prefetch_budget(ranks: int) -> int:
    """Bytes of inputs each agent of a workload may draw before its graph starts: a quarter of
    the memory available now, shared by the ranks (each also holds its call's result)."""
    try:
        for line in open("/proc/meminfo"):
            if line.startswith("MemAvailable:"):
                return int(line.split()[1]) * 1024 // (4 * max(1, ranks))
    except (OSError, ValueError, IndexError):
        pass
    return 0


def _read_agent(messages: queue.Queue, run: MininetJobRun, generation: int, rank: int,
                process: subprocess.Popen) -> None:
    """An agent's stdout lines onto the engine's queue; its end as an `eof` message."""
    with process.stdout:
        for line in process.stdout:
            try:
                message = json.loads(line)
            except json.JSONDecodeError:
                continue
            messages.put((run, generation, rank, message))
    messages.put((run, generation, rank, {"eof": True, "status": process.wait()}))


def _close_quietly(pipe) -> None:
    try:
        if pipe is not None:
            pipe.close()
    except OSError:                 # a flush into a pipe whose reader has gone
        pass


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


class MininetGraphRun(MininetJobRun):
    """A workload graph's job on Mininet: each agent runs its rank's graph (compute slept on
    one thread, collectives in issue order on another: hosts/scenario_agent.py); the engine
    collects each call's results and the ranks' timelines. After a re-plan the graph starts
    over on the new placement."""

    def __init__(self, engine, job, index):
        super().__init__(engine, job, index)
        self.graph = job.workload
        self.sizes = self.graph.allreduce_bytes()
        self.call_reports: dict[int, dict[int, dict]] = {}
        self.finished_ranks: dict[int, dict] = {}
        self.started_t: float | None = None
        self.prepared: set[int] = set()

    def _go(self) -> None:
        engine = self.engine
        self.prepared = set()
        prefetch = _prefetch_budget(len(self.job.workers))
        for rank_graph in self.graph.ranks:
            nodes = [{"id": n.id, "kind": "compute" if isinstance(n, _g.Compute) else n.kind,
                      "duration_s": getattr(n, "duration_s", 0.0),
                      "size_bytes": getattr(n, "size_bytes", 0), "deps": list(n.deps),
                      "name": n.name} for n in rank_graph.nodes]
            host = self.job.workers[rank_graph.rank]
            self._send(rank_graph.rank, {
                "graph": nodes, "calls": [c.id for c in rank_graph.collectives()],
                "compute_factor": engine.compute_factor.get(host, 1.0),
                "prefetch_bytes": prefetch})

    def message(self, generation: int, rank: int, message: dict) -> None:
        if generation != self.generation or self.state != "running":
            return
        engine = self.engine
        if "prepared" in message:                 # every rank has drawn its inputs: begin
            self.prepared.add(rank)
            if len(self.prepared) == len(self.job.workers):
                for r in self.agents:
                    self._send(r, {"begin": True})
        elif "call_done" in message:
            call = message["call_done"]
            reports = self.call_reports.setdefault(call, {})
            reports[rank] = message
            self.retransmissions += message.get("retransmissions", 0)
            if len(reports) == len(self.job.workers):
                issued = max(r["started_t"] for r in reports.values()) - engine.t0
                ended = max(r["t"] for r in reports.values()) - engine.t0
                same = len({r["digest"] for r in reports.values()}) == 1
                self.iterations.append(IterationRecord(
                    self.job.name, call, self.algo, issued, issued, ended, ended - issued,
                    same, sum(r.get("retransmissions", 0) for r in reports.values()),
                    error=None if same else "the ranks' results differ"))
        elif "graph_done" in message:
            self.finished_ranks[rank] = message
            if len(self.finished_ranks) == len(self.job.workers):
                self._apply_checks()
                for r in self.agents:
                    self._send(r, {"stop": True})
                self._finish()
        elif "started" in message and self.started_t is None:
            self.started_t = message["t"]
        else:
            super().message(generation, rank, message)

    def _apply_checks(self) -> None:
        """Each call's record: correct when its ranks' digests agree and the rank that checked
        it against the float64 sum (call index modulo ranks) found it within the bound."""
        checks = {int(call): (rank, fields) for rank, report in self.finished_ranks.items()
                  for call, fields in report.get("checks", {}).items()}
        for position, record in enumerate(self.iterations):
            rank, fields = checks.get(record.iteration, (None, None))
            if fields is None:
                record = replace(record, correct=False, error="no rank checked this call")
            elif not fields.get("correct"):
                record = replace(record, correct=False, error=(
                    f"rank {rank}: max error {fields.get('max_abs_error'):.3g} beyond the "
                    f"bound {fields.get('error_bound'):.3g}"))
            self.iterations[position] = record
            if not record.correct:
                self._correct = False

    def _restart_calls(self) -> None:
        """A re-planned graph starts over on the new placement (its agents, which knew how far
        each rank had gone, were killed): its records are those of the last attempt."""
        self.call_reports, self.finished_ranks = {}, {}
        self.iterations = []
        super()._restart_calls()

    def calls_planned(self) -> int:
        return len(self.sizes)

    def progress_fraction(self) -> float:
        return len(self.iterations) / max(1, len(self.sizes))

    def workload_summary(self) -> dict | None:
        if not self.finished_ranks:
            return None
        began = min(r["began_t"] for r in self.finished_ranks.values())
        end = max(r["t"] for r in self.finished_ranks.values())
        compute = max(r["compute_s"] for r in self.finished_ranks.values())
        return {"name": self.graph.name, "source": self.graph.source, "time_s": end - began,
                "compute_s": compute, "exposed_comm_s": max(0.0, end - began - compute),
                "calls": len(self.iterations),
                "bytes_on_wire": sum(r.get("bytes_sent", 0) for r in self.finished_ranks.values()),
                "comm_s": sum(it.allreduce_s or 0.0 for it in self.iterations),
                "timeline": {rank: [tuple(span) for span in report["timeline"]]
                             for rank, report in self.finished_ranks.items()}}
