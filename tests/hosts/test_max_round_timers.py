"""The MAX round's timers (docs/protocol.md §4.2, "The MAX round"): when the first probe went
unanswered too and the result waited for a recovery (retx), the barrier's round trip counts from
the latest copy (not below rto_min); its probes double from rto_min up to 4 minimum round trips once one is known; it gives
up after as long as the uncapped doubling takes, whatever the cap (issue 32)."""

from __future__ import annotations

import numpy as np
import pytest

from hosts.errors import PeerUnreachable
from hosts.ina_session import InaSession, State
from hosts.ina_wire import InaPacket, Kind, decode, encode

K = 4


def session(**overrides) -> InaSession:
    options = dict(job=3, worker=1, n=2, k=K, pool_size=16, window=16, rto=0.1, rto_max=1.0,
                   max_retx=10, rto_min=0.002)
    options.update(overrides)
    return InaSession(**options)


def max_result(payload: bytes, retx: bool = False) -> bytes:
    """The switch's MAX_RESULT for a MAX_CONTRIB: its own values (the maximum of one); `retx`:
    the round waited for a recovery (protocol §3)."""
    sent = decode(payload)
    assert sent.kind is Kind.MAX_CONTRIB
    return encode(InaPacket(kind=Kind.MAX_RESULT, job=sent.job, worker=sent.worker, slot=0,
                            chunk=0, ver=sent.ver, count=2, values=sent.values, retx=retx))


def probed_max_round(s: InaSession, answered: float, retx: bool) -> None:
    """The offer sent at 0 and resent by its timer at 2, 6 and 14 ms; the result at `answered`."""
    step = s.start(np.ones(8 * K, np.float32), 0.0)
    first = step.send[0]
    for expected in (0.002, 0.006, 0.014):
        assert step.deadline == pytest.approx(expected)
        step = s.timeout(step.deadline)
    s.receive(max_result(first, retx), answered)
    assert s.state is State.DATA


def probe_times(s: InaSession, now: float, probes: int) -> list[float]:
    """Start a float call at `now` and let its MAX round go unanswered for `probes` expiries:
    when each probe went out."""
    step = s.start(np.ones(8 * K, np.float32), now)
    times = []
    for _ in range(probes):
        now = step.deadline
        step = s.timeout(now)
        assert [decode(p).kind for p in step.send] == [Kind.MAX_CONTRIB]
        times.append(now)
    return times


def test_the_barrier_round_trip_counts_from_the_latest_max_send() -> None:
    """Regression (issue 32): the offer was resent at 2, 6 and 14 ms and the result, which
    waited for a recovery (retx), came 3 ms after the last copy: the data phase's first RTO is
    twice those 3 ms, not twice the 17 ms since the first send. On the 16-worker fat-tree at
    10 % loss most workers' MAX rounds took 7-15 ms of probe intervals (their own or another
    worker's recovery), the first RTO was 15-31 ms, and with few clean RTT samples at that loss
    it paced the call (seed 5: 6.25x the lossless time)."""
    s = session()
    probed_max_round(s, 0.017, retx=True)
    assert s.rto_estimator.initial == pytest.approx(0.006)      # 2 x 3 ms, not 2 x 17 ms
    assert s._silence.max_round_trip == pytest.approx(0.003)


def test_a_result_just_after_the_latest_copy_counts_as_rto_min() -> None:
    """0.3 ms after the probe of 14 ms the result was already on its way (it answers an earlier
    copy): the round trip counts as rto_min (2 ms), the first RTO 4 ms, not its 2 ms floor."""
    s = session()
    probed_max_round(s, 0.0143, retx=True)
    assert s.rto_estimator.initial == pytest.approx(0.004)
    assert s._silence.max_round_trip == pytest.approx(0.002)


