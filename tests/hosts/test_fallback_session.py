"""A worker of a job whose slots are split between the switch and a host aggregator
(docs/fallback.md): loss detection compares a chunk only with chunks of its own path, since
the host's results come later than the switch's for chunks sent before them."""

from __future__ import annotations

import numpy as np
import pytest

from hosts.errors import UsageError
from hosts.ina_session import InaSession
from hosts.ina_wire import InaPacket, Kind, decode, encode

K = 4


def result_for(payload: bytes) -> bytes:
    sent = decode(payload)
    return encode(InaPacket(kind=Kind.RESULT, job=sent.job, worker=sent.worker, slot=sent.slot,
                            chunk=sent.chunk, ver=sent.ver, count=1, values=sent.values))


def kinds_and_chunks(payloads) -> list[tuple[Kind, int]]:
    return [(decode(p).kind, decode(p).chunk) for p in payloads]


@pytest.mark.parametrize("switch_slots, early", [(None, [(Kind.QUERY, 2), (Kind.QUERY, 3)]),
                                                 (2, [])])
def test_a_switch_result_does_not_make_host_chunks_look_lost(switch_slots, early) -> None:
    # pool 4: slots 0, 1 in the switch, 2, 3 on the host (when told); n = 1 for brevity
    s = InaSession(job=1, worker=0, n=1, k=K, pool_size=4, window=4, rto=1.0, rto_max=2.0,
                   max_retx=3, adaptive=False, switch_slots=switch_slots)
    sent = list(s.start_integers(np.arange(8 * K, dtype=np.int32), 0.0).send)
    assert [decode(p).slot for p in sent] == [0, 1, 2, 3]
    sent += s.receive(result_for(sent[0]), 0.001).send      # chunk 4 (slot 0) goes out
    sent += s.receive(result_for(sent[1]), 0.001).send      # chunk 5 (slot 1)
    # chunk 4's result comes back through the switch before the host has answered 2 and 3
    step = s.receive(result_for(sent[4]), 0.002)
    assert kinds_and_chunks(step.send) == early
    answered = {4}
    pending = [p for p in sent if decode(p).kind is Kind.CONTRIB]
    while pending:                                        # the rest, in sending order
        payload = pending.pop(0)
        chunk = decode(payload).chunk
        if chunk not in answered and chunk >= 2:
            answered.add(chunk)
            pending += [p for p in s.receive(result_for(payload), 0.004).send
                        if decode(p).kind is Kind.CONTRIB]
    assert s.done and np.array_equal(s.result, np.arange(8 * K, dtype=np.int32))


def test_switch_slots_must_lie_in_the_pool() -> None:
    with pytest.raises(UsageError, match="switch_slots must be an integer in \\[1, 4\\]"):
        InaSession(job=1, worker=0, n=1, k=K, pool_size=4, window=4, rto=1.0, rto_max=2.0,
                   max_retx=3, switch_slots=5)


def test_each_path_learns_its_own_round_trip() -> None:
    # the host aggregator's chunks take 5 ms, the switch's 1 ms: one RTO would fit neither
    s = InaSession(job=1, worker=0, n=1, k=K, pool_size=4, window=4, rto=0.1, rto_max=1.0,
                   max_retx=3, switch_slots=2)
    outstanding = list(s.start_integers(np.zeros(40 * K, dtype=np.int32), 0.0).send)
    now, sent_at = 0.0, {decode(p).chunk: 0.0 for p in outstanding}
    while not s.done:
        payload = min(outstanding, key=lambda p: sent_at[decode(p).chunk] +
                      (0.005 if decode(p).slot >= 2 else 0.001))
        outstanding.remove(payload)
        chunk, slot = decode(payload).chunk, decode(payload).slot
        now = max(now, sent_at[chunk] + (0.005 if slot >= 2 else 0.001))
        for new in s.receive(result_for(payload), now).send:
            assert decode(new).kind is Kind.CONTRIB, "a chunk looked lost"
            outstanding.append(new)
            sent_at[decode(new).chunk] = now
    assert s.rto_estimator.srtt == pytest.approx(0.001)
    assert s.host_rto_estimator.srtt == pytest.approx(0.005)
    assert s.counters.timer_retransmissions == 0


def test_agent_config_carries_switch_slots() -> None:
    from hosts.api import AllreduceConfig, ConfigError
    config = AllreduceConfig.from_dict({"job": 1, "worker": 0, "n": 2, "aggregator": "10.0.0.254",
                                        "pool_size": 32, "switch_slots": 8})
    assert config.switch_slots == 8
    with pytest.raises(ConfigError, match="config.switch_slots: must be an integer in"):
        AllreduceConfig.from_dict({"job": 1, "worker": 0, "n": 2, "pool_size": 32,
                                   "switch_slots": 33})
