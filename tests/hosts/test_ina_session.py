"""The InaSession state machine driven by hand: transitions, timers, backoff, give-up, noise."""

from __future__ import annotations

import ast
from pathlib import Path

import numpy as np
import pytest

from hosts import quantize as qz
from hosts.errors import PeerUnreachable, UsageError
from hosts.ina_session import TRANSITIONS, Event, InaSession, State
from hosts.ina_wire import InaPacket, Kind, decode, encode

K = 4


def session(**overrides) -> InaSession:
    """A session with a fixed RTO and window (tests/hosts/test_congestion.py: adaptive)."""
    options = dict(job=3, worker=1, n=2, k=K, pool_size=2, window=2, rto=1.0, rto_max=3.0,
                   max_retx=2, adaptive=False)
    options.update(overrides)
    return InaSession(**options)


def answer(payload: bytes, values=None, *, count: int = 2, **changes) -> bytes:
    """The switch's RESULT (or MAX_RESULT) for a contribution, to the same worker."""
    sent = decode(payload)
    kind = Kind.MAX_RESULT if sent.kind is Kind.MAX_CONTRIB else Kind.RESULT
    fields = dict(kind=kind, job=sent.job, worker=sent.worker, slot=sent.slot, chunk=sent.chunk,
                  ver=sent.ver, count=count, values=sent.values if values is None else values)
    fields.update(changes)
    return encode(InaPacket(**fields))


def in_data_phase(s: InaSession, vector, *, global_max: float | None = None):
    step = s.start(np.asarray(vector, np.float32), 0.0)
    bits = qz.float32_bits(global_max if global_max is not None else qz.local_max(
        np.asarray(vector, np.float32)))
    return s.receive(answer(step.send[0], (bits,) * K), 0.5)


def test_transition_table_covers_every_state() -> None:
    assert {state for state, _ in TRANSITIONS} == set(State) - {State.FAILED}
    assert TRANSITIONS[(State.MAX_ROUND, Event.SCALE_AGREED)] is State.DATA
    assert all(target is not State.IDLE for target in TRANSITIONS.values())


def test_start_sends_the_max_round_packet() -> None:
    s = session()
    step = s.start(np.array([0.5, -3.0, 1.0], np.float32), 10.0)
    assert s.state is State.MAX_ROUND
    assert step.deadline == 11.0
    assert step.send == (encode(InaPacket(kind=Kind.MAX_CONTRIB, job=3, worker=1, slot=0,
                                          chunk=0, values=(0x40400000,) * K)),)
    assert s.counters.packets_sent == 1 and s.counters.bytes_sent == 16 + 4 * K


def test_max_result_fixes_the_scale_and_opens_the_window() -> None:
    s = session(pool_size=4, window=3)
    step = in_data_phase(s, np.arange(10, dtype=np.float32), global_max=18.0)
    assert s.state is State.DATA
    assert s.global_max == 18.0 and s.scale == qz.scale_for(18.0, 2)
    sent = [decode(p) for p in step.send]
    assert [(p.kind, p.chunk, p.slot, p.ver) for p in sent] == [
        (Kind.CONTRIB, 0, 0, 0), (Kind.CONTRIB, 1, 1, 0), (Kind.CONTRIB, 2, 2, 0)]
    expected = qz.quantize(np.arange(10, dtype=np.float32), s.scale, 2)
    assert list(sent[1].values) == expected[4:8].tolist()
    assert step.deadline == 1.5


def test_results_complete_the_call_and_trim_the_padding() -> None:
    s = session()
    x = np.array([1.0, -2.0, 0.25, 4.0, 8.0, -8.0], np.float32)
    step = in_data_phase(s, x)
    outputs = list(step.send)
    while outputs:
        payload = outputs.pop(0)
        doubled = tuple(2 * v for v in decode(payload).values)
        outputs += s.receive(answer(payload, doubled), 1.0).send
    assert s.state is State.DONE and s.done
    assert np.array_equal(s.result, 2 * x)
    assert s.next_position == 2 and s.max_rounds == 1
    assert np.all(s.error_bound() > 0)


