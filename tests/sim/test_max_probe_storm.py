"""The MAX round's probes in a tree cost a few packets per cell a round, not one per worker
(p4src/ina.p4: a MAX duplicate at a cell waiting for its parent climbs from members 0 and 1
only, INA_MAX_PROBE_MEMBERS).

Regression (issue 30, the storm at fat-tree k = 40 with 60 Mbit/s links; docs/scale.md): a
barrier that takes longer than rto_min (2 ms) makes every worker probe it at 2 ms, and every
member's probe climbed: the root took all 16,000, its input queue was full of them for ~17 ms,
every worker's first data timers (twice the MAX round trip) expired behind them, and those
timers' QUERYs climbed too. Here the same at a size CI affords: 128 workers on a fat-tree
k = 8 whose switches take 120 us a packet, so that the MAX round takes ~3.4 ms; before the
fix the root took 128 probes (15 ms of work), the first data results came 8.3 ms after the
first window was sent and every worker resent both chunks of it (256 loss events), after it
none."""

from __future__ import annotations

from controller.trees import choose_root
from inaemu.sim import InaOptions, SimJob, simulate
from inaemu.sim.switch_node import SwitchCost
from topologies.builders import fat_tree

K = 8                        # 128 workers
SWITCH = SwitchCost(per_packet_s=120e-6)
SIZE = 64 * 1024             # bytes per worker: 46 chunks of 364 values (one MTU each)


def run():
    topology = fat_tree(K)
    hosts = tuple(h.name for h in topology.hosts)
    job = SimJob(1, hosts, switch=choose_root(topology, hosts), hierarchical=True)
    return simulate(topology, [job], algo="ina", size_bytes=SIZE, elems_k=364, seed=1, bw=60,
                    switch_cost=SWITCH, time_limit=5.0,
                    ina=InaOptions(window=16, pool_size=128, rto=0.1, rto_max=0.4,
                                   max_retx=200, timeline=True))


def test_max_probes_in_a_tree_do_not_delay_the_first_window_past_its_timers() -> None:
    result = run()
    assert result.stop == "done" and result.correct
    workers = len(result.records)
    max_probes = sum(1 for r in result.records for (_t, event, key) in r.timeline
                     if event == "timer" and key == -1)
    # the barrier is longer than rto_min: every worker probes it once (not a loss)
    assert max_probes == workers
    # no data chunk was found lost: the first window's timers waited long enough
    assert sum(r.counters["loss_events"] for r in result.records) == 0
    assert sum(r.retransmissions for r in result.records) == max_probes
    # a waiting cell passes up the probes of its members 0 and 1 only: each aggregation
    # switch gets 4 (2 edges x 2 workers) and passes them all up (they come from its members
    # 0 and 1), so the root takes from each of its K members the MAX offer, 4 probes and the
    # chunks: not the 128 workers' probes
    root = next(name for name, plan in result.trees[1].items() if plan["parent"] is None)
    chunks = -(-SIZE // 4 // 364)
    assert result.switches[root]["received"] == K * (1 + 4 + chunks)
