"""Issue 32, the tree under loss (docs/protocol.md §3, §4.2; docs/loss.md "Trees"):

* a RESULT the switch marks `retx` (its cell, at some tier, took a retransmitted piece, or it
  answers a duplicate or a QUERY) waited for a recovery, so a worker takes no RTT sample from
  it: on a 16-worker fat-tree at 10 % loss such samples had driven every worker's RTO to
  rto_max, and 0.4 s timers paced the call (8.9 s instead of about 0.7 s);
* the tail's probe: once every chunk of a call is sent, the earliest chunk in flight is resent
  with its values after 4 minimum round trips of silence, doubling, at most 3 times, instead of
  waiting for an RTO learnt behind a full window (and doubled per expiry)."""

from __future__ import annotations

import numpy as np
import pytest

from hosts.ina_recovery import TAIL_PROBE_RTTS, TAIL_PROBES
from hosts.ina_session import InaSession
from hosts.ina_wire import InaPacket, Kind, decode, encode

K = 4


def session(**overrides) -> InaSession:
    options = dict(job=3, worker=1, n=2, k=K, pool_size=16, window=16, rto=0.2, rto_max=1.0,
                   max_retx=10, adaptive=True, rto_min=0.001)
    options.update(overrides)
    return InaSession(**options)


def result(payload: bytes, *, retx: bool = False) -> bytes:
    """The switch's RESULT for a contribution (its own values, count 2), `retx` as given."""
    sent = decode(payload)
    return encode(InaPacket(kind=Kind.RESULT, job=sent.job, worker=sent.worker, slot=sent.slot,
                            chunk=sent.chunk, ver=sent.ver, count=2, values=sent.values,
                            retx=retx))


@pytest.mark.parametrize("batched", [False, True])
def test_a_result_marked_retx_gives_no_rtt_sample(batched: bool) -> None:
    """Chunk 0's RESULT comes late, marked retx (another worker's piece was resent): no sample,
    the RTO keeps its initial value. Chunk 1's, unmarked, is sampled. Both are stored."""
    s = session()
    step = s.start_integers(np.arange(2 * K, dtype=np.int32), 0.0)
    sent = list(step.send)
    assert [decode(p).chunk for p in sent] == [0, 1]
    late = result(sent[0], retx=True)
    (s.receive_many([late], 0.150) if batched else s.receive(late, 0.150))
    estimator = s.rto_estimator
    assert estimator.samples == 0 and estimator.srtt is None
    assert s.current_rto == pytest.approx(0.2)
    clean = result(sent[1])
    (s.receive_many([clean], 0.151) if batched else s.receive(clean, 0.151))
    assert estimator.samples == 1 and estimator.srtt == pytest.approx(0.151)
    assert s.done and list(s.result) == list(range(2 * K))


def run_until_tail(s: InaSession, chunks: int, *, rtt: float, first_rtt: float,
                   last_answer_delay: float):
    """A call of `chunks` chunks, every chunk answered but the last: chunk 0 `first_rtt` after
    its send (the minimum RTT), the last but one `last_answer_delay` after the last chunk was
    sent, the others `rtt` after their send. Returns the time of that last result, the last
    chunk's payload (in flight, never answered) and the session's step then."""
    sends = {}                                  # chunk -> (time, payload)

    def record(step, now):
        for p in step.send:
            sends.setdefault(decode(p).chunk, (now, p))

    def answer_at(chunk):
        sent_at, _ = sends[chunk]
        if chunk == 0:
            return sent_at + first_rtt
        if chunk == chunks - 2:
            return sends[chunks - 1][0] + last_answer_delay if chunks - 1 in sends else None
        return sent_at + rtt

    record(s.start_integers(np.ones(chunks * K, np.int32), 0.0), 0.0)
    answered = set()
    while True:
        due = [(answer_at(c), c) for c in sends if c not in answered and c != chunks - 1]
        when, chunk = min((t, c) for t, c in due if t is not None)
        answered.add(chunk)
        step = s.receive(result(sends[chunk][1]), when)
        record(step, when)
        if chunk == chunks - 2:
            return when, sends[chunks - 1][1], step


def test_the_tail_probes_the_earliest_chunk_after_a_few_minimum_round_trips() -> None:
    """The call's last chunk is in flight alone (every chunk sent): its probe, the values with
    retx set, goes 4 minimum RTTs after the latest result, then 8, then 16, three in all; the
    RTO, learnt from 40 ms round trips, would have waited an order of magnitude longer (and
    doubled). Not counted as a loss."""
    s = session()
    last_result, last_payload, step = run_until_tail(s, 8, rtt=0.040, first_rtt=0.002,
                                                     last_answer_delay=0.040)
    assert s.in_flight == 1 and s._recovery.tail
    rto = s.current_rto
    assert rto > 0.04
    base = TAIL_PROBE_RTTS * s.rto_estimator.min_rtt
    assert base == pytest.approx(0.008)
    losses = s.counters.loss_events
    probes_at = []
    now, deadline = last_result, step.deadline
    while len(probes_at) < TAIL_PROBES + 1 and deadline is not None and deadline < 10:
        now = deadline
        step = s.timeout(now)
        for p in step.send:
            packet = decode(p)
            assert packet.kind is Kind.CONTRIB and packet.retx and packet.chunk == 7
            assert list(packet.values) == list(decode(last_payload).values)
            probes_at.append(now)
        deadline = step.deadline
    gaps = np.diff([last_result] + probes_at)
    assert gaps[:TAIL_PROBES] == pytest.approx([base, 2 * base, 4 * base])
    assert s.counters.tail_probes == TAIL_PROBES
    assert s.counters.timer_retransmissions == TAIL_PROBES + 1   # then the RTO timer
    assert gaps[TAIL_PROBES] == pytest.approx(rto)                 # then its own RTO timer
    assert s.counters.loss_events == losses + 1                   # only the RTO expiry
    step = s.receive(result(last_payload), now + 0.001)
    assert s.done


def test_the_tail_probe_is_armed_when_the_chunk_s_own_timer_already_passed() -> None:
    """Regression: the last chunk's RTO deadline had passed (the silence rules postponed it)
    when the latest result came; the probe still goes 4 minimum RTTs after that result (a
    first version armed no probe then and the chunk waited a whole RTO more)."""
    s = session()
    last_result, _, step = run_until_tail(s, 8, rtt=0.040, first_rtt=0.002,
                                          last_answer_delay=0.300)
    now = last_result
    while True:
        now = step.deadline
        step = s.timeout(now)
        if step.send:
            break
    assert decode(step.send[0]).chunk == 7
    assert s.counters.tail_probes == 1
    assert now - last_result == pytest.approx(TAIL_PROBE_RTTS * s.rto_estimator.min_rtt)


def test_no_tail_probe_while_chunks_remain_to_send() -> None:
    """Before the tail, a silence is the RTO timers' business (and the silence rules'): no
    probe is armed while chunks of the call are still unsent."""
    s = session(window=2, pool_size=2)
    step = s.start_integers(np.ones(8 * K, np.int32), 0.0)
    assert s._recovery.tail is False
    now = step.deadline
    step = s.timeout(now)
    assert s.counters.tail_probes == 0 and s.counters.timer_retransmissions == 1
