"""Timer-driven recovery (docs/protocol.md §4.2): an expiry resends only the earliest chunk in
flight (RFC 6298 §5), backed off per expiry; the first window after a MAX round, a barrier,
waits for it; real losses are still recovered, flat and on a tree, in every lane format."""

from __future__ import annotations

import numpy as np
import pytest

from hosts import quantize as qz
from hosts.errors import PeerUnreachable
from hosts.ina_session import InaSession, State
from hosts.ina_wire import InaPacket, Kind, decode, encode

from tests.hosts.inproc import ina_switch, star_network, tree_network

K = 4


def session(**overrides) -> InaSession:
    options = dict(job=3, worker=1, n=2, k=K, pool_size=16, window=16, rto=0.01, rto_max=1.0,
                   max_retx=10, adaptive=False)
    options.update(overrides)
    return InaSession(**options)


def measured(s: InaSession) -> InaSession:
    """`s` as after earlier calls whose results showed no loss: the silence rules' premise
    (losses are rare) is measured. A session with no data result yet has measured nothing,
    and every chunk's timer counts (protocol §4.2; test_a_first_window_without_results...)."""
    s._silence.data_results = 1
    return s


def answer(payload: bytes) -> bytes:
    """The switch's RESULT (MAX_RESULT) for a contribution: its own values, count 2."""
    sent = decode(payload)
    kind = Kind.MAX_RESULT if sent.kind is Kind.MAX_CONTRIB else Kind.RESULT
    return encode(InaPacket(kind=kind, job=sent.job, worker=sent.worker, slot=sent.slot,
                            chunk=sent.chunk, ver=sent.ver, count=2, values=sent.values))


def data_phase(s: InaSession, chunks: int, now: float = 0.0) -> tuple[list[bytes], float]:
    """A float call of `chunks` chunks through its MAX round (answered 1 ms after `now`): the
    first window's payloads and the deadline."""
    step = s.start(np.ones(chunks * K, np.float32), now)
    step = s.receive(answer(step.send[0]), now + 0.001)
    return list(step.send), step.deadline


def chunks_of(payloads) -> list[int]:
    return [decode(p).chunk for p in payloads]


@pytest.mark.parametrize("adaptive", [False, True])
def test_a_silence_resends_one_chunk_per_expiry(adaptive: bool) -> None:
    """No result for a while (a descheduled process): the expiry resends the earliest chunk in
    flight alone, a probe; while the probe is out nothing else is resent, and when the results
    come, nothing more is. (Before: every chunk in flight, the whole window, at once.)"""
    s = measured(session(adaptive=adaptive, rto_min=0.002))
    sent, _ = data_phase(s, 16)
    assert len(sent) >= 2
    step = s.receive(answer(sent[0]), 0.002)            # chunk 0 answered: then silence
    sent = sent[1:] + list(step.send)
    probe_at = step.deadline
    while not (probe := s.timeout(probe_at)).send:     # timers restarted by that result
        probe_at = probe.deadline
    assert chunks_of(probe.send) == [1] and decode(probe.send[0]).retx
    wait = s._in_flight[1].wait                         # the probe's backed-off timer
    now = probe_at
    while (now := s.timeout(now).deadline) < probe_at + wait:   # the others look, stay put
        pass
    assert s.counters.timer_retransmissions == 1
    now = probe_at + 0.999 * wait                       # the results come before it expires
    for payload in sent:
        step = s.receive(answer(payload), now)
        assert not any(decode(p).retx for p in step.send)
        sent += list(step.send)
        now += 0.00001
        if s.done:
            break
    assert s.done and s.counters.timer_retransmissions == 1


