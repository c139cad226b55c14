"""The α-β-γ model with overlap: a workload graph's time when its collectives overlap compute.

Each rank runs its compute nodes one at a time in dependency order; the job runs its
collectives one at a time in issue order, call c from when every rank has issued it and call
c-1 has ended, for `allreduce_s(size_bytes)` seconds (the per-call prediction of
inaemu.model.predict); a rank's collective node ends with its call. The same schedule the
simulator runs (inaemu/scenario/graph_run.py), with predicted call times in place of packets,
so the model and a run differ only where the network does something the α-β-γ terms leave out.
"""

from __future__ import annotations

import heapq
from typing import Callable

from inaemu.workload import graph as g


def predict_workload(workload: g.Workload, allreduce_s: Callable[[int], float],
                     compute_factor: dict[int, float] | None = None) -> dict:
    """{time_s, compute_s, exposed_comm_s, comm_s, calls: [(start, end)]} of `workload`
    (rank r's compute scaled by compute_factor[r])."""
    factor = compute_factor or {}
    ranks = [_Rank(rg, factor.get(rg.rank, 1.0)) for rg in workload.ranks]
    sizes = workload.allreduce_bytes()
    calls: list[tuple[float, float]] = []
    free_at = 0.0                                  # when the communication stream is free
    for c, size in enumerate(sizes):
        issued = [rank.run_until_issued(c) for rank in ranks]
        start = max(max(issued), free_at)
        end = start + allreduce_s(size)
        calls.append((start, end))
        free_at = end
        for rank in ranks:
            rank.call_done(c, end)
    finish = max(rank.run_to_end() for rank in ranks)
    compute = max(rank.compute_s for rank in ranks)
    return {"time_s": finish, "compute_s": compute,
            "exposed_comm_s": max(0.0, finish - compute),
            "comm_s": sum(end - start for start, end in calls), "calls": calls}


class _Rank:
    """One rank's graph played forward: compute in dependency order (ties by id) on one
    stream; a collective node ends when `call_done` says its call ended."""

    def __init__(self, rank_graph: g.RankGraph, factor: float):
        self.nodes = {n.id: n for n in rank_graph.nodes}
        self.waiting = {n.id: set(n.deps) for n in rank_graph.nodes}
        self.users: dict[int, list[int]] = {}
        for node in rank_graph.nodes:
            for dep in node.deps:
                self.users.setdefault(dep, []).append(node.id)
        self.calls = [c.id for c in rank_graph.collectives()]
        self.factor = factor
        self.ready = [i for i, deps in self.waiting.items() if not deps]
        heapq.heapify(self.ready)
        self.issued: dict[int, float] = {}         # call index -> when issued
        self.done_at: dict[int, float] = {}        # node id -> when it ended
        self.stream_free = 0.0
        self.compute_s = 0.0
        self.pending_ready: dict[int, float] = {i: 0.0 for i in self.ready}

    def _complete(self, node_id: int, at: float) -> None:
        self.done_at[node_id] = at
        for user in self.users.get(node_id, ()):
            self.waiting[user].discard(node_id)
            if not self.waiting[user]:
                heapq.heappush(self.ready, user)
                self.pending_ready[user] = at

    def _step(self) -> bool:
        """Run the next ready node; False if none is ready."""
        if not self.ready:
            return False
        node = self.nodes[heapq.heappop(self.ready)]
        ready_at = self.pending_ready.pop(node.id, 0.0)
        if isinstance(node, g.Compute):
            start = max(ready_at, self.stream_free)
            seconds = node.duration_s * self.factor
            self.stream_free = start + seconds
            self.compute_s += seconds
            self._complete(node.id, self.stream_free)
        else:
            self.issued[self.calls.index(node.id)] = ready_at
        return True

    def run_until_issued(self, call: int) -> float:
        while call not in self.issued:
            if not self._step():
                raise g.WorkloadError(f"call {call} is never issued")
        return self.issued[call]

    def call_done(self, call: int, at: float) -> None:
        self._complete(self.calls[call], at)

    def run_to_end(self) -> float:
        while self._step():
            pass
        return max(self.done_at.values(), default=0.0)