def test_position_gate_waits_for_the_result_of_p_minus_pool_size() -> None:
    s = session(pool_size=2, window=2)
    first = in_data_phase(s, np.ones(5 * K, np.float32)).send     # chunks 0 and 1
    assert [decode(p).chunk for p in first] == [0, 1]
    # chunk 1 answered: one place in the window, but chunk 2 reuses slot 0 (chunk 0 pending);
    # chunk 0, sent before chunk 1, is lost: resent at once (protocol §4.1), nothing new
    (resent,) = s.receive(answer(first[1]), 1.0).send
    assert (decode(resent).chunk, decode(resent).retx) == (0, True)
    step = s.receive(answer(first[0]), 1.1)
    assert [(decode(p).chunk, decode(p).slot, decode(p).ver) for p in step.send] == [
        (2, 0, 1), (3, 1, 1)]


def test_timeout_retransmits_with_backoff_and_the_retx_flag() -> None:
    s = session(rto=1.0, rto_max=3.0, max_retx=5)
    step = s.start(np.ones(3, np.float32), 0.0)
    assert s.timeout(0.99).send == ()                 # early: nothing is due
    deadlines = []
    now = step.deadline
    for _ in range(4):
        step = s.timeout(now)
        (payload,) = step.send
        assert decode(payload).retx and decode(payload).kind is Kind.MAX_CONTRIB
        deadlines.append(step.deadline - now)
        now = step.deadline
    assert deadlines == [2.0, 3.0, 3.0, 3.0]          # doubling, capped at rto_max
    assert s.counters.retransmissions == 4 and s.counters.packets_sent == 5


def test_exhausted_retries_raise_peer_unreachable_naming_the_chunk() -> None:
    s = session(max_retx=1, pool_size=4, window=4)
    step = in_data_phase(s, np.ones(2 * K, np.float32))
    s.receive(answer(step.send[0]), 0.6)              # chunk 0 done; chunk 1 keeps failing
    assert s.timeout(1.5).send == ()                  # the timer restarted with that result
    assert len(s.timeout(1.6).send) == 1
    with pytest.raises(PeerUnreachable) as failure:
        s.timeout(10.0)
    assert (failure.value.job, failure.value.slot, failure.value.chunk,
            failure.value.tries) == (3, 1, 1, 2)
    assert "job 3" in str(failure.value) and "chunk 1 (slot 1)" in str(failure.value)
    assert s.state is State.FAILED
    with pytest.raises(UsageError, match="failed"):
        s.start(np.ones(3, np.float32), 11.0)


def test_the_max_round_can_give_up_too() -> None:
    s = session(max_retx=0)
    s.start(np.ones(3, np.float32), 0.0)
    with pytest.raises(PeerUnreachable, match="the MAX round after 1 transmissions"):
        s.timeout(1.0)


def test_noise_is_counted_and_ignored() -> None:
    s = session(pool_size=4, window=4)
    step = s.start(np.ones(2 * K, np.float32), 0.0)
    max_packet = step.send[0]
    one = (qz.float32_bits(1.0),) * K
    for noise, counter in [
        (b"garbage", "malformed_ignored"),
        (answer(max_packet, one, count=3), "malformed_ignored"),
        (answer(max_packet, (qz.float32_bits(0.5),) * K), "malformed_ignored"),  # < own max
        (answer(max_packet, (0x7F800000,) * K), "malformed_ignored"),            # inf
        (answer(max_packet, one, job=4), "foreign_ignored"),
        (answer(max_packet, one, worker=0), "foreign_ignored"),
        (max_packet, "foreign_ignored"),                                          # a CONTRIB
        (answer(max_packet, one, ver=1), "duplicates_ignored"),                   # stale round
    ]:
        before = getattr(s.counters, counter)
        assert s.receive(noise, 0.1).send == ()
        assert getattr(s.counters, counter) == before + 1, noise
        assert s.state is State.MAX_ROUND
    data = s.receive(answer(max_packet, one), 0.2).send
    assert s.receive(answer(max_packet, one), 0.3).send == ()   # duplicate MAX_RESULT
    assert s.counters.duplicates_ignored == 2
    # results for a chunk not in flight, or with the wrong slot or version
    for stale in (answer(data[0], chunk=5), answer(data[0], slot=3), answer(data[0], ver=1)):
        assert s.receive(stale, 0.4).send == ()
    assert s.counters.duplicates_ignored == 5
    s.receive(answer(data[0]), 0.5)
    assert s.receive(answer(data[0]), 0.6).send == ()           # a duplicate RESULT
    assert s.counters.duplicates_ignored == 6
    s.receive(answer(data[1]), 0.7)
    assert s.done
    assert s.receive(answer(data[1]), 0.8).send == ()           # late, after the call
    assert s.counters.duplicates_ignored == 7
    assert s.counters.packets_received == 17


