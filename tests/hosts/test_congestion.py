"""The adaptive retransmission timeout and in-flight window (hosts/congestion.py), alone and
driving an InaSession by hand on a virtual clock."""

from __future__ import annotations

import numpy as np
import pytest

from hosts import quantize as qz
from hosts.congestion import CongestionEvents, InFlightWindow, LossBursts, RtoEstimator
from hosts.ina_session import InaSession
from hosts.ina_wire import InaPacket, Kind, decode, encode, with_retx

K = 4


def test_rto_follows_rfc_6298() -> None:
    rto = RtoEstimator(initial=1.0, minimum=0.01, maximum=10.0)
    assert rto.rto == 1.0                               # no sample yet
    rto.sample(0.1)                                     # SRTT = R, RTTVAR = R/2
    assert (rto.srtt, rto.rttvar) == (0.1, 0.05)
    assert rto.rto == pytest.approx(0.3)
    rto.sample(0.5)                                     # RTTVAR first, with the old SRTT
    assert rto.rttvar == pytest.approx(0.75 * 0.05 + 0.25 * 0.4)
    assert rto.srtt == pytest.approx(0.875 * 0.1 + 0.125 * 0.5)
    assert rto.rto == pytest.approx(rto.srtt + 4 * rto.rttvar)
    assert rto.samples == 2


def test_sample_gives_exactly_the_floats_of_the_plain_formulas() -> None:
    """`sample` is written for speed (inline, no builtins): the same floats, bit for bit, as
    RFC 6298 written plainly with the 2·SRTT floor and the clamp, over many samples."""
    rng = np.random.default_rng(3)
    rto = RtoEstimator(initial=0.1, minimum=0.002, maximum=0.4)
    srtt = rttvar = least = None
    for rtt in np.concatenate([rng.exponential(0.003, 400), rng.exponential(0.2, 100),
                               [-0.001, 0.0, 1.0, 0.0005]]).tolist():
        rto.sample(rtt)
        rtt = max(rtt, 0.0)
        least = rtt if least is None else min(least, rtt)
        if srtt is None:
            srtt, rttvar = rtt, rtt / 2
        else:
            rttvar = (1 - 0.25) * rttvar + 0.25 * abs(srtt - rtt)
            srtt = (1 - 0.125) * srtt + 0.125 * rtt
        expected = min(max(srtt + 4 * rttvar, 2 * srtt, 0.002), 0.4)
        assert (rto.srtt, rto.rttvar, rto.min_rtt, rto.rto) == (srtt, rttvar, least, expected)
        assert rto.first_timer == rto.timer(1) == expected


def test_rto_is_clamped_and_each_chunk_backs_off() -> None:
    rto = RtoEstimator(initial=0.02, minimum=0.02, maximum=0.5)
    rto.sample(0.001)
    assert rto.rto == 0.02                              # the floor
    assert [rto.timer(tries) for tries in (1, 2, 3, 5, 9)] == [0.02, 0.04, 0.08, 0.32, 0.5]
    for _ in range(3):
        rto.sample(2.0)
    assert rto.rto == 0.5                               # the ceiling


def test_window_slow_starts_halves_and_grows_linearly() -> None:
    window = InFlightWindow(64)
    assert (window.floor, window.size) == (8, 8)
    for _ in range(30):
        window.on_result()                              # slow start: +1 per result
    assert window.size == 38
    window.on_timeout()
    assert window.size == 19 and not window.slow_start
    for _ in range(18):
        window.on_result()
    assert window.size == 19                            # +1 per window of results
    window.on_result()
    assert window.size == 20
    for _ in range(10):
        window.on_timeout()
    assert window.size == 8                             # never below the floor
    assert InFlightWindow(3).floor == 1 and InFlightWindow(3).size == 1


def test_window_never_exceeds_the_configured_maximum() -> None:
    window = InFlightWindow(8)
    for _ in range(100):
        window.on_result()
    assert window.size == 8


