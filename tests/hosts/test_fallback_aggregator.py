"""The host aggregator of docs/fallback.md (hosts/fallback.py): the switch's algorithm on the
slots a job could not get in the switch. Packet by packet (merge, duplicates, queries, the
shadow rule, bad input), then whole all-reduces of real worker sessions whose chunks are split
between a switch model and the aggregator, with and without loss."""

from __future__ import annotations

import heapq
import random

import numpy as np
import pytest

from hosts.fallback import FallbackAggregator
from hosts.ina_session import InaSession
from hosts.ina_wire import InaPacket, Kind, decode, encode

K, JOB, N = 4, 5, 3


def contribution(worker: int, slot: int, ver: int, values, *, kind=Kind.CONTRIB, chunk=None,
                 job=JOB, retx=False) -> bytes:
    vals = [] if kind is Kind.QUERY else values
    return encode(InaPacket(kind=kind, job=job, worker=worker, slot=slot, ver=ver, retx=retx,
                            chunk=slot if chunk is None else chunk, values=vals))


def aggregator(**overrides) -> FallbackAggregator:
    options = dict(job=JOB, n=N, k=K, first_slot=2, pool_size=6)
    options.update(overrides)
    return FallbackAggregator(**options)


def test_last_contribution_sends_the_wrapping_sum_to_every_worker() -> None:
    agg = aggregator()
    vectors = [[0x7FFFFFFF, -5, 1, 2], [0x7FFFFFFF, -1000, 3, 4], [2, 3, -4, 0]]
    assert agg.receive(contribution(0, 3, 1, vectors[0], chunk=9)) == []
    assert agg.receive(contribution(1, 3, 1, vectors[1], chunk=9)) == []
    out = agg.receive(contribution(2, 3, 1, vectors[2], chunk=9))
    assert [w for w, _ in out] == [0, 1, 2]
    for w, payload in out:
        packet = decode(payload, K)
        assert (packet.kind, packet.job, packet.worker, packet.slot, packet.chunk, packet.ver,
                packet.retx, packet.count) == (Kind.RESULT, JOB, w, 3, 9, 1, False, N)
        assert packet.values.tolist() == [0, -1002, 0, 6]     # lane 0 wraps: 2^32 -> 0
    assert agg.counters.contributions == 3 and agg.counters.results_multicast == 1


def test_duplicates_are_dropped_then_answered_with_the_stored_sum() -> None:
    agg = aggregator()
    agg.receive(contribution(0, 2, 0, [1, 1, 1, 1]))
    assert agg.receive(contribution(0, 2, 0, [1, 1, 1, 1], retx=True)) == []   # not added twice
    agg.receive(contribution(1, 2, 0, [2, 2, 2, 2]))
    done = agg.receive(contribution(2, 2, 0, [3, 3, 3, 3]))
    assert decode(done[0][1], K).values.tolist() == [6, 6, 6, 6]
    again = agg.receive(contribution(1, 2, 0, [2, 2, 2, 2], retx=True))
    assert [w for w, _ in again] == [1]
    assert decode(again[0][1], K).values.tolist() == [6, 6, 6, 6]
    assert agg.counters.duplicates == 2 and agg.counters.results_unicast == 1


def test_query_nack_when_missing_silence_while_aggregating_result_when_complete() -> None:
    agg = aggregator()
    agg.receive(contribution(0, 4, 0, [1, 2, 3, 4]))
    nack = agg.receive(contribution(1, 4, 0, None, kind=Kind.QUERY))
    assert [w for w, _ in nack] == [1]
    packet = decode(nack[0][1], K)
    assert (packet.kind, packet.count, packet.k) == (Kind.NACK, 0, 0)
    assert agg.receive(contribution(0, 4, 0, None, kind=Kind.QUERY)) == []   # its bit is set
    agg.receive(contribution(1, 4, 0, [1, 1, 1, 1], retx=True))
    agg.receive(contribution(2, 4, 0, [0, 0, 0, 1]))
    answer = agg.receive(contribution(2, 4, 0, None, kind=Kind.QUERY))
    assert [w for w, _ in answer] == [2]
    assert decode(answer[0][1], K).values.tolist() == [2, 3, 4, 6]
    assert (agg.counters.queries, agg.counters.nacks) == (3, 1)


