"""The host all-reduce algorithms by name, and the plan of one rank (hosts/collective_plan.py).

`ring` is hosts/ring_session.py's own state machine; every other name here is a plan run by
`CollectiveSession`. `groups` (hierarchical ring) are lists of ranks sharing a switch.
"""

from __future__ import annotations

from .collective_plan import Op
from .dbtree import dbtree_plan
from .halving_doubling import rhd_plan
from .hier_ring import equal_groups, grid_groups, hier_ring_plan
from .ps_allreduce import ps_plan
from .torus2d import torus_plan

HOST_ALGOS = ("ring", "ps", "hring", "dbtree", "rhd", "torus")
PLAN_ALGOS = HOST_ALGOS[1:]
DESCRIPTIONS = {
    "ring": "ring all-reduce (reduce-scatter + all-gather)",
    "ps": "sharded parameter server, colocated (push, sum, pull)",
    "hring": "hierarchical ring (intra-switch reduce-scatter, cross-switch rings, all-gather)",
    "dbtree": "double binary tree, pipelined in chunks",
    "rhd": "recursive halving-doubling (Rabenseifner) with the non-power-of-two fix-up",
    "torus": "2D ring over a logical grid, two halves in opposite orders",
}


def plan_for(algo: str, rank: int, n: int, length: int, *,
             switch_blocks: list[list[int]] | None = None) -> list[Op]:
    """Rank `rank`'s plan. `switch_blocks`: ranks grouped by their switch (hierarchical ring);
    None or a single block: groups from `grid_groups`."""
    if algo == "ps":
        return ps_plan(rank, n, length)
    if algo == "rhd":
        return rhd_plan(rank, n, length)
    if algo == "dbtree":
        return dbtree_plan(rank, n, length)
    if algo == "torus":
        return torus_plan(rank, n, length)
    if algo == "hring":
        return hier_ring_plan(rank, n, length, hring_groups(n, switch_blocks))
    raise ValueError(f"no plan for algorithm {algo!r} (one of {', '.join(PLAN_ALGOS)})")


def hring_groups(n: int, switch_blocks: list[list[int]] | None) -> list[list[int]]:
    if not switch_blocks or len(switch_blocks) == 1:
        return grid_groups(n)
    return equal_groups(switch_blocks)
