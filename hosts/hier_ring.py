"""Hierarchical ring all-reduce (reduce-scatter form) as a plan.

Ranks are placed in groups of equal size g (the workers under one leaf or edge switch: see
`topology_groups`): G = n / g groups. The vector is cut into g segments.

1. Within each group, a ring reduce-scatter: member i then holds its group's sum of segment
   (i + 1) mod g.
2. Across groups, the members with the same position i form a ring of G ranks and all-reduce
   that segment (ring reduce-scatter + all-gather over G sub-segments): g such rings run at
   once, so every host link stays busy (not only the leaders').
3. Within each group, a ring all-gather of the g segments.

Each host moves 2(g-1)/g·N within its group and 2(G-1)/G·N/g across groups: about the flat
ring's 2(n-1)/n·N in all (a flat ring over switch-ordered ranks crosses switches about as
much), but in 2(g-1) + 2(G-1) steps instead of 2(n-1), so small vectors finish sooner.
"""

from __future__ import annotations

from math import gcd

from .collective_plan import Op, cuts, ring_ops


def hier_ring_plan(rank: int, n: int, length: int, groups: list[list[int]]) -> list[Op]:
    check_groups(groups, n)
    g = len(groups[0])
    mine = next(group for group in groups if rank in group)
    i = mine.index(rank)
    bounds = cuts(length, g)
    ops: list[Op] = ring_ops(mine, rank, bounds, gather=False)
    j = (i + 1) % g
    across = [group[i] for group in groups]
    ops += ring_ops(across, rank, cuts(length, len(groups), bounds[j], bounds[j + 1]))
    ops += ring_ops(mine, rank, bounds, scatter=False)
    return ops


def check_groups(groups: list[list[int]], n: int) -> None:
    flat = sorted(r for group in groups for r in group)
    if flat != list(range(n)) or len({len(group) for group in groups}) != 1:
        raise ValueError(f"groups must split ranks 0..{n - 1} into groups of one size, "
                         f"got {groups}")


def equal_groups(blocks: list[list[int]]) -> list[list[int]]:
    """Groups of one size from blocks of ranks that share a switch (in rank order): each block
    is cut into pieces of the gcd of the block sizes, so no group spans two switches."""
    size = 0
    for block in blocks:
        size = gcd(size, len(block))
    return [block[i:i + size] for block in blocks for i in range(0, len(block), size)]


def grid_groups(n: int) -> list[list[int]]:
    """Without a topology (one switch): groups of the largest divisor of n up to sqrt(n)
    (1 for a prime n: then the plan is the flat ring)."""
    g = max(d for d in range(1, int(n**0.5) + 1) if n % d == 0)
    return [list(range(s, s + g)) for s in range(0, n, g)]
