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


def run_workers(algo: str, n: int, length: int, calls: int = 2):
    peers = [f"127.0.0.1:{p}" for p in free_ports(n)]
    inputs = [[np.random.default_rng([c, r]).integers(-50, 50, length).astype(np.float32)
               for r in range(n)] for c in range(calls)]
    results, errors = {}, []

    def worker(rank):
        config = AllreduceConfig(job=3, worker=rank, n=n, peers=tuple(peers),
                                 bind_address="127.0.0.1", connect_timeout=10, timeout=30)
        try:
            with Allreducer(config, algo=algo) as reducer:
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


@pytest.mark.parametrize("algo", PLAN_ALGOS)
@pytest.mark.parametrize("n", [2, 5])
def test_every_algorithm_over_loopback_tcp(algo, n):
    run_workers(algo, n, 100_003)


def test_a_missing_peer_fails_the_set_up():
    peers = tuple(f"127.0.0.1:{p}" for p in free_ports(2))
    config = AllreduceConfig(job=3, worker=0, n=2, peers=peers, bind_address="127.0.0.1",
                             connect_timeout=0.5)
    with pytest.raises(PeerFailed):
        Allreducer(config, algo="ps")
