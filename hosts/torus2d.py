"""2D ring (torus) all-reduce over a logical R x C grid, as a plan.

Rank r sits at row r // C, column r % C; C is the largest divisor of n up to sqrt(n), so the
grid is as square as n allows (a prime n gives 1 x n: the flat ring). The vector is cut in
two halves that run at once in opposite orders, so row and column links are both busy:

* half A: ring reduce-scatter along the row (C segments), ring all-reduce of the segment held
  along the column (R ranks), ring all-gather along the row;
* half B: the same with columns first, then rows.

Per half, a rank takes 2(C-1) + 2(R-1) ring steps instead of the flat ring's 2(n-1).
"""

from __future__ import annotations

from .collective_plan import Op, cuts, ring_ops


def grid_shape(n: int) -> tuple[int, int]:
    """(rows R, columns C), R·C = n, R >= C."""
    c = max(d for d in range(1, int(n**0.5) + 1) if n % d == 0)
    return n // c, c


def _two_level(rank: int, first: list[int], second: list[int], lo: int, hi: int) -> list[Op]:
    bounds = cuts(hi, len(first), lo, hi)
    i = first.index(rank)
    j = (i + 1) % len(first)
    ops = ring_ops(first, rank, bounds, gather=False)
    ops += ring_ops(second, rank, cuts(hi, len(second), bounds[j], bounds[j + 1]))
    ops += ring_ops(first, rank, bounds, scatter=False)
    return ops


def torus_plan(rank: int, n: int, length: int) -> list[Op]:
    rows, cols = grid_shape(n)
    row = [rank // cols * cols + c for c in range(cols)]
    col = [r * cols + rank % cols for r in range(rows)]
    half = length // 2
    return (_two_level(rank, row, col, 0, half)
            + _two_level(rank, col, row, half, length))
