"""One job's life on Mininet (`inaemu scenario FILE --net mininet`): its worker agents.

Per placement (a *generation*) the job starts one `hosts.scenario_agent` process per worker in
its host's namespace and drives it over stdin/stdout, one JSON object per line: a config file
names the algorithm, the rank and the placement; the engine says `go` for each iteration (with
its compute time) or sends a workload graph, and the agents answer `ready`, `progress`,
`started`, `done` or `error`, read by one thread per agent onto the engine's queue. With
hashed sharing the placement's host aggregators start with it. What the controller does with
the job (arrival, placement, re-plan, give-up) is JobLife's (inaemu/scenario/job_life.py); the
timeline, events and samples around it are the engine's (inaemu/scenario/mininet_engine.py),
as sim_job.py is to sim_engine.py on the simulator.
"""

from __future__ import annotations

import json
import queue
import subprocess
import sys
import threading
from dataclasses import replace
from pathlib import Path

from inaemu.experiment.host_aggregators import learn_aggregator
from inaemu.scenario import model as m
from inaemu.scenario.fabric_control import Placement
from inaemu.scenario.job_life import JobLife
from inaemu.scenario.mininet_aggregators import PlacementAggregators
from inaemu.scenario.results import IterationRecord
from inaemu.workload import graph as _g

PROJECT_ROOT = Path(__file__).resolve().parents[2]
RING_PORT = 47100            # + the job's generation: each agent set listens on its own port
CALL_TIMEOUT_S = 60.0


class MininetJobRun(JobLife):
    """One job on Mininet: its agents, one set per placement (generation)."""

    def __init__(self, engine, job: m.Job, index: int):
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