def test_positions_and_max_versions_continue_across_calls() -> None:
    s = session(pool_size=2, window=2)
    for call in range(3):
        step = s.start(np.ones(3 * K, np.float32), float(call))
        assert decode(step.send[0]).ver == call % 2
        outputs = list(s.receive(answer(step.send[0]), call + 0.1).send)
        seen = []
        while outputs:
            payload = outputs.pop(0)
            packet = decode(payload)
            seen.append((packet.chunk, packet.slot, packet.ver))
            outputs += s.receive(answer(payload), call + 0.2).send
        base = 3 * call
        assert seen == [(c, (base + c) % 2, ((base + c) // 2) % 2) for c in range(3)]
        assert s.done
    assert s.next_position == 9


def test_integer_calls_skip_the_max_round() -> None:
    s = session()
    step = s.start_integers(np.array([5, -6, 7], np.int32), 0.0)
    assert s.state is State.DATA
    (payload,) = step.send
    assert decode(payload).values.tolist() == [5, -6, 7, 0]
    s.receive(answer(payload, (10, -12, 14, 0)), 0.1)
    assert s.result.tolist() == [10, -12, 14] and s.result.dtype == np.int32
    with pytest.raises(UsageError, match="finished float32"):
        s.error_bound()


def test_empty_vector_needs_no_packets() -> None:
    s = session()
    step = s.start(np.zeros(0, np.float32), 0.0)
    assert step.send == () and step.deadline is None and s.done
    assert s.result.size == 0 and s.max_rounds == 0


def test_misuse_is_a_usage_error_and_changes_nothing() -> None:
    s = session()
    s.start(np.ones(3, np.float32), 0.0)
    with pytest.raises(UsageError, match="cannot start in state max_round"):
        s.start(np.ones(3, np.float32), 0.1)
    assert s.state is State.MAX_ROUND and s.counters.packets_sent == 1
    with pytest.raises(UsageError, match="non-finite"):
        session().start(np.array([np.nan], np.float32), 0.0)
    with pytest.raises(UsageError, match="int32"):
        session().start_integers(np.ones(3, np.int64), 0.0)
    for bad in (dict(worker=2), dict(n=65536, worker=0), dict(k=6), dict(window=3),
                dict(pool_size=0), dict(rto=0), dict(rto_max=0.5), dict(max_retx=-1),
                dict(rto_min=0), dict(rto_min=4.0), dict(adaptive=1)):
        with pytest.raises(UsageError):
            session(**bad)


@pytest.mark.parametrize("module", ["ina_session", "ring_session", "ina_wire", "ring_wire",
                                    "quantize"])
def test_protocol_cores_do_no_io(module: str) -> None:
    source = (Path(__file__).resolve().parents[2] / "hosts" / f"{module}.py").read_text()
    imported = set()
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Import):
            imported |= {alias.name.split(".")[0] for alias in node.names}
        elif isinstance(node, ast.ImportFrom) and node.level == 0:
            imported.add(node.module.split(".")[0])
    assert not imported & {"socket", "select", "selectors", "time", "asyncio", "threading"}
