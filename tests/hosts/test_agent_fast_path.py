"""The INA agent's fast paths give the verdicts and bytes of the general ones.

`InaSession._receive` takes a well-formed RESULT of its job in one header unpack and hands
anything else to the full checks; `receive_many` must equal `receive` payload by payload; a job-
scaled call's CONTRIB payloads are built at once (`ina_wire.contribution_table`) and must equal
the per-chunk encoder's. scripts/bench_agent.py measures what these save.
"""

from __future__ import annotations

import random
from collections import deque

import numpy as np
import pytest

from hosts import ina_codec
from hosts import quantize as qz
from hosts.fallback import FallbackAggregator
from hosts.ina_codec import FloatCodec
from hosts.ina_session import InaSession, State
from hosts.ina_wire import (HEADER_BYTES, Kind, contribution_payload, contribution_table,
                            decode)

JOB = 7


def sessions(n: int, *, k: int, pool: int, window: int, fmt: str = "int32",
             scaling: str = "job", **options) -> list[InaSession]:
    return [InaSession(job=JOB, worker=w, n=n, k=k, pool_size=pool, window=window, rto=0.01,
                       rto_max=0.08, max_retx=30, fmt=fmt, scaling=scaling, **options)
            for w in range(n)]


class Aggregator:
    """The switch's algorithm (hosts/fallback.py) for every slot, plus the MAX round."""

    def __init__(self, n: int, k: int, pool: int):
        self.n = n
        self.sums = FallbackAggregator(job=JOB, n=n, k=k, first_slot=0, pool_size=pool)
        self.max_cells = {0: [0, 0, None], 1: [0, 0, None]}     # ver: seen, pending, lanes

    def receive(self, payload: bytes) -> list[tuple[int, bytes]]:
        if payload[0] != Kind.MAX_CONTRIB:
            return self.sums.receive(payload)
        ver, worker = payload[1] & 1, payload[4]
        cell, other = self.max_cells[ver], self.max_cells[1 - ver]
        lanes = np.frombuffer(payload, ">u4", offset=HEADER_BYTES).astype(np.uint32)
        bit = 1 << worker
        if cell[0] & bit:
            return [self._result(worker, ver, cell)] if cell[1] == 0 else []
        cell[0] |= bit
        other[0] &= ~bit
        if cell[1] == 0:
            cell[1], cell[2] = self.n - 1, lanes
        else:
            cell[1], cell[2] = cell[1] - 1, np.maximum(cell[2], lanes)
        return [] if cell[1] else [self._result(w, ver, cell) for w in range(self.n)]

    def _result(self, worker: int, ver: int, cell: list) -> tuple[int, bytes]:
        header = bytes((Kind.MAX_RESULT, ver, 0, JOB, worker, 0, 0, 0, 0, 0, 0, 0, 0, self.n,
                        0, 0))
        return worker, header + cell[2].astype(">u4").tobytes()


def congestion_state(s: InaSession) -> tuple:
    """What a session learnt from its results (RTT samples, window, losses): equal in twins."""
    rto, host, window = s.rto_estimator, s.host_rto_estimator, s.in_flight_window
    return (rto.srtt, rto.rttvar, rto.min_rtt, rto.samples, rto.rto, host.srtt, host.samples,
            host.rto, window.size,
            window.slow_start, s.barrier_estimator.samples, s.barrier_estimator.srtt,
            s.loss_bursts.rate, s.in_flight, s.counters)


@pytest.mark.parametrize("fmt,scaling,options", [
    ("int32", "job", {}), ("int8", "block", {}),
    ("int32", "job", {"switch_slots": 3}),        # half the slots on the host path (own RTO)
    ("int32", "job", {"adaptive": False}), ("int32", "job", {"fast_retransmit": False})])