def test_congestion_events_count_once_per_round_trip() -> None:
    events = CongestionEvents()
    window = [events.transmitted() for _ in range(5)]
    assert events.expired(window[0]) and events.count == 1
    assert not any(events.expired(serial) for serial in window[1:])   # same round trip
    later = events.transmitted()
    assert events.expired(later) and events.count == 2


# ---- an adaptive session driven by hand ------------------------------------------------------

def session(**overrides) -> InaSession:
    options = dict(job=3, worker=1, n=2, k=K, pool_size=64, window=64, rto=0.02, rto_max=0.5,
                   max_retx=12)
    options.update(overrides)
    return InaSession(**options)


def answer(payload: bytes, values=None) -> bytes:
    """The aggregator's answer; a QUERY finds the sender's piece missing (a NACK)."""
    sent = decode(payload)
    if sent.kind is Kind.QUERY:
        return encode(InaPacket(kind=Kind.NACK, job=sent.job, worker=sent.worker,
                                slot=sent.slot, chunk=sent.chunk, ver=sent.ver, values=()))
    kind = Kind.MAX_RESULT if sent.kind is Kind.MAX_CONTRIB else Kind.RESULT
    return encode(InaPacket(kind=kind, job=sent.job, worker=sent.worker, slot=sent.slot,
                            chunk=sent.chunk, ver=sent.ver, count=2,
                            values=sent.values if values is None else values))


def data_phase(s: InaSession, chunks: int, now: float = 0.0) -> list[bytes]:
    """Start a float call of `chunks` chunks and answer its MAX round at once."""
    x = np.ones(chunks * K, np.float32)
    step = s.start(x, now)
    bits = qz.float32_bits(1.0)
    return list(s.receive(answer(step.send[0], np.full(K, bits, np.int32)), now).send)


def test_the_first_window_is_the_floor_and_results_open_it() -> None:
    s = session()
    sent = data_phase(s, 40)
    assert len(sent) == 8 == s.current_window
    more = s.receive(answer(sent[0]), 0.001).send      # slow start: one result, two new chunks
    assert [decode(p).chunk for p in more] == [8, 9]
    assert s.current_window == 9


def test_fixed_mode_sends_the_whole_window_and_keeps_rto() -> None:
    s = session(adaptive=False)
    sent = data_phase(s, 40)
    assert len(sent) == 40
    s.receive(answer(sent[0]), 0.3)
    assert s.current_rto == 0.02 and s.rto_estimator.samples == 0


def delayed_aggregator(s: InaSession, chunks: int, delay: float) -> list[int]:
    """Drive a call where every result comes back `delay` s after its contribution, calling
    `timeout` when the session asks; the retransmissions made after each result, in order."""
    arrivals = [(0.0, p) for p in data_phase(s, chunks)]
    deadline, retransmitted = None, []
    while not s.done:
        arrivals.sort(key=lambda item: item[0])
        if deadline is not None and deadline < arrivals[0][0] + delay:
            now = deadline
            step = s.timeout(now)
        else:
            sent_at, payload = arrivals.pop(0)
            now = sent_at + delay
            step = s.receive(answer(payload), now)
        retransmitted.append(sum(1 for p in step.send if decode(p).retx))
        arrivals += [(now, p) for p in step.send]
        deadline = step.deadline
    return retransmitted


def test_the_rto_learns_the_queueing_delay() -> None:
    """Results take 50 ms, more than the initial rto of 20 ms: at most the first window's
    earliest chunk is resent, then the RTO has learnt the delay and nothing is resent (a fixed
    rto keeps expiring, each time resending only the earliest chunk in flight, protocol §4.2)."""
    s = session()
    retransmitted = delayed_aggregator(s, 300, 0.05)
    assert s.rto_estimator.srtt == pytest.approx(0.05)
    assert s.current_rto == pytest.approx(0.1, abs=0.01)   # the 2·SRTT floor
    # at most the first window (slow start); the timers restart on every result, so here
    # (results keep coming) none fires at all
    assert sum(retransmitted) <= 8
    assert sum(retransmitted[20:]) == 0
    fixed = session(adaptive=False)
    assert 0 < sum(delayed_aggregator(fixed, 300, 0.05)) < 300 // 16  # one per silence


