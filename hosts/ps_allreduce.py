"""Sharded parameter server (push, sum, pull) as a collective plan (hosts/collective_plan.py).

P servers colocated with the first P ranks (P = n by default: every rank serves a shard).
Server s owns shard s of the vector (`cuts(length, P)`). Every rank pushes shard s to server s
(its own shard stays in place), server s adds the n - 1 pushes into its shard and sends the sum
to every other rank, which keeps it. Pushes go out in rotated order (rank r starts with server
r + 1) so that the servers are not all hit by the same rank first.
"""

from __future__ import annotations

from .collective_plan import Op, Recv, Send, cuts


def ps_plan(rank: int, n: int, length: int, servers: int | None = None) -> list[Op]:
    p = n if servers is None else servers
    if not 1 <= p <= n:
        raise ValueError(f"servers must be 1..{n}, got {p}")
    bounds = cuts(length, p)
    ops: list[Op] = []
    order = [(rank + 1 + i) % n for i in range(n)]
    for s in (s for s in order if s < p and s != rank):
        ops.append(Send(s, bounds[s], bounds[s + 1]))
    if rank < p:
        lo, hi = bounds[rank], bounds[rank + 1]
        for w in (w for w in order if w != rank):
            ops.append(Recv(w, lo, hi, reduce=True))
        for w in (w for w in order if w != rank):
            ops.append(Send(w, lo, hi))
    for s in (s for s in order if s < p and s != rank):
        ops.append(Recv(s, bounds[s], bounds[s + 1], reduce=False))
    return [op for op in ops if op.hi > op.lo]
