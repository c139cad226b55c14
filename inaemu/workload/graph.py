"""A workload as data: per rank, a graph of compute and collective nodes (docs/workloads.md).

What one training iteration (or any run) does on each rank: compute nodes with a duration,
collective nodes (an all-reduce of a number of bytes; other collectives are refused by name),
and the dependencies between them. The same shape as an MLCommons Chakra execution trace's
COMP and COMM_COLL nodes, so Chakra files read into it and a run writes back out of it
(inaemu/workload/chakra.py); the built-in model workloads (inaemu/workload/models.py) make
it from real models' parameters with DDP's bucketing.
"""

from __future__ import annotations

from dataclasses import dataclass, field

COLLECTIVES = ("all_reduce",)        # what the engines run; others are refused by name
KNOWN_COLLECTIVES = ("all_reduce", "all_gather", "reduce_scatter", "reduce_scatter_block",
                     "all_to_all", "broadcast", "reduce", "gather", "scatter", "barrier")


class WorkloadError(ValueError):
    """A workload that cannot run; the message names the rank, node and reason."""


@dataclass(frozen=True)
class Compute:
    """A compute node: `duration_s` of work on the rank's one compute stream."""

    id: int
    duration_s: float
    deps: tuple[int, ...] = ()
    name: str = ""


@dataclass(frozen=True)
class Collective:
    """A collective node: `kind` over all ranks, `size_bytes` per rank (all_reduce: of float32
    values)."""

    id: int
    kind: str
    size_bytes: int
    deps: tuple[int, ...] = ()
    name: str = ""


Node = Compute | Collective


@dataclass(frozen=True)
class RankGraph:
    """One rank's nodes; dependencies point at nodes of the same rank."""

    rank: int
    nodes: tuple[Node, ...]

    def __post_init__(self) -> None:
        ids = [n.id for n in self.nodes]
        if len(set(ids)) != len(ids):
            raise WorkloadError(f"rank {self.rank}: two nodes share an id")
        known = set(ids)
        for node in self.nodes:
            where = f"rank {self.rank}, node {node.id} ({node.name or type(node).__name__})"
            missing = [d for d in node.deps if d not in known]
            if missing:
                raise WorkloadError(f"{where}: depends on missing node(s) {missing}")
            if isinstance(node, Compute) and not node.duration_s >= 0:
                raise WorkloadError(f"{where}: duration must be >= 0, got {node.duration_s!r}")
            if isinstance(node, Collective):
                if node.kind not in COLLECTIVES:
                    what = "not supported yet" if node.kind in KNOWN_COLLECTIVES \
                        else "unknown"
                    raise WorkloadError(f"{where}: collective {node.kind!r} is {what} "
                                        f"(supported: {', '.join(COLLECTIVES)})")
                if node.size_bytes < 4 or node.size_bytes % 4:
                    raise WorkloadError(f"{where}: an all-reduce of {node.size_bytes} bytes "
                                        "is not whole float32 values")
        self.order()                     # refuses cycles

    def order(self) -> list[Node]:
        """The nodes in a dependency order (ties by id); WorkloadError on a cycle."""
        by_id = {n.id: n for n in self.nodes}
        waiting = {n.id: set(n.deps) for n in self.nodes}
        ready = sorted(i for i, d in waiting.items() if not d)
        out = []
        users: dict[int, list[int]] = {}
        for n in self.nodes:
            for d in n.deps:
                users.setdefault(d, []).append(n.id)
        import heapq
        heapq.heapify(ready)
        while ready:
            current = heapq.heappop(ready)
            out.append(by_id[current])
            for user in users.get(current, ()):
                waiting[user].discard(current)
                if not waiting[user]:
                    heapq.heappush(ready, user)
        if len(out) != len(self.nodes):
            stuck = sorted(i for i, d in waiting.items() if d)
            raise WorkloadError(f"rank {self.rank}: dependencies form a cycle (nodes {stuck[:8]})")
        return out

    def collectives(self) -> list[Collective]:
        """The rank's collectives in the order it issues them (dependency order)."""
        return [n for n in self.order() if isinstance(n, Collective)]


@dataclass(frozen=True)
class Workload:
    """Every rank's graph, and where its numbers come from (`source`, for the record)."""

    name: str
    ranks: tuple[RankGraph, ...]
    source: str = ""
    meta: dict = field(default_factory=dict, compare=False, hash=False)

    def __post_init__(self) -> None:
        if not self.ranks:
            raise WorkloadError(f"{self.name}: no ranks")
        if [g.rank for g in self.ranks] != list(range(len(self.ranks))):
            raise WorkloadError(f"{self.name}: ranks must be 0..{len(self.ranks) - 1} in order")
        first = [(c.kind, c.size_bytes) for c in self.ranks[0].collectives()]
        for graph in self.ranks[1:]:
            mine = [(c.kind, c.size_bytes) for c in graph.collectives()]
            if mine != first:
                at = next((i for i, (a, b) in enumerate(zip(first, mine)) if a != b),
                          min(len(first), len(mine)))
                raise WorkloadError(
                    f"{self.name}: rank {graph.rank}'s collectives differ from rank 0's at the "
                    f"{at}th ({mine[at] if at < len(mine) else 'none'} vs "
                    f"{first[at] if at < len(first) else 'none'}): every rank must issue the "
                    f"same collectives in the same order")

    @property
    def n(self) -> int:
        return len(self.ranks)

    def total_compute_s(self, rank: int = 0) -> float:
        return sum(n.duration_s for n in self.ranks[rank].nodes if isinstance(n, Compute))

    def allreduce_bytes(self) -> list[int]:
        return [c.size_bytes for c in self.ranks[0].collectives()]


def ddp_iteration(rank: int, forward_s: float, buckets: list[tuple[float, int]],
                  optimizer_s: float = 0.0, first_id: int = 0) -> list[Node]:
    """One DDP iteration on one rank: forward, then per bucket the backward compute that makes
    its gradients ready and its all-reduce (issued as soon as that compute ends), then the
    optimizer step once every all-reduce is done. `buckets`: (backward seconds, bytes) in the
    order DDP fills them (the last layers first)."""
    nodes: list[Node] = []
    next_id = first_id
    forward = Compute(next_id, forward_s, (), "forward")
    nodes.append(forward)
    previous = forward.id
    next_id += 1
    reductions = []
    for index, (seconds, size) in enumerate(buckets):
        backward = Compute(next_id, seconds, (previous,), f"backward bucket {index}")
        reduce = Collective(next_id + 1, "all_reduce", size, (backward.id,),
                            f"all-reduce bucket {index}")
        nodes += [backward, reduce]
        reductions.append(reduce.id)
        previous = backward.id
        next_id += 2
    nodes.append(Compute(next_id, optimizer_s, (previous, *reductions), "optimizer step"))
    return nodes