def test_karn_no_sample_from_a_retransmitted_chunk() -> None:
    s = session()
    s._silence.data_results = 1     # losses measured rare: the earliest is probed alone
    (first, *_rest) = data_phase(s, 8)
    retransmitted = s.timeout(0.02).send               # the earliest chunk expires
    assert retransmitted == (with_retx(first),)
    s.receive(answer(first), 0.5)
    assert s.rto_estimator.samples == 0                # answered after a retransmission


def test_losses_before_the_first_result_do_not_end_slow_start() -> None:
    """Regression (issue 32): the first window after the MAX round waits on a barrier (the
    slowest worker's start) and, at heavy loss, on several rounds of recovery; its expiries
    before the call's first data result are counted as losses but say nothing of congestion
    (as the MAX round's): judged a burst against a loss rate not yet measured, they ended
    slow start at the floor (a star of 4 at 5 %: 1.32x -> 1.66x its lossless time)."""
    s = session(window=64, pool_size=128)
    sent = data_phase(s, 200)
    assert len(sent) == 8
    now, resent = 0.0, []
    while not resent:
        now = s.timeout(now).deadline if now else s.timeout(0.0).deadline
        resent = list(s.timeout(now).send)
    assert len(resent) == 8 and s.counters.loss_events == 8    # the whole first window
    assert s.counters.congestion_events == 0 and s.in_flight_window.slow_start
    more = s.receive(answer(resent[0]), now + 0.001).send
    assert s.current_window == 9 and len(more) == 2          # slow start goes on


def test_a_result_overtaken_by_a_later_one_is_no_sample() -> None:
    s = session()
    sent = data_phase(s, 8)
    s.receive(answer(sent[1]), 0.004)
    assert s.rto_estimator.samples == 1
    s.receive(answer(sent[0]), 0.015)                  # waited for another worker
    assert s.rto_estimator.samples == 1 and s.rto_estimator.srtt == 0.004
    s.receive(answer(sent[2]), 0.016)
    assert s.rto_estimator.samples == 2