def test_one_unanswered_probe_is_not_a_recovery() -> None:
    """Regression: one probe (at 2 ms) may be a slow round: the whole wait counts, retx or not.
    A star of 32 at 1 % loss, whose results came 0.3 ms after that probe (the round 2.3 ms),
    started its data phase at the RTO's floor when that 0.3 ms counted, and its first window,
    which queues at the switch, was resent by timers until the switch's input queue dropped
    (1,619 values resent against 156; tests/sim/test_hosts_adaptive.py)."""
    s = session()
    step = s.start(np.ones(8 * K, np.float32), 0.0)
    first = step.send[0]
    assert step.deadline == pytest.approx(0.002)
    s.timeout(0.002)
    s.receive(max_result(first, retx=True), 0.0023)
    assert s.rto_estimator.initial == pytest.approx(0.0046)
    assert s._silence.max_round_trip == pytest.approx(0.0023)


def test_without_retx_the_barrier_counts_from_the_first_send() -> None:
    """A result without retx waited for no recovery: the resends were probes while the last
    worker started (a real barrier), and the round trip is the whole wait, as before."""
    s = session()
    probed_max_round(s, 0.017, retx=False)
    assert s.rto_estimator.initial == pytest.approx(0.034)
    assert s._silence.max_round_trip == pytest.approx(0.017)


def test_a_max_round_sent_once_still_bounds_the_first_rto() -> None:
    """Without a resend the latest send is the first: twice its round trip, as before."""
    s = session()
    step = s.start(np.ones(8 * K, np.float32), 0.0)
    s.receive(max_result(step.send[0]), 0.0015)
    assert s.rto_estimator.initial == pytest.approx(0.003)
    assert s._silence.max_round_trip == pytest.approx(0.0015)


def test_max_probes_double_until_a_round_trip_is_known_then_stop_at_four() -> None:
    """A session's first MAX round knows no round trip: 2, 4, 8, 16 ms between probes. Once
    one is known (1 ms here), the doubling stops at 4 minimum round trips (4 ms)."""
    first = probe_times(session(), 0.0, 5)
    assert np.diff([0.0, *first]) == pytest.approx([0.002, 0.004, 0.008, 0.016, 0.032])
    s = session()
    s.rto_estimator.sample(0.001)                   # a round trip of an earlier call
    later = probe_times(s, 0.0, 5)
    assert np.diff([0.0, *later]) == pytest.approx([0.002, 0.004, 0.004, 0.004, 0.004])


@pytest.mark.parametrize("known_rtt", [None, 0.001])
def test_the_max_round_gives_up_after_the_uncapped_schedules_time(known_rtt) -> None:
    """max_retx = 5, from rto_min = 2 ms: the doubling expires the 6th time 126 ms after the
    first send (2 + 4 + ... + 64), and that is when PeerUnreachable comes, capped or not: the
    cap shortens the wait for a lost packet, not the patience with a peer slow to start."""
    s = session(max_retx=5)
    if known_rtt is not None:
        s.rto_estimator.sample(known_rtt)
    step = s.start(np.ones(8 * K, np.float32), 0.0)
    now = 0.0
    with pytest.raises(PeerUnreachable) as failure:
        for _ in range(100):
            now = step.deadline
            step = s.timeout(now)
    assert failure.value.chunk is None and s.state is State.FAILED
    ceiling = 0.002 if known_rtt is None else 0.004     # the last interval's length
    assert 0.126 - 1e-9 <= now < 0.126 + ceiling
    assert failure.value.tries == (6 if known_rtt is None else 32)   # 2+4+30x4 = 126 ms


def test_fixed_timers_keep_counting_expiries() -> None:
    """adaptive = False: the MAX round waits rto doubling, and gives up after max_retx."""
    s = session(adaptive=False, rto=0.01, max_retx=2)
    step = s.start(np.ones(8 * K, np.float32), 0.0)
    now = 0.0
    with pytest.raises(PeerUnreachable):
        for _ in range(10):
            now = step.deadline
            step = s.timeout(now)
    assert now == pytest.approx(0.01 + 0.02 + 0.04)
