"""Plan-based all-reduce over real TCP on loopback (hosts/tcp_collective.py through the public
API): every algorithm, odd and even worker counts, two calls; a peer that never starts fails
the others within the connect timeout."""

from __future__ import annotations

import socket
import threading

import numpy as np
import pytest

from hosts import AllreduceConfig, Allreducer
from hosts.collectives import PLAN_ALGOS
from hosts.errors import PeerFailed


def free_ports(count: int) -> list[int]:
    socks = [socket.socket() for _ in range(count)]
    for s in socks:
        s.bind(("127.0.0.1", 0))
    ports = [s.getsockname()[1] for s in socks]
    for s in socks:
        s.close()
    return ports


def run_workers(algo: str, n: int, length: int, calls: int = 2, switch_blocks=()):
    peers = [f"127.0.0.1:{p}" for p in free_ports(n)]
    inputs = [[np.random.default_rng([c, r]).integers(-50, 50, length).astype(np.float32)
               for r in range(n)] for c in range(calls)]
    results, errors, plans = {}, [], {}

    def worker(rank):
        config = AllreduceConfig(job=3, worker=rank, n=n, peers=tuple(peers),
                                 bind_address="127.0.0.1", connect_timeout=10, timeout=30,
                                 switch_blocks=switch_blocks)
        try:
            with Allreducer(config, algo=algo) as reducer:
                plans[rank] = getattr(reducer._ring, "switch_blocks", None)
                results[rank] = [reducer.allreduce(inputs[c][rank]) for c in range(calls)]
                assert reducer.stats.bytes_sent > 0
        except Exception as error:       # reported below
            errors.append(f"rank {rank}: {error!r}")

    threads = [threading.Thread(target=worker, args=(r,)) for r in range(n)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(60)
    assert not errors, errors
    for c in range(calls):
        exact = np.sum(inputs[c], axis=0)
        for r in range(n):
            assert np.array_equal(results[r][c], exact), (algo, n, r, c)
    return plans


@pytest.mark.parametrize("algo", PLAN_ALGOS)
@pytest.mark.parametrize("n", [2, 5])
def test_every_algorithm_over_loopback_tcp(algo, n):
    run_workers(algo, n, 100_003)


def test_the_hierarchical_ring_follows_the_switches_it_is_given():
    """Ranks 0, 2, 4 under one switch and 1, 3, 5 under another (interleaved, as hosts of
    two leaves may be listed): the agent's plan groups them by switch, not by rank order."""
    blocks = ((0, 2, 4), (1, 3, 5))
    plans = run_workers("hring", 6, 30_001, switch_blocks=blocks)
    assert all(plan == [[0, 2, 4], [1, 3, 5]] for plan in plans.values())
    from hosts.collectives import hring_groups
    assert hring_groups(6, [[0, 2, 4], [1, 3, 5]]) == [[0, 2, 4], [1, 3, 5]]


@pytest.mark.parametrize("blocks", [((0, 1), (1, 2)), ((0, 1),), ((0, 1, 2), (3,)), (5,)])
def test_switch_blocks_must_split_the_ranks(blocks):
    with pytest.raises(ValueError, match="switch_blocks"):
        AllreduceConfig(job=1, worker=0, n=3, switch_blocks=blocks)


def test_a_missing_peer_fails_the_set_up():
    peers = tuple(f"127.0.0.1:{p}" for p in free_ports(2))
    config = AllreduceConfig(job=3, worker=0, n=2, peers=peers, bind_address="127.0.0.1",
                             connect_timeout=0.5)
    with pytest.raises(PeerFailed):
        Allreducer(config, algo="ps")
