"""Collective plans: an all-reduce algorithm as, per rank, a list of sends and receives.

Every host algorithm other than the ring (`hosts/ps_allreduce.py`, `hier_ring.py`,
`dbtree.py`, `halving_doubling.py`, `torus2d.py`) is written as a *plan*: for each rank, an
ordered list of operations on element ranges of its vector,

* `Send(peer, lo, hi)`: send elements [lo, hi) of my buffer to `peer`;
* `Recv(peer, lo, hi, reduce)`: the matching data from `peer` is added into [lo, hi)
  (`reduce=True`) or replaces it (`reduce=False`).

The k-th `Send` from a to b matches the k-th `Recv` from a at b (per ordered pair, in plan
order), which `check_plans` verifies. `CollectiveSession` (hosts/collective_session.py) runs one
rank's plan as a dataflow: an operation runs as soon as the earlier operations on overlapping
elements have (read after write, write after read or write), so independent chunks pipeline and
phases overlap where the data allows. Nothing here does I/O.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Send:
    peer: int
    lo: int
    hi: int


@dataclass(frozen=True)
class Recv:
    peer: int
    lo: int
    hi: int
    reduce: bool


Op = Send | Recv


class PlanError(ValueError):
    """A plan that cannot run: mismatched sends and receives, or a bad range."""


def cuts(length: int, parts: int, lo: int = 0, hi: int | None = None) -> list[int]:
    """parts + 1 cut points splitting [lo, hi) into parts whose sizes differ by at most one."""
    hi = length if hi is None else hi
    span = hi - lo
    return [lo + i * span // parts for i in range(parts + 1)]


def ring_ops(members: list[int], me: int, bounds: list[int], *, scatter: bool = True,
             gather: bool = True) -> list[Op]:
    """A ring reduce-scatter and/or all-gather among `members` (ranks, in ring order) over the
    len(members) segments cut by `bounds`, for rank `me`: the ring of hosts/ring_session.py.
    After the reduce-scatter, members[i] holds the sum of segment (i + 1) mod m."""
    m = len(members)
    if m == 1:
        return []
    i = members.index(me)
    right, left = members[(i + 1) % m], members[(i - 1) % m]
    ops: list[Op] = []

    def seg(j: int) -> tuple[int, int]:
        j %= m
        return bounds[j], bounds[j + 1]

    if scatter:
        for s in range(m - 1):
            ops.append(Send(right, *seg(i - s)))
            ops.append(Recv(left, *seg(i - s - 1), reduce=True))
    if gather:
        for s in range(m - 1):
            ops.append(Send(right, *seg(i + 1 - s)))
            ops.append(Recv(left, *seg(i - s), reduce=False))
    return [op for op in ops if op.hi > op.lo]


def check_plans(plans: list[list[Op]], length: int) -> None:
    """Raise PlanError unless every send has its receive (same range, in order) and every range
    lies in [0, length)."""
    n = len(plans)
    sends: dict[tuple[int, int], list[tuple[int, int]]] = {}
    recvs: dict[tuple[int, int], list[tuple[int, int]]] = {}
    for rank, plan in enumerate(plans):
        for op in plan:
            if not 0 <= op.peer < n or op.peer == rank:
                raise PlanError(f"rank {rank}: bad peer {op.peer} in {op}")
            if not 0 <= op.lo < op.hi <= length:
                raise PlanError(f"rank {rank}: range [{op.lo}, {op.hi}) outside [0, {length})")
            if isinstance(op, Send):
                sends.setdefault((rank, op.peer), []).append((op.lo, op.hi))
            else:
                recvs.setdefault((op.peer, rank), []).append((op.lo, op.hi))
    for pair in set(sends) | set(recvs):
        if sends.get(pair, []) != recvs.get(pair, []):
            raise PlanError(f"ranks {pair[0]} -> {pair[1]}: sends {sends.get(pair, [])[:4]}... "
                            f"do not match receives {recvs.get(pair, [])[:4]}...")


def dependencies(plan: list[Op]) -> list[list[int]]:
    """For each operation, the earlier ones it must wait for (they touch overlapping elements,
    and one of the two writes)."""
    points = sorted({p for op in plan for p in (op.lo, op.hi)})
    index = {p: i for i, p in enumerate(points)}
    writer: list[int | None] = [None] * len(points)
    readers: list[list[int]] = [[] for _ in points]
    deps: list[list[int]] = []
    for i, op in enumerate(plan):
        mine: set[int] = set()
        blocks = range(index[op.lo], index[op.hi])
        for b in blocks:
            if writer[b] is not None:
                mine.add(writer[b])
            if isinstance(op, Recv):
                mine.update(readers[b])
        for b in blocks:
            if isinstance(op, Recv):
                writer[b] = i
                readers[b] = []
            else:
                readers[b].append(i)
        deps.append(sorted(mine))
    return deps


def traffic(plans: list[list[Op]], itemsize: int = 4) -> dict[tuple[int, int], int]:
    """Payload bytes per ordered pair (sender, receiver) of a whole plan."""
    out: dict[tuple[int, int], int] = {}
    for rank, plan in enumerate(plans):
        for op in plan:
            if isinstance(op, Send):
                key = (rank, op.peer)
                out[key] = out.get(key, 0) + (op.hi - op.lo) * itemsize
    return out
