"""Max passes made ahead of their streams (hosts/max_passes.py): the same maxima, each made
once, by the thread or by whoever asks first, and nothing seen outside their block."""

from __future__ import annotations

import threading

import numpy as np
import pytest

from hosts import draw_ahead, gradient_stream, max_passes
from hosts.agent import gradient
from hosts.draw_ahead import DrawAhead
from hosts.gradient_stream import GradientStream
from hosts.max_passes import MaxPasses, PassKey, passes_ahead

LENGTH, BLOCK = 200_003, 65_536


def _max(seed: int, rank: int, length: int = LENGTH) -> int:
    return int(np.max(gradient(seed, rank, length).view(np.uint32) & 0x7FFFFFFF))


@pytest.fixture(autouse=True)
def _drawing_threads_only(monkeypatch):
    monkeypatch.setattr(draw_ahead, "_draw_worker", None)


def test_a_pass_made_ahead_is_the_gradients_max_and_the_streams_reads_are_unchanged():
    whole = gradient(3, 1, LENGTH)
    with passes_ahead([PassKey(3, 1, LENGTH)]) as passes:
        passes.wait()
        assert passes.made_ahead == 1
        stream = GradientStream(3, 1, LENGTH)
        assert stream.max_bits(BLOCK) == _max(3, 1)
        for first in range(0, LENGTH, BLOCK):
            end = min(first + BLOCK, LENGTH)
            assert np.array_equal(stream.read(first, end), whole[first:end])
        # taken from the passes: the stream drew its values once and kept no first read
        assert stream.drawn == LENGTH and stream._kept is None
    assert gradient_stream.passes_in_use() is None
    again = GradientStream(3, 1, LENGTH)             # outside the block: its own pass
    assert again.max_bits(BLOCK) == _max(3, 1) and again.drawn == LENGTH


def test_the_thread_makes_every_key_once_and_streams_take_them():
    keys = [PassKey(4, rank, LENGTH) for rank in range(3)]
    with passes_ahead(keys + keys[:1]) as passes:    # (a key twice: made once)
        passes.wait()
        assert passes.made_ahead == 3
        streams = [GradientStream(4, rank, LENGTH) for rank in range(3)]
        assert [s.max_bits(BLOCK) for s in streams] == [_max(4, rank) for rank in range(3)]
        assert all(s.drawn == 0 for s in streams)


def test_a_stream_makes_a_pass_not_started_and_gives_it_to_the_others():
    passes = MaxPasses()                             # no thread: nothing made ahead
    gradient_stream.use_passes(passes)
    try:
        first, second = GradientStream(5, 2, LENGTH), GradientStream(5, 2, LENGTH)
        assert first.max_bits(BLOCK) == _max(5, 2)
        assert first.drawn == LENGTH and first._kept is not None     # made here, as always
        assert second.max_bits(BLOCK) == _max(5, 2) and second.drawn == 0
        assert passes.take(PassKey(5, 2, LENGTH)) == _max(5, 2)
        assert passes.made_ahead == 0
    finally:
        gradient_stream.use_passes(None)


def test_an_asker_waits_for_the_pass_another_thread_is_making():
    passes = MaxPasses()
    key = PassKey(6, 0, LENGTH)
    assert passes.take(key) is None                  # ours to make
    got = []
    asker = threading.Thread(target=lambda: got.append(passes.take(key)))
    asker.start()
    asker.join(0.2)
    assert asker.is_alive() and not got              # waiting
    passes.put(key, 1234)
    asker.join(5)
    assert got == [1234]


def test_a_dropped_claim_is_made_by_the_next_asker():
    passes = MaxPasses()
    key = PassKey(7, 0, LENGTH)
    assert passes.take(key) is None
    got = []
    asker = threading.Thread(target=lambda: got.append(passes.take(key)))
    asker.start()
    passes.drop(key)
    asker.join(5)
    assert got == [None]                             # the pass is now the asker's


def test_a_stream_whose_pass_fails_drops_its_claim(monkeypatch):
    passes = MaxPasses()
    gradient_stream.use_passes(passes)
    try:
        stream = GradientStream(8, 0, LENGTH)

        def broken(*_args, **_kwargs):
            raise MemoryError("no room")
        monkeypatch.setattr(stream, "_max_bits", broken)
        with pytest.raises(MemoryError):
            stream.max_bits(BLOCK)
        assert passes.take(PassKey(8, 0, LENGTH)) is None    # not left running
    finally:
        gradient_stream.use_passes(None)