def test_shadow_rule_a_worker_on_the_next_version_clears_its_bit_in_the_old_one() -> None:
    agg = aggregator(n=2)
    for w in (0, 1):
        agg.receive(contribution(w, 2, 0, [w + 1] * K))
    agg.receive(contribution(0, 2, 1, [10] * K))          # worker 0 moved on to version 1
    assert agg.cell(2, 0)[0] == 0b10
    # worker 1 lost version 0's result: its retransmission there is still a duplicate
    again = agg.receive(contribution(1, 2, 0, [2] * K, retx=True))
    assert decode(again[0][1], K).values.tolist() == [3] * K
    agg.receive(contribution(1, 2, 1, [20] * K))
    # slot reuse: version 0 again, both bits were cleared: a new round overwrites the old sum
    assert agg.receive(contribution(1, 2, 0, [7] * K, chunk=8)) == []
    out = agg.receive(contribution(0, 2, 0, [1] * K, chunk=8))
    assert decode(out[0][1], K).values.tolist() == [8] * K


@pytest.mark.parametrize("payload, counter", [
    (b"\x00" * 7, "malformed"),
    (contribution(0, 2, 0, [1] * 8), "malformed"),                # k = 8, not 4
    (contribution(0, 2, 0, [1] * K, job=JOB + 1), "foreign"),
    (contribution(3, 2, 0, [1] * K), "foreign"),                  # worker id >= n
    (contribution(0, 2, 0, [1] * K, kind=Kind.MAX_CONTRIB), "foreign"),   # the switch's
    (contribution(0, 2, 0, [1] * K, kind=Kind.RESULT), "foreign"),
    (contribution(0, 1, 0, [1] * K), "bad_slot"),                 # a switch slot (< P)
    (contribution(0, 6, 0, [1] * K), "bad_slot"),                 # beyond the workers' pool
])
def test_bad_input_is_counted_and_ignored(payload: bytes, counter: str) -> None:
    agg = aggregator()
    assert agg.receive(payload) == []
    assert getattr(agg.counters, counter) == 1
    assert agg.counters.contributions == 0


def test_refuses_impossible_geometry() -> None:
    with pytest.raises(ValueError, match="first_slot"):
        aggregator(first_slot=6, pool_size=6)
    with pytest.raises(ValueError, match="n must be"):
        aggregator(n=0)


# --- whole all-reduces: sessions, a switch model for slots < P, the aggregator for the rest ----

def allreduce_split(*, n: int, pool: int, switch_slots: int, calls: int, length: int,
                    loss: float, seed: int) -> tuple[list[list[np.ndarray]], dict, dict]:
    """Run `calls` int32 all-reduces of n sessions (pool and window `pool`). Slots below
    `switch_slots` are summed by a model of the switch (the same algorithm, slots 0..P-1), the
    rest by the host aggregator; every hop loses a packet with probability `loss`."""
    rng = random.Random(seed)
    sessions = [InaSession(job=JOB, worker=w, n=n, k=K, pool_size=pool, window=pool,
                           rto=0.01, rto_max=0.04, max_retx=60) for w in range(n)]
    switch = FallbackAggregator(job=JOB, n=n, k=K, first_slot=0, pool_size=switch_slots)
    host = FallbackAggregator(job=JOB, n=n, k=K, first_slot=switch_slots, pool_size=pool)
    hop = 1e-4
    results: list[list[np.ndarray]] = []
    for call in range(calls):
        vectors = [np.random.default_rng(seed * 100 + call * 10 + w).integers(
            -2**20, 2**20, length).astype(np.int32) for w in range(n)]
        queue: list = []
        seq = [0]
        deadlines: list[float | None] = [None] * n

        def post(t: float, target, payload: bytes) -> None:
            if rng.random() >= loss:
                seq[0] += 1
                heapq.heappush(queue, (t + hop, seq[0], target, payload))

        def apply(w: int, step, t: float) -> None:
            for payload in step.send:
                post(t, "net", payload)
            deadlines[w] = step.deadline

        for w, s in enumerate(sessions):
            apply(w, s.start_integers(vectors[w], 0.0), 0.0)
        now = 0.0
        while not all(s.done for s in sessions):
            timers = [(d, w) for w, d in enumerate(deadlines) if d is not None]
            first_timer = min(timers) if timers else (float("inf"), -1)
            if queue and queue[0][0] <= first_timer[0]:
                now, _, target, payload = heapq.heappop(queue)
                if target == "net":           # the switch decides by slot, as ina.p4 does
                    slot = decode(payload).slot
                    agg = switch if slot < switch_slots else host
                    for worker, reply in agg.receive(payload):
                        post(now, worker, reply)
                elif not sessions[target].done:
                    apply(target, sessions[target].receive(payload, now), now)
            else:
                now, w = first_timer
                assert now < 60, "the all-reduce did not finish"
                apply(w, sessions[w].timeout(now), now)
        exact = np.sum(np.stack(vectors).astype(np.int64), axis=0).astype(np.int32)
        results.append([exact] + [s.result for s in sessions])
    return results, switch.counters.as_dict(), host.counters.as_dict()


