"""The plan-based all-reduce cores (hosts/collective_*.py and the algorithms' plans), in memory:
every algorithm sums integer-valued float32 vectors bit-exactly at 2..16 ranks, whatever the
order and chunking of deliveries; plans pair every send with its receive; bad streams fail."""

from __future__ import annotations

import random

import numpy as np
import pytest

from hosts.collective_plan import PlanError, Recv, Send, check_plans, dependencies, traffic
from hosts.collective_session import CollectiveSession, CollectiveState
from hosts.collectives import PLAN_ALGOS, plan_for
from hosts.dbtree import tree_roles
from hosts.errors import RingProtocolError
from hosts.hier_ring import equal_groups, grid_groups
from hosts.ring_wire import RingKind, Segment, encode
from hosts.torus2d import grid_shape


def run_plans(algo: str, n: int, length: int, *, seed: int = 0, blocks=None, calls: int = 1):
    """All ranks in one process; deliveries in a random order, split into random pieces."""
    rng = random.Random(seed)
    plans = [plan_for(algo, r, n, length, switch_blocks=blocks) for r in range(n)]
    check_plans(plans, length)
    sessions = [CollectiveSession(rank=r, n=n, plan=plans[r], length=length) for r in range(n)]
    results = []
    for call in range(calls):
        inputs = [np.random.default_rng([seed, call, r]).integers(-1000, 1000, length)
                  .astype(np.float32) for r in range(n)]
        pending = []                         # per (src, dst) stream: bytes not yet delivered
        streams: dict[tuple[int, int], bytearray] = {}

        def queue(src, out):
            for dst, data in out:
                streams.setdefault((src, dst), bytearray()).extend(data)

        for r in rng.sample(range(n), n):
            queue(r, sessions[r].start(inputs[r]))
        while True:
            pending = [k for k, v in streams.items() if v]
            if not pending:
                break
            src, dst = rng.choice(pending)
            buffer = streams[(src, dst)]
            cut = rng.randint(1, len(buffer))
            piece = bytes(buffer[:cut])
            del buffer[:cut]
            queue(dst, sessions[dst].receive(src, piece))
        exact = np.sum(np.stack(inputs).astype(np.float64), axis=0)
        for s in sessions:
            assert s.state is CollectiveState.DONE, (algo, n, s.rank)
            assert np.array_equal(s.result.astype(np.float64), exact), (algo, n, s.rank)
        results.append(sessions[0].result)
    return sessions, results


@pytest.mark.parametrize("algo", PLAN_ALGOS)
@pytest.mark.parametrize("n", range(2, 17))
def test_every_algorithm_is_exact_at_every_size(algo, n):
    for length in (1, n - 1, 1000):
        run_plans(algo, n, length, seed=n)


@pytest.mark.parametrize("algo", PLAN_ALGOS)
def test_two_calls_in_a_row(algo):
    sessions, results = run_plans(algo, 6, 333, calls=2)
    assert all(s.calls == 2 for s in sessions)


def test_hierarchical_ring_follows_switch_blocks():
    blocks = [[0, 1], [2, 3], [4, 5], [6, 7]]
    plan = plan_for("hring", 0, 8, 1024, switch_blocks=blocks)
    peers = {op.peer for op in plan}
    assert 1 in peers and peers - {1} <= {2, 6}      # its switch-mate, then the cross ring
    run_plans("hring", 8, 1000, blocks=blocks)
    run_plans("hring", 6, 1000, blocks=[[0, 1, 2, 3], [4, 5]])


def test_group_and_grid_shapes():
    assert equal_groups([[0, 1, 2, 3], [4, 5]]) == [[0, 1], [2, 3], [4, 5]]
    assert grid_groups(12) == [[0, 1, 2], [3, 4, 5], [6, 7, 8], [9, 10, 11]]
    assert grid_groups(7) == [[r] for r in range(7)]
    assert grid_shape(16) == (4, 4) and grid_shape(12) == (4, 3) and grid_shape(13) == (13, 1)


@pytest.mark.parametrize("n", range(2, 17))
def test_double_binary_tree_shapes(n):
    for tree in (1, 2):
        parent, children = tree_roles(n, tree)
        assert sum(p is None for p in parent) == 1
        assert all(len(c) <= 2 for c in children)
        for r, kids in enumerate(children):
            assert all(parent[k] == r for k in kids)
    if n % 2 == 0:    # a rank forwarding in one tree is a leaf in the other
        _, one = tree_roles(n, 1)
        _, two = tree_roles(n, 2)
        assert not any(one[r] and two[r] for r in range(n))


def test_traffic_per_rank():
    n, length = 8, 8000
    for algo, expected in (("ps", 2 * 7 / 8), ("rhd", 2 * 7 / 8), ("torus", 2 * 7 / 8)):
        plans = [plan_for(algo, r, n, length) for r in range(n)]
        sent = traffic(plans)
        per_rank = sum(b for (src, _), b in sent.items() if src == 0) / (4 * length)
        assert per_rank == pytest.approx(expected), algo


def test_check_plans_finds_a_missing_receive():
    with pytest.raises(PlanError):
        check_plans([[Send(1, 0, 4)], []], 4)
    with pytest.raises(PlanError):
        check_plans([[Send(1, 0, 4)], [Recv(0, 0, 3, True)]], 4)


def test_dependencies_order_overlapping_operations():
    plan = [Recv(1, 0, 10, True), Send(1, 5, 10), Recv(1, 5, 10, False), Send(2, 0, 4)]
    assert dependencies(plan) == [[], [0], [0, 1], [0]]


def test_a_message_the_plan_does_not_expect_fails_the_session():
    plan = plan_for("ps", 0, 2, 8)
    s = CollectiveSession(rank=0, n=2, plan=plan, length=8)
    s.start(np.zeros(8, np.float32))
    bogus = encode(Segment(kind=RingKind.ALL_GATHER, call=0, step=0, index=7,
                           values=np.zeros(4, np.float32)))
    with pytest.raises(RingProtocolError):
        s.receive(1, bogus)
    assert s.state is CollectiveState.FAILED


def test_a_wrongly_sized_message_fails_the_session():
    plan = plan_for("ps", 0, 2, 8)
    s = CollectiveSession(rank=0, n=2, plan=plan, length=8)
    s.start(np.zeros(8, np.float32))
    bad = encode(Segment(kind=RingKind.ALL_GATHER, call=0, step=0, index=0,
                         values=np.zeros(3, np.float32)))
    with pytest.raises(RingProtocolError):
        s.receive(1, bad)