def test_receive_many_sends_what_receive_sends_one_payload_at_a_time(fmt, scaling,
                                                                     options) -> None:
    """Twin sessions on one lossy network: one takes each batch with receive_many, the other
    payload by payload; the sends, deadlines, counters and results must be the same."""
    n, k, pool = 3, 8, 6
    one, many = (sessions(n, k=k, pool=pool, window=4, fmt=fmt, scaling=scaling, **options)
                 for _ in range(2))
    aggregator = Aggregator(n, k, pool)
    rng = random.Random(5)
    inputs = [np.random.default_rng(w).standard_normal(1500).astype(np.float32)
              for w in range(n)]
    queue: deque = deque()
    inbox: list[list[bytes]] = [[] for _ in range(n)]
    deadlines: list = [None] * n
    now = 0.0

    def carry_out(w: int, step) -> None:
        deadlines[w] = step.deadline
        for payload in step.send:
            if rng.random() > 0.04:                      # 4 % of contributions are lost
                queue.append(payload)

    for w in range(n):
        step = one[w].start(inputs[w], now)
        assert many[w].start(inputs[w], now) == step
        carry_out(w, step)
    batches = 0
    while not all(s.done for s in one):
        now += 1e-4
        for _ in range(rng.randint(1, 8)):               # a few packets reach the aggregator
            if queue:
                for w, reply in aggregator.receive(queue.popleft()):
                    if rng.random() > 0.04:              # 4 % of results are lost
                        inbox[w].append(reply)
        for w in range(n):
            if inbox[w] and rng.random() < 0.5:          # each worker wakes now and then
                batch, inbox[w] = inbox[w], []
                sends: list[bytes] = []
                for payload in batch:
                    step = one[w].receive(payload, now)
                    sends += step.send
                together = many[w].receive_many(batch, now)
                assert together.send == tuple(sends) and together.deadline == step.deadline
                assert congestion_state(many[w]) == congestion_state(one[w])
                batches += len(batch) > 1
                carry_out(w, step)
        if not queue and not any(inbox) and not all(s.done for s in one):
            now = max(now, min(d for d in deadlines if d is not None))   # the next timer
        for w in range(n):
            if deadlines[w] is not None and deadlines[w] <= now:
                step = one[w].timeout(now)
                assert many[w].timeout(now) == step
                carry_out(w, step)
    assert batches > 20
    assert all(s.done for s in many)
    for a, b in zip(one, many):
        assert a.counters == b.counters
        assert np.array_equal(a.result, b.result)
    assert sum(s.counters.retransmissions for s in one) > 0


def test_a_damaged_result_gets_the_verdict_of_the_full_checks() -> None:
    """Every header field the fast path reads, damaged: the same counter as before the fast
    path existed, and the chunk stays in flight until its real RESULT comes."""
    k = 4
    s = sessions(2, k=k, pool=4, window=4)[1]
    max_packet = s.start(np.ones(3 * k, np.float32), 0.0).send[0]
    one = qz.float32_bits(1.0).to_bytes(4, "big") * k
    header = bytes((Kind.MAX_RESULT,)) + max_packet[1:12] + b"\x00\x02\x00\x00"
    contribution = s.receive(header + one, 0.1).send[0]
    good = bytearray(contribution)
    good[0], good[13] = Kind.RESULT, 2                   # count 2 = n

    def damaged(offset: int, value: int, extra: bytes = b"") -> bytes:
        payload = bytearray(good)
        payload[offset] = value
        return bytes(payload) + extra

    cases = [
        (damaged(3, JOB + 1), "foreign_ignored"),          # another job
        (damaged(4, 0), "foreign_ignored"),                # another worker
        (damaged(0, Kind.CONTRIB), "foreign_ignored"),     # not a result
        (damaged(13, 3), "malformed_ignored"),             # count != n
        (damaged(5, 1), "malformed_ignored"),              # padding not zero
        (damaged(1, good[1] | 0x40), "malformed_ignored"),  # unknown flag bit (0x20: next)
        (damaged(1, good[1] | 0x0C), "malformed_ignored"),  # lane format 3
        (damaged(1, good[1] | 0x04), "malformed_ignored"),  # int16, not this job's int32
        (damaged(0, Kind.RESULT, b"\x00" * 4), "malformed_ignored"),   # k + 1 lanes
        (bytes(good[:-4]), "malformed_ignored"),           # k - 1 lanes
    ]
    for payload, counter in cases:
        before = s.counters.copy()
        assert s.receive(payload, 0.2).send == ()
        assert getattr(s.counters, counter) == getattr(before, counter) + 1, payload
        assert s.counters.duplicates_ignored == before.duplicates_ignored
        assert s._answered_count == 0 and s.state is State.DATA
    retx = damaged(1, good[1] | 0x02)                      # retx set: still this chunk's RESULT
    assert decode(retx).retx
    s.receive(retx, 0.3)
    assert s._answered_count == 1


