"""Fallback jobs (docs/fallback.md) end to end in the simulator, through ina.p4 and the host
aggregator, with loss on every link: every worker's result within the bound, and the workers'
per-path recovery sending no QUERY for a host chunk that is only slower."""

from __future__ import annotations

from inaemu.sim.driver import InaOptions, SimJob, simulate
from topologies.builders import star

JOBS = [SimJob(1, ("h1", "h2", "h3"), "s1"), SimJob(2, ("h4", "h5", "h6"), "s1")]


def test_fallback_jobs_stay_correct_under_loss() -> None:
    result = simulate(star(6), JOBS, algo="ina", size_bytes=32 * 1024, elems_k=16, seed=3,
                      loss=2.0, ina=InaOptions(pool_size=16, window=16, fallback_slots=4))
    assert result.correct and len(result.records) == 6
    assert sum(r.retransmissions for r in result.records) > 0      # the loss was real


def test_without_loss_no_host_chunk_is_taken_for_lost() -> None:
    options = dict(pool_size=16, window=16, fallback_slots=4)
    result = simulate(star(6), JOBS, algo="ina", size_bytes=32 * 1024, elems_k=16,
                      ina=InaOptions(**options), switch_queue_packets=100_000)
    assert result.correct
    assert sum(r.counters["fast_retransmissions"] for r in result.records) == 0