def test_a_probe_repeats_alone_then_the_others_timers_count() -> None:
    """The probe's timer doubles; when the probe goes unanswered the silence is a loss, and the
    other chunks' own timers count again (a piece of theirs may be this worker's own)."""
    s = measured(session())
    sent, deadline = data_phase(s, 16)                  # sent at 0.001, RTO 10 ms
    assert chunks_of(s.timeout(deadline).send) == [0]
    assert s.timeout(deadline + 0.0199).send == ()      # the probe waits 20 ms
    again = s.timeout(deadline + 0.02).send
    assert chunks_of(again) == list(range(16))          # the probe, then every other chunk
    assert s.counters.timer_retransmissions == 17


def test_exhausted_retries_count_the_earliest_chunks_expiries() -> None:
    s = session(max_retx=2)
    sent, deadline = data_phase(s, 16)
    assert len(sent) == 16
    now = deadline
    with pytest.raises(PeerUnreachable) as failure:
        for _ in range(200):
            now = s.timeout(now).deadline
    assert failure.value.chunk == 0 and failure.value.tries == 3 and s.state is State.FAILED
    # the others, resent once the probe went unanswered, ran out too but do not count
    assert max(f.expiries for key, f in s._in_flight.items() if key) >= 2


def test_the_next_chunk_times_out_an_rto_after_the_earliest_is_answered() -> None:
    """As TCP restarts its timer on an ACK of new data (RFC 6298 5.3); the next earliest then
    probes alone."""
    s = measured(session())
    data_phase(s, 16)                                   # sent at 0.001, RTO 10 ms
    assert chunks_of(s.timeout(0.011).send) == [0]      # chunk 1 is not resent with it
    resent_result = encode(InaPacket(kind=Kind.RESULT, job=3, worker=1, slot=0, chunk=0,
                                     count=2, values=(qz.float32_bits(0.0),) * K))
    s.receive(resent_result, 0.016)                     # the resend answered
    assert s.timeout(0.0255).send == ()
    assert chunks_of(s.timeout(0.0261).send) == [1]     # 10 ms after that result


def barrier_call(s: InaSession, start: float, straggle: float, rtt: float) -> tuple[int, float]:
    """A float call whose first results come `straggle` s after the MAX result (the other
    workers are still quantizing), then every result `rtt` after its send; every payload is
    answered (no loss). The call's timer retransmissions and its end."""
    before = s.counters.timer_retransmissions
    first, deadline = data_phase(s, 64, start)
    data_start = start + 0.001
    pending = [(data_start + straggle, p) for p in first]
    while not s.done:
        pending.sort(key=lambda item: item[0])
        if deadline is not None and (not pending or deadline < pending[0][0]):
            now, step = deadline, s.timeout(deadline)
        else:
            now, payload = pending.pop(0)
            step = s.receive(answer(payload), now)
        pending += [(max(now + rtt, data_start + straggle), p) for p in step.send]
        deadline = step.deadline
    return s.counters.timer_retransmissions - before, now


def test_the_first_window_after_a_max_round_waits_for_the_barrier() -> None:
    """Call 1 learns how long the first result takes after the MAX result (30 ms, while the
    stragglers quantize); call 2's first window does not expire against the 1 ms RTO of
    call 1's steady state."""
    s = session(adaptive=True, window=16, pool_size=16, rto=0.1, rto_min=0.001)
    _first_call, end = barrier_call(s, 0.0, 0.030, 0.001)    # nothing learnt yet: expiries
    assert s.current_rto < 0.01                         # the path's RTO: a few ms
    second_call, _ = barrier_call(s, end + 0.001, 0.030, 0.001)
    assert second_call == 0
    third_call, _ = barrier_call(s, 1.0, 0.025, 0.001)
    assert third_call == 0


