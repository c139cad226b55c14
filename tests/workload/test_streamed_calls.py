"""A workload's INA calls on the simulator are streamed (inaemu/scenario/sim_job.py): each
worker draws its bucket's gradient a block at a time and the sum is checked a block at a time,
so a call holds what is in flight, not n inputs, their float64 sum and n results. The same
run as with whole vectors, and memory that does not grow with the bucket."""

from __future__ import annotations

import tracemalloc

import pytest

from inaemu.scenario import model as m
from inaemu.scenario.sim_engine import run_sim
from inaemu.scenario.sim_job import JobRun
from inaemu.sim.streamed_check import StreamedCheck
from inaemu.workload import graph as g


def ddp(n: int, buckets) -> g.Workload:
    return g.Workload("toy", tuple(g.RankGraph(r, tuple(g.ddp_iteration(r, 0.001, buckets,
                                                                        0.0005)))
                                   for r in range(n)))


def _run(network: m.Network, hosts: tuple, buckets, loss: float = 0.0):
    scenario = m.Scenario(network=network, jobs=(m.Job("toy", "ina", hosts,
                                                       ddp(len(hosts), buckets)),),
                          options=m.Options(switch_pps=1e7, elems_k=64, seed=3))
    return run_sim(scenario)


def _fields(result) -> tuple:
    job = result.jobs[0]
    return (job.correct, job.error, job.retransmissions,
            {key: job.workload[key] for key in ("time_s", "compute_s", "exposed_comm_s",
                                                 "bytes_on_wire", "calls", "comm_s")},
            [(it.iteration, it.started_s, it.compute_done_s, it.ended_s, it.correct,
              it.retransmissions) for it in result.iterations])


@pytest.mark.parametrize("shape", ["star", "tree"])
def test_streamed_calls_are_the_whole_vector_calls(shape, monkeypatch):
    if shape == "star":
        network, hosts = m.Network("star", hosts=4, bw_mbps=1000), ("h1", "h2", "h3", "h4")
    else:   # 16 ranks over a fat-tree(4), aggregated along a tree
        network = m.Network("fat-tree", k=4, bw_mbps=1000)
        hosts = tuple(h.name for h in network.topology().hosts)
    # a bucket of three codec blocks with a partial last chunk, and a small one
    buckets = [(0.001, 4 * 140_003), (0.0005, 4 * 1000)]
    checks = []
    monkeypatch.setattr(StreamedCheck, "end", lambda check, worker, end=StreamedCheck.end: (
        checks.append(check), end(check, worker)))
    streamed = _run(network, hosts, buckets)
    assert streamed.correct
    assert checks and all(check.values_drawn == 0 for check in checks)   # from the codecs
    monkeypatch.setattr(JobRun, "stream_ina", False)
    whole = _run(network, hosts, buckets)
    assert _fields(streamed) == _fields(whole)


def _peak_mib(bucket_bytes: int) -> float:
    tracemalloc.start()
    try:
        result = _run(m.Network("star", hosts=4, bw_mbps=10000), ("h1", "h2", "h3", "h4"),
                      [(0.0005, bucket_bytes)])
        assert result.correct
        return tracemalloc.get_traced_memory()[1] / (1 << 20)
    finally:
        tracemalloc.stop()


def test_a_streamed_call_does_not_hold_the_bucket():
    """Both buckets are several codec blocks (1 MiB: four): what a streamed call holds
    besides what is in flight is then the same, a block drawn ahead per rank and the drawing
    thread's temporaries (hosts/draw_ahead.py, ~1 MiB here), which a bucket of two blocks does
    not reach in full."""
    small, large = 1 << 20, 4 << 20
    added = 4 * (large - small) / (1 << 20)     # MiB more input over the 4 ranks
    _peak_mib(small)                            # (the first run's caches and imports)
    growth = _peak_mib(large) - _peak_mib(small)
    assert growth < 0.1 * added                 # whole vectors: ~6.7x the added input