@pytest.mark.parametrize("fmt", ["int32", "int16", "int8"])
def test_a_calls_contribution_table_is_the_per_chunk_payloads(fmt: str) -> None:
    """Positions from 5 on a pool of 3: slots wrap and versions alternate within the call."""
    k, chunks, first, pool = 8, 7, 5, 3
    lanes = qz.wire_dtype(fmt)
    per_chunk = k * qz.values_per_lane(fmt)
    values = np.random.default_rng(1).integers(-100, 100, chunks * per_chunk).astype(lanes)
    rows = values.reshape(chunks, per_chunk)
    array = contribution_table(job=0x1234, worker=9, fmt=qz.FORMAT_CODES[fmt],
                               first_position=first, pool_size=pool, chunks=chunks,
                               lane_dtype=lanes, values_per_chunk=per_chunk)
    array["lanes"] = rows
    table = array.tobytes()
    size = HEADER_BYTES + 4 * k
    assert len(table) == chunks * size
    for c in range(chunks):
        p = first + c
        assert table[c * size:(c + 1) * size] == contribution_payload(
            job=0x1234, worker=9, slot=p % pool, chunk=c, ver=(p // pool) % 2, bmax=0,
            fmt=qz.FORMAT_CODES[fmt], body=rows[c].tobytes())


@pytest.mark.parametrize("fmt", ["int32", "int8"])
@pytest.mark.parametrize("block_values", [40, 1 << 16])
def test_the_codec_with_first_position_sends_and_sums_as_without(fmt: str, block_values: int,
                                                                 monkeypatch) -> None:
    """Also a block at a time (BLOCK_VALUES 40: one chunk per block): the same maxima and
    lanes as whole-vector steps."""
    monkeypatch.setattr(ina_codec, "BLOCK_VALUES", block_values)
    vector = np.random.default_rng(2).standard_normal(301).astype(np.float32)
    options = dict(job=JOB, worker=1, n=2, k=8, pool_size=4, fmt=fmt, scaling="job",
                   divisor=2)
    table, plain = FloatCodec(vector, first_position=6, **options), FloatCodec(vector, **options)
    per_chunk = 8 * qz.values_per_lane(fmt)
    padded = np.zeros(table.chunks * per_chunk, np.float32)
    padded[:vector.size] = vector
    assert np.array_equal(table.block_max,
                          np.abs(padded).reshape(-1, per_chunk).max(axis=1).astype(np.float64))
    global_max = qz.local_max(vector)
    for codec in (table, plain):
        codec.on_max(np.full(8, qz.float32_bits(global_max), np.int64))
    limit = qz.format_limit(fmt, 2)
    lanes = qz.quantize_scaled(padded, limit / global_max, limit, fmt).astype(qz.wire_dtype(fmt))
    assert table.chunks == plain.chunks > 4
    for c in range(table.chunks):
        p = 6 + c
        payload = table.contribution(c, p % 4, (p // 4) % 2)
        assert payload == plain.contribution(c, p % 4, (p // 4) % 2)
        assert payload[HEADER_BYTES:] == lanes[c * per_chunk:(c + 1) * per_chunk].tobytes()
        result = bytes((Kind.RESULT,)) + payload[1:]
        table.on_result(c, result, 0, False)
        plain.on_result(c, result, 0, False)
    assert np.array_equal(table.result(), plain.result())


@pytest.mark.parametrize("fmt,scaling", [("int32", "job"), ("int8", "block")])
def test_the_error_bound_is_the_per_element_formula(fmt: str, scaling: str) -> None:
    """One scale for the call (job) is used as a scalar, and the sum is built in place: the
    same numbers as n/2 per element's scale · (1 + slack) + ulp/2."""
    vector = np.random.default_rng(4).standard_normal(1000).astype(np.float32) * 3
    codec = FloatCodec(vector, job=JOB, worker=0, n=3, k=8, pool_size=4, fmt=fmt,
                       scaling=scaling, divisor=3, first_position=0)
    codec.on_max(codec.max_offer().view(np.uint32).astype(np.int64))
    result = codec.result()
    scales = np.repeat(codec.scales(), codec.per_chunk)[:vector.size]
    expected = 3 * 0.5 / scales * (1.0 + qz.FLOAT64_SLACK) + qz.ulp32(result) / 2
    assert np.array_equal(codec.error_bound(result), expected)
