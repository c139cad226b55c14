"""The hosts' adaptive retransmission timeout and window on the simulated network
(hosts/congestion.py, docs/protocol.md §4): a flat star of 32 workers at 1% loss, where the
switch's queue of n · window contributions is longer than the default rto, finishes correctly
with the default settings, without overflowing the switch's queue."""

from __future__ import annotations

import numpy as np

from inaemu.sim import InaOptions, SimJob, gradient, simulate
from topologies.builders import star

WORKERS = 32
SIZE = 32 * 1024          # bytes per worker: 256 chunks of k = 32


def test_a_star_of_32_at_one_percent_loss_finishes_with_the_defaults() -> None:
    topology = star(WORKERS)
    result = simulate(topology, [SimJob(1, tuple(h.name for h in topology.hosts))],
                      algo="ina", size_bytes=SIZE, elems_k=32, seed=0, loss=1.0, bw=1000,
                      ina=InaOptions())
    assert result.stop == "done" and result.correct
    exact = np.sum([gradient(0, w, SIZE // 4).astype(np.float64) for w in range(WORKERS)],
                   axis=0)
    for record in result.records:
        assert record.error is None and record.state == "done"
        assert np.max(np.abs(record.result.astype(np.float64) - exact)) <= record.err_bound
    assert sum(link["lost_packets"] for link in result.links) > 0      # losses were repaired
    contributions = WORKERS * SIZE // 128
    values_resent = sum(r.counters["timer_retransmissions"] + r.counters["nack_retransmissions"]
                        for r in result.records)
    # With the fixed 20 ms rto every chunk was resent (2.4 copies per contribution here) and
    # thousands of frames were dropped at the switch's input queue; the adaptive hosts back off
    # (early detection asks with 16-byte QUERYs, counted apart).
    assert sum(r.retransmissions for r in result.records) > 0
    assert values_resent < contributions // 10
    assert all(s["dropped_input_queue"] == 0 for s in result.switches.values())
