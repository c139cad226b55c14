"""Recursive halving-doubling (Rabenseifner's all-reduce, as in MPI and Gloo) as a plan.

p = the largest power of two <= n, r = n - p. Fix-up for r > 0: each of the first r even
ranks 2i sends its whole vector to 2i + 1, which adds it in, and sits out. The p ranks left
(virtual rank v: the odd ranks below 2r, then every rank from 2r) run

* reduce-scatter by recursive halving: the vector is cut into p blocks; in step d = p/2, p/4,
  ..., 1 a rank exchanges with v xor d the half of its current block range it gives up, adds
  in the half it keeps (the lower virtual rank keeps the lower half); after log2 p steps,
  virtual rank v holds the sum of block v;
* all-gather by recursive doubling: the same steps in reverse, exchanging whole ranges;

then, for r > 0, each odd rank below 2r sends the result back to 2i. Steps: 2 log2 p (+ 2).
"""

from __future__ import annotations

from .collective_plan import Op, Recv, Send, cuts


def _virtual(rank: int, rem: int) -> int | None:
    if rank < 2 * rem:
        return rank // 2 if rank % 2 else None
    return rank - rem


def _real(v: int, rem: int) -> int:
    return 2 * v + 1 if v < rem else v + rem


def rhd_plan(rank: int, n: int, length: int) -> list[Op]:
    p = 1 << (n.bit_length() - 1)
    rem = n - p
    ops: list[Op] = []
    if rank < 2 * rem and rank % 2 == 0:        # folded into rank + 1
        return [Send(rank + 1, 0, length), Recv(rank + 1, 0, length, reduce=False)]
    if rank < 2 * rem:
        ops.append(Recv(rank - 1, 0, length, reduce=True))
    v = _virtual(rank, rem)
    bounds = cuts(length, p)
    lo, hi = 0, p                               # my block range [lo, hi)
    ranges = []
    d = p // 2
    while d >= 1:
        partner = _real(v ^ d, rem)
        mid = (lo + hi) // 2
        keep, give = ((lo, mid), (mid, hi)) if v & d == 0 else ((mid, hi), (lo, mid))
        ops.append(Send(partner, bounds[give[0]], bounds[give[1]]))
        ops.append(Recv(partner, bounds[keep[0]], bounds[keep[1]], reduce=True))
        ranges.append((partner, keep, give))
        lo, hi = keep
        d //= 2
    for partner, keep, give in reversed(ranges):
        ops.append(Send(partner, bounds[keep[0]], bounds[keep[1]]))
        ops.append(Recv(partner, bounds[give[0]], bounds[give[1]], reduce=False))
    if rank < 2 * rem:
        ops.append(Send(rank - 1, 0, length))
    return [op for op in ops if op.hi > op.lo]
