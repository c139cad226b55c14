"""The ring session over an in-memory byte stream: n = 1..8, any chunking, both accumulators."""

from __future__ import annotations

import numpy as np
import pytest

from hosts.errors import RingProtocolError, UsageError
from hosts.ring_session import RING_TRANSITIONS, RingSession, RingState, ring_error_bound
from hosts.ring_wire import RingKind, Segment, StreamDecoder, encode


def run_ring(sessions: list[RingSession], vectors: list, cut: int = 0,
             sinks: list | None = None) -> list[bytes]:
    """Deliver each rank's output to its right neighbour, `cut` bytes at a time (0: whole);
    with `sinks`, each rank streamed (`vectors` are then its sources). Returns the bytes each
    rank sent."""
    n = len(sessions)
    wires = [s.start(x) if sinks is None else s.start(x, sink=sinks[r])
             for r, (s, x) in enumerate(zip(sessions, vectors))]
    sent = [bytearray(w) for w in wires]
    while any(wires):
        incoming = [b""] * n
        for r, data in enumerate(wires):
            right = (r + 1) % n
            pieces = [data[i:i + cut] for i in range(0, len(data), cut)] if cut else [data]
            for piece in pieces:
                if piece:
                    incoming[right] += sessions[right].receive(piece)
        wires = incoming
        for r, data in enumerate(wires):
            sent[r] += data
    return [bytes(s) for s in sent]


@pytest.mark.parametrize("accumulate", ["float32", "float64"])
@pytest.mark.parametrize("n", range(1, 9))
def test_ring_all_reduce_matches_the_sums(n: int, accumulate: str) -> None:
    rng = np.random.default_rng(n)
    length = 5 * n + 3
    vectors = [(rng.standard_normal(length) * 100).astype(np.float32) for _ in range(n)]
    sessions = [RingSession(rank=r, n=n, accumulate=accumulate) for r in range(n)]
    run_ring(sessions, vectors, cut=7 if n % 2 else 0)
    exact = np.sum(np.array(vectors, np.float64), axis=0)
    bound = ring_error_bound(np.sum(np.abs(np.array(vectors, np.float64)), axis=0),
                             sessions[0].result, n, accumulate)
    for s in sessions:
        assert s.done and s.result.dtype == np.float32
        assert np.array_equal(s.result, sessions[0].result)   # every rank the same bits
        assert np.all(np.abs(s.result - exact) <= bound)
    if accumulate == "float64":
        assert np.array_equal(sessions[0].result, exact.astype(np.float32))
    if n > 1:
        assert sessions[0].counters.messages_sent == 2 * (n - 1)


def test_float32_sums_are_the_float32_additions_in_ring_order() -> None:
    # segment i starts at rank i; rank i+1 adds its value, then rank i+2: float32 each time
    n = 3
    vectors = [np.array([1e8, 1.0, -1e8], np.float32), np.array([1.0, 1e8, 3.0], np.float32),
               np.array([-1e8, 1.0, 1e8], np.float32)]
    sessions = [RingSession(rank=r, n=n) for r in range(n)]
    run_ring(sessions, vectors)
    f = np.float32
    expected = [f(f(vectors[(i + 2) % 3][i] + f(vectors[(i + 1) % 3][i] + vectors[i][i])))
                for i in range(3)]
    assert sessions[0].result.tolist() == expected


def test_messages_before_start_are_kept_and_calls_repeat() -> None:
    n = 3
    sessions = [RingSession(rank=r, n=n) for r in range(n)]
    for call in range(2):
        vectors = [np.full(4, r + call, np.float32) for r in range(n)]
        # rank 0 starts first; rank 1 receives its data before starting itself
        early = sessions[0].start(vectors[0])
        assert sessions[1].receive(early) == b""
        out1 = sessions[1].start(vectors[1])
        out2 = sessions[2].start(vectors[2])
        wires = [b"", out1, out2]
        while any(wires):
            nxt = [b""] * n
            for r, data in enumerate(wires):
                if data:
                    nxt[(r + 1) % n] += sessions[(r + 1) % n].receive(data)
            wires = nxt
        for s in sessions:
            assert s.result.tolist() == [3 + 3 * call] * 4
    assert sessions[0].calls == 2


def test_empty_vector_and_single_rank_finish_at_once() -> None:
    s = RingSession(rank=0, n=1)
    assert s.start(np.arange(3, dtype=np.float32)) == b"" and s.done
    assert s.result.tolist() == [0, 1, 2]
    t = RingSession(rank=1, n=4)
    assert t.start(np.zeros(0, np.float32)) == b"" and t.result.size == 0


