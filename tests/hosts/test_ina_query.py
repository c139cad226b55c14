"""QUERY and NACK on the worker side (docs/protocol.md §3.1, §4.1): early detection asks the
switch with a header-only QUERY; only a NACK makes the worker send its values again."""

from __future__ import annotations

import numpy as np
import pytest

from hosts import quantize as qz
from hosts.ina_session import InaSession
from hosts.ina_wire import HEADER_BYTES, InaPacket, Kind, WireError, decode, encode, query_for

K = 4


def session(**overrides) -> InaSession:
    options = dict(job=3, worker=1, n=2, k=K, pool_size=8, window=8, rto=1.0, rto_max=3.0,
                   max_retx=2, adaptive=False)
    options.update(overrides)
    return InaSession(**options)


def reply(payload: bytes, kind: Kind, values=None) -> bytes:
    sent = decode(payload)
    if kind is Kind.NACK:
        values = ()
    elif values is None:
        values = sent.values if len(sent.values) else np.zeros(K, np.int32)
    return encode(InaPacket(kind=kind, job=sent.job, worker=sent.worker, slot=sent.slot,
                            chunk=sent.chunk, ver=sent.ver, count=0 if kind is Kind.NACK else 2,
                            values=values))


def data_phase(s: InaSession, chunks: int) -> list[bytes]:
    step = s.start(np.ones(chunks * K, np.float32), 0.0)
    bits = qz.float32_bits(1.0)
    return list(s.receive(reply(step.send[0], Kind.MAX_RESULT, (bits,) * K), 0.01).send)


def lose_chunk_zero(s: InaSession) -> list[bytes]:
    """Chunks 0..2 in flight; chunk 1's result arrives first: chunk 0 is overdue."""
    sent = data_phase(s, 3)
    assert [decode(p).chunk for p in sent] == [0, 1, 2]
    return list(s.receive(reply(sent[1], Kind.RESULT), 0.03).send), sent


def test_a_late_chunk_is_queried_not_resent() -> None:
    s = session()
    out, sent = lose_chunk_zero(s)
    assert len(out) == 1
    query = decode(out[0])
    assert (query.kind, query.chunk, query.retx, len(out[0])) == (Kind.QUERY, 0, True,
                                                                    HEADER_BYTES)
    assert out[0] == query_for(sent[0])
    assert s.counters.fast_retransmissions == 1 and s.counters.nack_retransmissions == 0


def test_a_nack_resends_the_values_once_per_query() -> None:
    s = session()
    out, sent = lose_chunk_zero(s)
    resent = s.receive(reply(out[0], Kind.NACK), 0.04).send
    assert len(resent) == 1
    assert decode(resent[0]).retx and decode(resent[0]).kind is Kind.CONTRIB
    assert resent[0][HEADER_BYTES:] == sent[0][HEADER_BYTES:]
    assert s.counters.nack_retransmissions == 1
    assert s.receive(reply(out[0], Kind.NACK), 0.05).send == ()    # a second NACK: ignored
    assert s.counters.duplicates_ignored == 1
    s.receive(reply(resent[0], Kind.RESULT), 0.06)
    s.receive(reply(sent[2], Kind.RESULT), 0.07)
    assert s.done


def test_a_query_answered_by_a_result_completes_the_chunk() -> None:
    s = session()
    out, sent = lose_chunk_zero(s)
    s.receive(reply(out[0], Kind.RESULT, decode(sent[0]).values), 0.04)
    s.receive(reply(sent[2], Kind.RESULT), 0.05)
    assert s.done and s.counters.nack_retransmissions == 0
    assert s.counters.bytes_sent == 16 + 4 * K + 3 * (16 + 4 * K) + HEADER_BYTES


def test_nacks_for_chunks_not_in_flight_or_not_queried_are_ignored() -> None:
    s = session()
    sent = data_phase(s, 3)
    assert s.receive(reply(sent[0], Kind.NACK), 0.02).send == ()    # never queried
    nack = encode(InaPacket(kind=Kind.NACK, job=3, worker=1, slot=7, chunk=7, values=()))
    assert s.receive(nack, 0.02).send == ()                          # not in flight
    other = encode(InaPacket(kind=Kind.NACK, job=3, worker=0, slot=0, chunk=0, values=()))
    assert s.receive(other, 0.02).send == ()                         # another worker's
    assert s.counters.duplicates_ignored == 2 and s.counters.foreign_ignored == 1
    assert s.counters.retransmissions == 0


def test_without_queries_early_detection_resends_the_values() -> None:
    s = session(query=False)
    out, sent = lose_chunk_zero(s)
    assert len(out) == 1 and decode(out[0]).kind is Kind.CONTRIB and decode(out[0]).retx
    assert out[0][HEADER_BYTES:] == sent[0][HEADER_BYTES:]


def test_timer_retransmissions_carry_the_values() -> None:
    s = session()
    sent = data_phase(s, 1)
    out = s.timeout(2.0).send
    assert len(out) == 1 and decode(out[0]).kind is Kind.CONTRIB
    assert out[0][HEADER_BYTES:] == sent[0][HEADER_BYTES:]


def test_header_only_kinds_on_the_wire() -> None:
    nack = InaPacket(kind=Kind.NACK, job=1, worker=2, slot=3, chunk=4, ver=1, values=())
    data = encode(nack)
    assert len(data) == HEADER_BYTES and decode(data, K) == nack
    with pytest.raises(ValueError, match="NACK carries no values"):
        InaPacket(kind=Kind.NACK, job=1, worker=2, slot=3, chunk=4, values=(1, 2, 3, 4))
    with pytest.raises(WireError, match="QUERY is the header alone"):
        decode(bytes([Kind.QUERY]) + data[1:] + bytes(4 * K))
    with pytest.raises(WireError, match="expected"):
        decode(bytes([Kind.RESULT]) + data[1:], K)                # a RESULT needs its values


def test_queried_chunks_do_not_count_against_the_window() -> None:
    """A chunk waiting for its QUERY's answer holds no values in any queue: up to window/4
    such chunks do not count, so one loss does not hold the link idle for two round trips."""
    s = session(window=4)
    sent = data_phase(s, 9)
    assert [decode(p).chunk for p in sent] == [0, 1, 2, 3]
    out = s.receive(reply(sent[1], Kind.RESULT), 0.03).send
    assert [(decode(p).kind, decode(p).chunk) for p in out] == [
        (Kind.QUERY, 0), (Kind.CONTRIB, 4), (Kind.CONTRIB, 5)]    # window 4 + 1 queried
    more = s.receive(reply(sent[2], Kind.RESULT), 0.031).send     # 0 is queried already
    assert [decode(p).chunk for p in more] == [6]                 # the allowance stays 1
    resent = s.receive(reply(out[0], Kind.NACK), 0.04).send       # the values go again:
    assert [decode(p).chunk for p in resent] == [0]               # it counts in full again
    assert s.receive(reply(sent[3], Kind.RESULT), 0.05).send == ()  # 0, 4, 5, 6 fill 4