@pytest.mark.parametrize("fmt", ["int32", "int16", "int8"])
def test_losses_at_5_percent_are_recovered_on_a_star(fmt: str) -> None:
    n, k, pool = 4, 8, 16
    sw = ina_switch(k, job=3, n=n, pool_size=pool)
    sessions = [InaSession(job=3, worker=w, n=n, k=k, pool_size=pool, window=pool, rto=0.01,
                           rto_max=0.1, max_retx=40, fmt=fmt) for w in range(n)]
    rng = np.random.default_rng(21)
    net = star_network(sw, sessions, loss=0.05, seed=7)
    for call in range(2):
        vectors = [rng.standard_normal(700).astype(np.float32) for _ in range(n)]
        exact = np.sum([v.astype(np.float64) for v in vectors], axis=0)
        net.run([s.start(v, net.now) for s, v in zip(sessions, vectors)])
        assert all(s.done for s in sessions)
        result = sessions[0].result
        assert all(np.array_equal(s.result, result) for s in sessions)
        assert np.all(np.abs(result - exact) <= sessions[0].error_bound())
    assert net.stats.dropped > 0 and sum(s.counters.retransmissions for s in sessions) > 0


def test_losses_at_5_percent_are_recovered_on_a_tree() -> None:
    sessions = [InaSession(job=3, worker=w % 2, n=4, k=8, pool_size=8, window=8, rto=0.01,
                           rto_max=0.1, max_retx=40) for w in range(4)]
    rng = np.random.default_rng(5)
    vectors = [rng.standard_normal(500).astype(np.float32) for _ in range(4)]
    exact = np.sum([v.astype(np.float64) for v in vectors], axis=0)
    net = tree_network(8, job=3, leaves=2, per_leaf=2, pool_size=8, sessions=sessions,
                       loss=0.05, seed=9)
    net.run([s.start(v, net.now) for s, v in zip(sessions, vectors)])
    result = sessions[0].result
    assert all(s.done and np.array_equal(s.result, result) for s in sessions)
    assert np.all(np.abs(result - exact) <= sessions[0].error_bound())


def test_integer_calls_at_5_percent_are_exact() -> None:
    n, k, pool = 3, 8, 8
    sw = ina_switch(k, job=3, n=n, pool_size=pool)
    sessions = [InaSession(job=3, worker=w, n=n, k=k, pool_size=pool, window=pool, rto=0.01,
                           rto_max=0.1, max_retx=40) for w in range(n)]
    rng = np.random.default_rng(4)
    xs = [rng.integers(-1000, 1000, size=900).astype(np.int32) for _ in range(n)]
    net = star_network(sw, sessions, loss=0.05, seed=11)
    net.run([s.start_integers(x, 0.0) for s, x in zip(sessions, xs)])
    exact = np.sum(np.array(xs, dtype=np.int64), axis=0)
    assert all(np.array_equal(s.result.astype(np.int64), exact) for s in sessions)


def test_where_losses_are_common_every_chunks_timer_counts() -> None:
    """With more than one usual loss per window (heavy loss) a silence is more likely losses
    of several chunks than a stall: no probe, each expired chunk is resent (a worker's lost
    piece must not wait for its earlier chunks: the others wait on it)."""
    s = session(adaptive=True, rto_min=0.002, window=16, pool_size=16)
    s.counters.loss_events = 200                        # seen: 3.2 losses per window of 16
    s.counters.packets_sent = 1000
    s.in_flight_window.size = 16
    sent, deadline = data_phase(s, 16)
    now = deadline
    while not (step := s.timeout(now)).send:
        now = step.deadline
    assert chunks_of(step.send) == list(range(len(sent)))


def test_a_first_window_without_results_is_not_probed_alone() -> None:
    """Regression (issue 32): before the session's first data result no loss can have been
    found, so "losses are rare" is not measured and every chunk's timer counts; probing the
    earliest alone held the rest of the first window for three RTOs (on the 16-worker
    fat-tree at 10 % loss nearly every chunk of it loses a piece). Once results have come
    (`measured`), a silence is probed by the earliest alone (the tests above)."""
    s = session()
    data_phase(s, 40)                                   # sent at 0.001, RTO 10 ms
    assert chunks_of(s.timeout(0.011).send) == list(range(16))
    assert s.counters.timer_retransmissions == 16
