"""A job that runs a workload graph (inaemu/workload/graph.py) on the simulator.

Each rank runs its compute nodes one at a time on its compute stream, in dependency order, and
issues its collectives when their dependencies are done; compute goes on while collectives
run (DDP's overlap of backward and gradient all-reduce). The job runs its collectives one at
a time, in the order the ranks issue them (one communication stream, as NCCL runs DDP's bucket
all-reduces): call c opens when call c-1 has ended at every rank, and each rank's part starts
once it has issued c. Calls are the all-reduces of `JobRun` (the same INA sessions, placements,
re-plans and checks); what differs is when they start and what follows them.
"""

from __future__ import annotations

import heapq

from inaemu.scenario.sim_job import JobRun, _Worker
from inaemu.workload import graph as g


class _RankState:
    """Where one rank is in its graph."""

    def __init__(self, rank_graph: g.RankGraph):
        self.graph = rank_graph
        self.nodes = {n.id: n for n in rank_graph.nodes}
        self.waiting = {n.id: set(n.deps) for n in rank_graph.nodes}
        self.users: dict[int, list[int]] = {}
        for node in rank_graph.nodes:
            for dep in node.deps:
                self.users.setdefault(dep, []).append(node.id)
        self.calls = [c.id for c in rank_graph.collectives()]   # call index -> node id
        self.ready_compute: list[int] = []
        self.issued: set[int] = set()       # call indices issued
        self.finished: set[int] = set()     # node ids done
        self.busy = False
        self.compute_s = 0.0
        # what the rank did, for the iteration plot: (kind, name, start, end)
        self.timeline: list[tuple[str, str, float, float]] = []
        self.call_started: dict[int, float] = {}


class GraphJobRun(JobRun):
    """`JobRun` whose calls are a workload graph's collectives, overlapped with its compute."""

    def __init__(self, engine, job, index):
        super().__init__(engine, job, index)
        self.graph: g.Workload = job.workload
        self.ranks = [_RankState(rg) for rg in self.graph.ranks]
        self.sizes = self.graph.allreduce_bytes()
        self.call = -1                       # the call open now (-1: none yet)
        self.started_s: float | None = None

    # -- the graph --------------------------------------------------------------------------------

    def _begin_iteration(self) -> None:
        """Arrival: every rank starts on the nodes with no dependencies."""
        self.started_s = self.engine.loop.now
        for worker, rank in zip(self.workers, self.ranks):
            for node_id, deps in rank.waiting.items():
                if not deps:
                    self._ready(worker, rank, node_id)
            self._run_compute(worker, rank)
        self._open_next_call()

    def _ready(self, worker: _Worker, rank: _RankState, node_id: int) -> None:
        node = rank.nodes[node_id]
        if isinstance(node, g.Compute):
            heapq.heappush(rank.ready_compute, node_id)
        else:
            call = rank.calls.index(node_id)
            rank.issued.add(call)
            if call == self.call:
                self._note_issued()
            if call == self.call and self.state == "running" and self.suspended is None:
                self._start_allreduce(worker)

    def _run_compute(self, worker: _Worker, rank: _RankState) -> None:
        if rank.busy or not rank.ready_compute or self.state != "running":
            return
        node = rank.nodes[heapq.heappop(rank.ready_compute)]
        rank.busy = True
        factor = self.engine.compute_factor.get(worker.host, 1.0)
        seconds = node.duration_s * factor
        rank.compute_s += seconds
        now = self.engine.loop.now
        rank.timeline.append(("compute", node.name or f"node {node.id}", now, now + seconds))
        worker.computing = self.engine.loop.at(now + seconds, self._compute_done, worker, rank,
                                               node.id)

    def _compute_done(self, worker: _Worker, rank: _RankState, node_id: int) -> None:
        worker.computing = None
        rank.busy = False
        self._node_done(worker, rank, node_id)
        self._run_compute(worker, rank)

    def _node_done(self, worker: _Worker, rank: _RankState, node_id: int) -> None:
        rank.finished.add(node_id)
        for user in rank.users.get(node_id, ()):
            rank.waiting[user].discard(node_id)
            if not rank.waiting[user]:
                self._ready(worker, rank, user)
        if all(len(r.finished) == len(r.nodes) for r in self.ranks) and self.state == "running":
            self._finish()

    # -- calls ------------------------------------------------------------------------------------

    def _open_next_call(self) -> None:
        """Call c+1: its inputs, reference and record; ranks that issued it start."""
        self.call += 1
        if self.call >= len(self.sizes):
            return
        self.iteration = self.call              # JobRun's calls are keyed by it
        self._open_call(self.sizes[self.call])
        self._note_issued()
        if self.suspended is not None:        # placed again (and started) on a repair
            return
        for worker, rank in zip(self.workers, self.ranks):
            worker.done = False
            if self.call in rank.issued:
                self._start_allreduce(worker)
            elif self.algo != "ina":
                self._open_app(worker)

    def _start_allreduce(self, worker: _Worker) -> None:
        self.ranks[worker.rank].call_started.setdefault(self.call, self.engine.loop.now)
        super()._start_allreduce(worker)

    def _note_issued(self) -> None:
        """The open call's record: it could run from when the last rank issued it."""
        if self._current is not None and all(self.call in r.issued for r in self.ranks):
            self._current.compute_done_s = max(self._current.started_s, self.engine.loop.now)

    def _in_call(self, worker: _Worker) -> bool:
        return self.call in self.ranks[worker.rank].issued and not worker.done

    def _iteration_done(self) -> None:
        """The open call ended at every rank: its node is done everywhere, the next opens."""
        self._close_ended_apps()
        current = self._close_call()
        now = current.ended_s
        call = self.call
        for worker, rank in zip(self.workers, self.ranks):
            worker.app = None
            began = rank.call_started.get(call, current.compute_done_s)
            rank.timeline.append(("all_reduce", f"bucket {call}", began, now))
        self._open_next_call()
        for worker, rank in zip(self.workers, self.ranks):
            self._node_done(worker, rank, rank.calls[call])
            self._run_compute(worker, rank)

    # -- results ----------------------------------------------------------------------------------

    def progress_fraction(self) -> float:
        total = sum(len(r.nodes) for r in self.ranks)
        done = sum(len(r.finished) for r in self.ranks)
        return done / total if total else 0.0

    def calls_planned(self) -> int:
        return len(self.sizes)

    def workload_summary(self) -> dict:
        return {"name": self.graph.name, "source": self.graph.source, **self.summary(),
                "timeline": {r.graph.rank: r.timeline for r in self.ranks}}

    def summary(self) -> dict:
        """The run's time, the busiest rank's compute, the communication it did not hide."""
        end = self.ended_s if self.ended_s is not None else self.engine.loop.now
        elapsed = end - (self.started_s or 0.0)
        compute = max(r.compute_s for r in self.ranks)
        hosts = self.engine.net.hosts
        return {"time_s": elapsed, "compute_s": compute,
                "exposed_comm_s": max(0.0, elapsed - compute),
                "bytes_on_wire": sum(hosts[h].counters.bytes_sent for h in self.job.workers),
                "calls": len(self.iterations),
                "comm_s": sum(it.allreduce_s or 0.0 for it in self.iterations)}