def test_a_pass_ahead_on_a_drawing_thread_keeps_its_first_block_also_when_it_was_given():
    """A max pass drawn ahead keeps its first block within the budget whether it draws the
    pass itself or the passes already had it: then the drawing thread draws that block alone,
    so the loop's thread does not draw it at the first read."""
    with passes_ahead([PassKey(9, 3, LENGTH)]) as passes:
        passes.wait()
        with DrawAhead(threads=1) as ahead:
            stream = GradientStream(9, 3, LENGTH, ahead=ahead)
            stream.max_pass_ahead(BLOCK)
            stream._max_pass.result()
            assert ahead.held == BLOCK and stream._kept[0] == BLOCK
            assert np.array_equal(stream._kept[1], gradient(9, 3, LENGTH)[:BLOCK])
            assert stream.max_bits(BLOCK) == _max(9, 3)
            assert np.array_equal(stream.read(0, BLOCK), gradient(9, 3, LENGTH)[:BLOCK])
            assert stream._kept is None and stream._kept_reserved == 0
            assert np.array_equal(stream.read(BLOCK, 2 * BLOCK),
                                  gradient(9, 3, LENGTH)[BLOCK:2 * BLOCK])
            stream.close()
        assert ahead.held == 0


def test_a_given_pass_taken_by_the_reader_has_the_first_read_drawn_ahead():
    """`max_bits` on the reader's thread with the pass given: the first block is drawn on a
    drawing thread meanwhile (the reader draws none of it), the same values as without."""
    with passes_ahead([PassKey(9, 3, LENGTH)]) as passes:
        passes.wait()
        with DrawAhead(threads=1) as ahead:
            stream = GradientStream(9, 3, LENGTH, ahead=ahead)
            assert stream.max_bits(BLOCK) == _max(9, 3)
            first, count, _state, _future = stream._pending
            assert (first, count) == (0, BLOCK) and ahead.held == BLOCK
            assert np.array_equal(stream.read(0, BLOCK), gradient(9, 3, LENGTH)[:BLOCK])
            assert np.array_equal(stream.read(BLOCK, 3 * BLOCK),
                                  gradient(9, 3, LENGTH)[BLOCK:3 * BLOCK])
            stream.close()
        assert ahead.held == 0


def test_a_given_pass_whose_first_block_finds_no_budget_keeps_nothing():
    """With the draw-ahead budget full, a given pass keeps no first block; the first read
    is drawn by the reader, the same values."""
    with passes_ahead([PassKey(9, 3, LENGTH)]) as passes:
        passes.wait()
        with DrawAhead(threads=1, held=BLOCK - 1) as ahead:
            stream = GradientStream(9, 3, LENGTH, ahead=ahead)
            stream.max_pass_ahead(BLOCK)
            stream._max_pass.result()
            assert ahead.held == 0 and stream._kept is None
            assert stream.max_bits(BLOCK) == _max(9, 3)
            assert np.array_equal(stream.read(0, BLOCK), gradient(9, 3, LENGTH)[:BLOCK])
            stream.close()
        assert ahead.held == 0


def test_a_block_inside_another_shares_its_passes_and_the_outermost_stops_the_thread():
    """Runs in two threads each open a block: the inner one adds its keys to the open passes,
    and only the outermost's end lets them go and stops the thread (made ahead: not all)."""
    with passes_ahead([PassKey(10, rank, 1 << 22) for rank in range(50)]) as passes:
        with passes_ahead([PassKey(12, 0, LENGTH)]) as inner:
            assert inner is passes and gradient_stream.passes_in_use() is passes
            key = PassKey(12, 0, LENGTH)             # given to the open passes
            assert key in passes._queue or key in passes._running or key in passes._done
        assert gradient_stream.passes_in_use() is passes
    assert gradient_stream.passes_in_use() is None
    assert passes._thread is None and not passes._queue
    assert passes.made_ahead < 51                    # stopped, not run to the end


def test_max_bits_of_draws_a_long_pass_in_blocks_without_the_c_pass(monkeypatch):
    monkeypatch.setattr(gradient_stream, "_fast_max", None)
    drawn = []
    real = gradient_stream.draw
    monkeypatch.setattr(gradient_stream, "draw",
                        lambda g, count, m=1.0: drawn.append(count) or real(g, count, m))
    length = 3 * gradient_stream.SKIP_BLOCK + 5
    top = gradient_stream.max_bits_of(gradient_stream.generator_of(11, 0), length)
    assert top == _max(11, 0, length)
    assert max(drawn) == gradient_stream.SKIP_BLOCK and sum(drawn) == length
    assert max_passes.max_pass(PassKey(11, 0, length)) == top