def test_out_of_order_or_foreign_messages_fail_the_session() -> None:
    s = RingSession(rank=1, n=3)
    s.start(np.ones(6, np.float32))
    wrong = Segment(kind=RingKind.REDUCE_SCATTER, call=0, step=1, index=2,
                    values=np.ones(2, np.float32))
    with pytest.raises(RingProtocolError, match="expected REDUCE_SCATTER call 0 step 0 "
                                                "segment 0 offset 0, got REDUCE_SCATTER call 0 "
                                                "step 1"):
        s.receive(encode(wrong))
    assert s.state is RingState.FAILED
    t = RingSession(rank=1, n=3)
    t.start(np.ones(6, np.float32))
    short = Segment(kind=RingKind.REDUCE_SCATTER, call=0, step=0, index=0,
                    values=np.ones(3, np.float32))
    with pytest.raises(RingProtocolError, match="3 values, expected 2"):
        t.receive(encode(short))
    u = RingSession(rank=1, n=3, accumulate="float64")
    u.start(np.ones(6, np.float32))
    with pytest.raises(RingProtocolError, match="float32, this ring accumulates in float64"):
        u.receive(encode(Segment(kind=RingKind.REDUCE_SCATTER, call=0, step=0, index=0,
                                 values=np.ones(2, np.float32))))
    v = RingSession(rank=0, n=2)
    with pytest.raises(RingProtocolError, match="bad magic"):
        v.receive(b"GET / HTTP/1.1\r\nHost: x\r\n\r\n")
    assert v.state is RingState.FAILED


def test_usage_errors() -> None:
    assert {state for state, _ in RING_TRANSITIONS} == set(RingState) - {RingState.FAILED}
    for bad in (dict(rank=3, n=3), dict(rank=0, n=0), dict(rank=0, n=2, accumulate="int8")):
        with pytest.raises(UsageError):
            RingSession(**bad)
    s = RingSession(rank=0, n=2)
    with pytest.raises(UsageError, match="float32"):
        s.start(np.ones(3))
    s.start(np.ones(3, np.float32))
    with pytest.raises(UsageError, match="cannot start in state reduce_scatter"):
        s.start(np.ones(3, np.float32))


@pytest.mark.parametrize("slice_values", [1, 3, 4, 1000])
@pytest.mark.parametrize("n", [2, 3, 5])
def test_sliced_segments_give_the_same_bits_as_whole_ones(n: int, slice_values: int) -> None:
    """Slicing changes when a value is forwarded, never the sum: the same float32 bits."""
    rng = np.random.default_rng(n * 100 + slice_values)
    length = 7 * n + 2
    vectors = [(rng.standard_normal(length) * 1e4).astype(np.float32) for _ in range(n)]
    whole = [RingSession(rank=r, n=n, slice_values=length) for r in range(n)]
    sliced = [RingSession(rank=r, n=n, slice_values=slice_values) for r in range(n)]
    run_ring(whole, vectors)
    run_ring(sliced, vectors, cut=5)
    for s in sliced:
        assert s.done and np.array_equal(s.result, whole[0].result)
    shortest = length // n
    assert sliced[0].counters.messages_sent >= 2 * (n - 1) * -(-shortest // slice_values)


def test_a_slice_is_forwarded_before_its_segment_has_all_arrived() -> None:
    """The pipelining itself: the first slice from the left goes on to the right at once."""
    n, length = 3, 12
    s = RingSession(rank=1, n=n, slice_values=2)
    s.start(np.ones(length, np.float32))             # its own segment 1, as two slices
    first = Segment(kind=RingKind.REDUCE_SCATTER, call=0, step=0, index=0, offset=0,
                    values=np.full(2, 5, np.float32))
    out = s.receive(encode(first))
    (forwarded,) = StreamDecoder().feed(out)
    assert (forwarded.step, forwarded.index, forwarded.offset) == (1, 0, 0)
    assert forwarded.values.tolist() == [6, 6]
    skipped = Segment(kind=RingKind.REDUCE_SCATTER, call=0, step=0, index=0, offset=0,
                      values=np.full(2, 5, np.float32))
    with pytest.raises(RingProtocolError, match="offset 2, got .* offset 0"):
        s.receive(encode(skipped))                    # the same slice again: not the next one


def test_a_bad_slice_size_is_refused() -> None:
    with pytest.raises(UsageError, match="slice_values"):
        RingSession(rank=0, n=2, slice_values=0)

