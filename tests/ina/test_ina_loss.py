"""ina.p4 under packet loss: the protocol of docs/protocol.md delivers exact sums anyway.

Workers that follow the protocol (tests/ina/netsim.py) all-reduce several vectors in a row,
over links that drop 25% of packets in each direction, through one switch (flat job) or through
a tree of three switches (two child aggregators under a parent). Every worker must end with the
exact lane sums (mod 2^32) and the exact MAX of every call; the switches' counters must add up.
Seeds are fixed, so each run is the same run.
"""

from __future__ import annotations

import random

import pytest

from .netsim import LossyNet, ProtocolWorker, add_job, add_route, maxima_for, new_switch
from .packets import U32, Endpoint, ip

K, POOL, JOB = 4, 4, 21
LENGTHS = (37, 8, 50)       # three calls: 10, 2 and 13 chunks; positions continue across calls


def vectors_for(rng: random.Random, workers: int) -> list[list[list[int]]]:
    """Per worker, per call: values around the int32 limits so sums wrap."""
    return [[[rng.randint(-(2 ** 31), 2 ** 31 - 1) for _ in range(length)] for length in LENGTHS]
            for _ in range(workers)]


def check_results(workers: list[ProtocolWorker], data: list[list[list[int]]]) -> None:
    for call, length in enumerate(LENGTHS):
        expected = [sum(d[call][i] for d in data) & U32 for i in range(length)]
        expected_max = max(w.maxima[call] for w in workers)
        for w in workers:
            assert w.results[call] == expected, f"worker {w.me} call {call}"
            assert w.max_results[call] == expected_max


def counter(sw, name: str, index: int) -> int:
    return sw.counter_read(name, index)[0]


@pytest.mark.parametrize("seed", [1, 2, 3])
def test_flat_job_survives_loss(seed: int) -> None:
    rng = random.Random(seed)
    agg = Endpoint(0x000000000100, ip("10.0.0.254"))
    hosts = [Endpoint(0x080000000001 + w, ip(f"10.0.{w + 1}.1")) for w in range(3)]
    sw = new_switch(K, agg)
    add_job(sw, agg, JOB, base=2, pool=POOL, members=[(w + 1, h) for w, h in enumerate(hosts)],
            result_count=3)
    net = LossyNet(seed, loss=0.25)
    net.switches["s1"] = sw
    data = vectors_for(rng, 3)
    workers = []
    for w, host in enumerate(hosts):
        worker = ProtocolWorker(w, host, agg, JOB, POOL, K, data[w], maxima_for(data[w]))
        net.workers[f"w{w}"] = worker
        net.link((f"w{w}", 0), ("s1", w + 1))
        workers.append(worker)
    net.run()
    check_results(workers, data)
    assert net.dropped > 0 and net.timeouts > 0, "the loss must have forced retransmissions"
    cells = sum((n + K - 1) // K for n in LENGTHS) + len(LENGTHS)   # data cells + MAX rounds
    assert counter(sw, "ina_contributions", JOB) == 3 * cells
    assert counter(sw, "ina_results_multicast", JOB) == cells
    assert counter(sw, "ina_duplicates", JOB) > 0


@pytest.mark.parametrize("seed", [4, 5])
def test_tree_of_three_switches_survives_loss(seed: int) -> None:
    rng = random.Random(seed)
    parent = Endpoint(0x000000000F00, ip("10.0.100.254"))
    children = [Endpoint(0x000000000A00, ip("10.0.1.254")),
                Endpoint(0x000000000B00, ip("10.0.2.254"))]
    net = LossyNet(seed, loss=0.25)
    top = new_switch(K, parent)
    add_job(top, parent, JOB, base=0, pool=POOL, result_count=4,
            members=[(1, children[0]), (2, children[1])])
    net.switches["top"] = top
    data = vectors_for(rng, 4)
    workers = []
    for c, child in enumerate(children):
        sw = new_switch(K, child)
        hosts = [Endpoint(0x080000000000 + 16 * c + w, ip(f"10.0.{c + 1}.{w + 1}"))
                 for w in range(2)]
        add_job(sw, child, JOB, base=10 + 2 * c, pool=POOL, result_count=4, parent=parent,
                child_index=c, members=[(w + 1, h) for w, h in enumerate(hosts)])
        add_route(sw, parent.addr & 0xFFFFFF00, 24, parent.mac, 9)
        net.switches[f"leaf{c}"] = sw
        net.link((f"leaf{c}", 9), ("top", c + 1))
        for w, host in enumerate(hosts):
            index = 2 * c + w
            worker = ProtocolWorker(w, host, child, JOB, POOL, K, data[index],
                                maxima_for(data[index]))
            net.workers[f"w{index}"] = worker
            net.link((f"w{index}", 0), (f"leaf{c}", w + 1))
            workers.append(worker)
    net.run()
    check_results(workers, data)
    cells = sum((n + K - 1) // K for n in LENGTHS) + len(LENGTHS)
    assert counter(top, "ina_contributions", JOB) == 2 * cells
    for c in range(2):
        leaf = net.switches[f"leaf{c}"]
        assert counter(leaf, "ina_contributions", JOB) == 2 * cells
        assert counter(leaf, "ina_partials_up", JOB) >= cells
        assert counter(leaf, "ina_results_multicast", JOB) == cells