def test_chunks_split_between_switch_and_host_merge_exactly() -> None:
    results, switch, host = allreduce_split(n=4, pool=8, switch_slots=3, calls=3,
                                            length=40 * K, loss=0.0, seed=1)
    for exact, *mine in results:
        for result in mine:
            assert np.array_equal(result, exact)
    # 40 chunks per call at positions 0..119: slot = position mod 8; slots 3..7 are the host's
    host_chunks = sum(1 for p in range(120) if p % 8 >= 3)
    assert host["results_multicast"] == host_chunks
    assert switch["results_multicast"] == 120 - host_chunks
    assert host["duplicates"] == 0 and host["bad_slot"] == switch["bad_slot"] == 0


@pytest.mark.parametrize("seed", [2, 3])
def test_split_all_reduce_stays_exact_under_loss(seed: int) -> None:
    results, switch, host = allreduce_split(n=3, pool=6, switch_slots=2, calls=2,
                                            length=30 * K, loss=0.05, seed=seed)
    for exact, *mine in results:
        for result in mine:
            assert np.array_equal(result, exact)
    # losses were repaired through the aggregator too: queries answered, copies recognised
    assert host["queries"] > 0
    assert host["nacks"] + host["results_unicast"] > 0


def test_via_switch_sends_a_completed_cell_once_for_the_switch_to_multicast() -> None:
    from hosts.fallback import VIA_SWITCH
    agg = aggregator(via_switch=True)
    agg.receive(contribution(0, 2, 0, [1] * K))
    agg.receive(contribution(1, 2, 0, [2] * K))
    ((target, payload),) = agg.receive(contribution(2, 2, 0, [3] * K))
    packet = decode(payload, K)
    assert target == VIA_SWITCH
    assert (packet.kind, packet.worker, packet.count, packet.values.tolist()) == (
        Kind.RESULT, 0, N, [6] * K)
    # answers to one worker still go to that worker
    assert [w for w, _ in agg.receive(contribution(1, 2, 0, [2] * K, retx=True))] == [1]


def with_next(payload: bytes) -> bytes:
    from hosts.ina_header import FLAG_NEXT
    return payload[:1] + bytes([payload[1] | FLAG_NEXT]) + payload[2:]


def test_hashed_a_new_chunk_in_a_cell_starts_a_new_round() -> None:
    """Hashed sharing (docs/protocol.md §3.3): slot 1 version 0 holds chunk 1 here, its next
    uses go to the switch, then chunk 9 (the same slot and version) comes here: the workers'
    bits from chunk 1 must not make chunk 9's contributions duplicates."""
    agg = aggregator(first_slot=0, pool_size=4, hashed=True)
    for w in range(N):
        out = agg.receive(contribution(w, 1, 0, [w + 1] * K, chunk=1))
    assert decode(out[0][1], K).values.tolist() == [6] * K
    assert agg.receive(contribution(0, 1, 0, [5] * K, chunk=9)) == []   # a first copy
    assert agg.counters.duplicates == 0
    query = agg.receive(contribution(1, 1, 0, [], kind=Kind.QUERY, chunk=9))
    assert decode(query[0][1], K).kind == Kind.NACK                    # not chunk 1's result
    agg.receive(contribution(1, 1, 0, [6] * K, chunk=9))
    done = agg.receive(with_next(contribution(2, 1, 0, [7] * K, chunk=9)))
    packet = decode(done[0][1], K)
    assert packet.values.tolist() == [18] * K and packet.chunk == 9
    assert done[0][1][1] & 0x20           # `next` kept: the switch claims on multicast


def test_static_keeps_the_bit_rule_and_drops_next() -> None:
    """Without hashing the cell is the slot's for the whole job: the chunk is not compared
    (as ina.p4 does), and a RESULT never carries `next`."""
    agg = aggregator()
    for w in range(N):
        out = agg.receive(with_next(contribution(w, 2, 0, [1] * K, chunk=2)))
    assert not out[0][1][1] & 0x20
    again = agg.receive(contribution(0, 2, 0, [1] * K, chunk=10, retx=True))
    assert decode(again[0][1], K).values.tolist() == [3] * K            # a duplicate