def test_a_window_expiring_at_once_halves_the_window_once() -> None:
    s = session(window=32, pool_size=32, window_rule="every_loss")
    sent = data_phase(s, 64)
    now = 0.0
    for payload in sent[:4]:                           # slow start to 8 in flight... and more
        sent += s.receive(answer(payload), now).send
    size = s.current_window
    assert size == 8
    expired = s.timeout(1.0).send
    assert len(expired) == 1                           # only the earliest is resent
    assert s.current_window == max(4, size // 2) and s.counters.congestion_events == 1
    # the retransmissions' own timers, expiring again, are a new round trip: one more event
    s.timeout(2.0)
    assert s.counters.congestion_events == 2 and s.current_window == 4


def test_the_max_round_timeout_leaves_the_window_alone() -> None:
    s = session()
    s.start(np.ones(8, np.float32), 0.0)
    assert len(s.timeout(0.02).send) == 1
    assert s.counters.congestion_events == 0 and s.current_window == 8


def test_loss_bursts_learn_the_usual_loss_rate() -> None:
    bursts = LossBursts()
    assert bursts.expected(16) == 2.0                  # nothing learnt: only the slack
    assert not any(bursts.lost(16) for _ in range(16))  # nothing judged before a measurement
    for _ in range(16):
        bursts.transmitted(16)
    assert bursts.learnt and bursts.rate == 1.0        # the first window's fraction as it is
    assert bursts.bursts == 0
    for _ in range(40):                                # windows of 16 with 4 losses each
        for i in range(16):
            if i < 4:
                bursts.lost(16)
            bursts.transmitted(16)
    assert bursts.rate == pytest.approx(0.25, abs=0.02)
    assert 11 < bursts.expected(16) < 11.3             # 4 + 3·sqrt(3) + 2
    before = bursts.bursts
    assert not any(bursts.lost(16) for _ in range(11))  # the usual rate and a little more
    assert any(bursts.lost(16) for _ in range(10)) and bursts.bursts == before + 1
    assert not bursts.lost(16)                         # at most one per window


def test_a_first_window_of_random_loss_is_not_a_burst() -> None:
    """Regression (tree loss, docs/loss.md): before q was measured, 3 losses in the first
    window of a 16-worker tree at 5 % loss were a burst and ended slow start."""
    bursts = LossBursts()
    for _ in range(3):
        assert not bursts.lost(8)
    for _ in range(8):
        bursts.transmitted(8)
    assert bursts.rate == pytest.approx(3 / 8)
    # a second window with the same share is what q explains
    assert not any(bursts.lost(8) for _ in range(3)) and bursts.bursts == 0


def test_random_loss_keeps_the_window_and_a_burst_halves_it() -> None:
    """Single losses spread over the call (what random loss looks like) leave the window at
    its maximum; a whole window lost at once (a queue overflowing) halves it (protocol §4.2)."""
    s = session(window=16, pool_size=64)
    pending = data_phase(s, 400)
    now, lost_at = 0.0, set(range(20, 400, 25))        # one chunk in 25 lost, once
    while len(pending) > 0 and s.current_window < 16 or now < 0.001:
        now += 0.0001
        payload = pending.pop(0)
        pending += s.receive(answer(payload), now).send
    assert s.current_window == 16
    while not s.done:
        now += 0.0001
        payload = pending.pop(0)
        chunk = decode(payload).chunk
        if chunk in lost_at and not decode(payload).retx:
            step = s.timeout(now)                        # dropped: nothing comes back
        else:
            step = s.receive(answer(payload), now)
        pending += step.send
        if not pending and not s.done:
            now = max(now, step.deadline)
            pending += s.timeout(now).send
    assert s.counters.fast_retransmissions == len(lost_at)
    assert s.counters.congestion_events == 0 and s.current_window == 16
    burst = session(window=16, pool_size=64)
    sent = data_phase(burst, 400)
    while burst.current_window < 16:
        sent += burst.receive(answer(sent.pop(0)), 0.001).send
    in_flight = list(sent)
    assert len(in_flight) == 16
    burst.receive(answer(in_flight[-1]), 0.002)        # the 15 before it were all dropped
    assert burst.counters.fast_retransmissions == 15
    assert burst.counters.congestion_events == 1 and burst.current_window == 8


def test_a_spurious_timeout_is_an_unambiguous_sample() -> None:
    """A timer fires while the result is still on its way (a stalled switch process): the
    result comes back sooner than any round trip after the retransmission, so it answers the
    first copy; its round trip is sampled and the RTO grows (Karn's rule alone learns
    nothing and the timers keep firing)."""
    s = session(window=2, pool_size=64, rto=0.02, rto_max=0.5)
    sent = data_phase(s, 4)
    s.receive(answer(sent[0]), 0.010)             # an RTT sample of 10 ms
    rto_before, samples = s.current_rto, s.rto_estimator.samples
    retransmitted = s.timeout(1.0).send           # chunks 1, 2: silent far beyond the RTO
    assert [decode(p).chunk for p in retransmitted] == [1]    # the earliest only
    s.receive(answer(retransmitted[0]), 1.002)    # 2 ms later: cannot answer the copy
    assert s.counters.spurious_timeouts == 1
    assert s.rto_estimator.samples == samples + 1 and s.current_rto > rto_before


def test_a_late_answer_to_a_retransmission_stays_ambiguous() -> None:
    s = session(window=2, pool_size=64, rto=0.02, rto_max=0.5)
    sent = data_phase(s, 4)
    s.receive(answer(sent[0]), 0.010)
    samples = s.rto_estimator.samples
    retransmitted = s.timeout(1.0).send
    s.receive(answer(retransmitted[0]), 1.030)    # a whole round trip later: either copy
    assert s.counters.spurious_timeouts == 0 and s.rto_estimator.samples == samples
