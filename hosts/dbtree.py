"""Double binary tree all-reduce (NCCL's idea), pipelined in chunks, as a plan.

Tree 1 is an in-order binary tree over positions 1..n (position q = rank + 1): the root is the
largest power of two <= n, node q with lowest set bit b has children q - b/2 and q + b/2 (the
right one moved down by halving the step while it is beyond n), so every odd position is a
leaf. Tree 2 gives rank r the role of rank n-1-r in tree 1 (n even) or of (r + 1) mod n (n odd),
so a rank that forwards in one tree is (nearly always) a leaf in the other.

Each tree all-reduces one half of the vector, cut into chunks: per chunk, a node adds its
children's partial sums into its own, sends the result to its parent, gets the final chunk from
its parent and sends it to its children. Chunks pipeline: a node works on chunk c + 1 while c
is on its way up or down. A rank sends about 2N in all (twice as much as INA, as much as the
ring), and the latency is O(log n) chunk steps instead of the ring's O(n).
"""

from __future__ import annotations

from .collective_plan import Op, Recv, Send, cuts

DEFAULT_CHUNK_ELEMS = 16 * 1024      # 64 KiB of float32


def tree_links(n: int) -> tuple[list[int | None], list[list[int]]]:
    """Tree 1 over ranks 0..n-1: (parent of each rank or None for the root, children)."""
    parent: list[int | None] = [None] * n
    children: list[list[int]] = [[] for _ in range(n)]
    for q in range(1, n + 1):
        step = (q & -q) // 2
        if step == 0:
            continue
        kids = [q - step]
        right = step
        while right >= 1 and q + right > n:
            right //= 2
        if right >= 1:
            kids.append(q + right)
        for kid in kids:
            parent[kid - 1] = q - 1
            children[q - 1].append(kid - 1)
    return parent, children


def tree_roles(n: int, tree: int) -> tuple[list[int | None], list[list[int]]]:
    """(parents, children) of tree 1 or tree 2, over ranks."""
    parent, children = tree_links(n)
    if tree == 1:
        return parent, children
    role = ([n - 1 - r for r in range(n)] if n % 2 == 0 else [(r + 1) % n for r in range(n)])
    rank_of = {role[r]: r for r in range(n)}
    return ([None if parent[role[r]] is None else rank_of[parent[role[r]]] for r in range(n)],
            [[rank_of[c] for c in children[role[r]]] for r in range(n)])


def dbtree_plan(rank: int, n: int, length: int,
                chunk_elems: int = DEFAULT_CHUNK_ELEMS) -> list[Op]:
    halves = [(0, length // 2), (length // 2, length)]
    keyed: list[tuple[tuple[int, int, int, int], Op]] = []
    for tree, (lo, hi) in enumerate(halves, start=1):
        if hi <= lo:
            continue
        parent, children = tree_roles(n, tree)
        chunks = max(1, -(-(hi - lo) // chunk_elems))
        bounds = cuts(hi, chunks, lo, hi)
        for c in range(chunks):
            a, b = bounds[c], bounds[c + 1]
            seq = 0
            for kid in children[rank]:
                keyed.append(((c, tree, 0, seq), Recv(kid, a, b, reduce=True)))
                seq += 1
            if parent[rank] is not None:
                keyed.append(((c, tree, 0, seq), Send(parent[rank], a, b)))
                keyed.append(((c, tree, 1, 0), Recv(parent[rank], a, b, reduce=False)))
            for i, kid in enumerate(children[rank]):
                keyed.append(((c, tree, 1, 1 + i), Send(kid, a, b)))
    keyed.sort(key=lambda item: item[0])
    return [op for _, op in keyed if op.hi > op.lo]
