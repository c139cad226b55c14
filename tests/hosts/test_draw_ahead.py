"""A gradient stream drawn ahead on other threads (`GradientStream(ahead=DrawAhead())`) must
read exactly the values of `gradient(seed, rank, length)` whatever the order of its reads, hold
no more ahead than its budget, and leave the interpreter as it found it. These are the drawing
threads' tests: the simulator's draw worker, which the simulator installs
(`use_draw_worker`), is left out here and tested in tests/sim/test_draw_worker.py."""

from __future__ import annotations

import sys

import numpy as np
import pytest

from hosts import draw_ahead
from hosts.agent import gradient
from hosts.draw_ahead import DrawAhead
from hosts.gradient_stream import GradientStream

LENGTH, BLOCK = 300_007, 65_536


@pytest.fixture(autouse=True)
def _drawing_threads_only(monkeypatch):
    monkeypatch.setattr(draw_ahead, "_draw_worker", None)


def _ranges(length: int, block: int) -> list[tuple[int, int]]:
    return [(first, min(first + block, length)) for first in range(0, length, block)]


def test_reads_in_order_are_the_gradient_and_are_drawn_ahead():
    whole = gradient(5, 2, LENGTH)
    with DrawAhead(threads=1) as ahead:
        stream = GradientStream(5, 2, LENGTH, ahead=ahead)
        for first, end in _ranges(LENGTH, BLOCK):
            assert np.array_equal(stream.read(first, end), whole[first:end])
            if end < LENGTH:
                assert stream._pending is not None and ahead.held > 0   # the next one
        assert ahead.held == 0 and stream._pending is None
    assert stream.drawn == LENGTH                   # each value drawn once


@pytest.mark.parametrize("order", ["backwards", "other sizes", "skips"])
def test_reads_that_are_not_the_range_drawn_ahead_are_still_the_gradient(order):
    """A read other than the one drawn ahead puts the generator back where it was before
    that draw: the values never depend on what was drawn ahead."""
    whole = gradient(6, 1, LENGTH)
    reads = {"backwards": [(0, 1000), (1000, 5000), (500, 900), (900, 4000), (4000, 4100)],
             "other sizes": [(0, 7), (7, 70_000), (70_000, 70_001), (70_001, LENGTH)],
             "skips": [(0, 10), (20, 30), (100_000, 100_500), (100_500, 200_000),
                       (250_000, LENGTH), (0, 3)]}[order]
    with DrawAhead(threads=1) as ahead:
        stream = GradientStream(6, 1, LENGTH, ahead=ahead)
        for first, end in reads:
            assert np.array_equal(stream.read(first, end), whole[first:end]), (first, end)
    assert ahead.held == 0          # (a range drawn ahead and never read: given back at close)


def test_nothing_is_drawn_ahead_beyond_the_budget():
    whole = gradient(7, 0, LENGTH)
    with DrawAhead(threads=1, held=1000) as ahead:
        stream = GradientStream(7, 0, LENGTH, ahead=ahead)
        for first, end in _ranges(LENGTH, BLOCK):
            assert np.array_equal(stream.read(first, end), whole[first:end])
            assert stream._pending is None and ahead.held == 0


def test_a_closed_draw_ahead_reads_on_the_readers_thread():
    whole = gradient(8, 3, LENGTH)
    stream = GradientStream(8, 3, LENGTH, ahead=DrawAhead(threads=1))    # never opened
    stream.max_pass_ahead(BLOCK)
    assert stream._max_pass is None
    assert stream.max_bits(BLOCK) == int(np.max(whole.view(np.uint32) & 0x7FFFFFFF))
    for first, end in _ranges(LENGTH, BLOCK):
        assert np.array_equal(stream.read(first, end), whole[first:end])


@pytest.mark.parametrize("started", [True, False])
def test_the_max_pass_drawn_ahead_is_the_one_drawn_here(started):
    """The max pass on a drawing thread (or, cancelled before it started, here): the same
    max, and the quantize pass after it gets its first block from it and draws the rest once."""
    whole = gradient(9, 4, LENGTH)
    with DrawAhead(threads=1) as ahead:
        streams = [GradientStream(9, 4, LENGTH, ahead=ahead) for _ in range(3)]
        for stream in reversed(streams):
            stream.max_pass_ahead(BLOCK)
        if started:
            streams[0]._max_pass.result()             # (done before it is asked for)
        for stream in streams:
            assert stream.max_bits(BLOCK) == int(np.max(whole.view(np.uint32) & 0x7FFFFFFF))
            for first, end in _ranges(LENGTH, BLOCK):
                assert np.array_equal(stream.read(first, end), whole[first:end])
            assert stream.drawn == 2 * LENGTH - BLOCK
    assert ahead.held == 0


def test_the_switch_interval_is_shortened_while_open_and_restored():
    before = sys.getswitchinterval()
    with DrawAhead(threads=1, switch_s=0.0003):
        assert sys.getswitchinterval() == pytest.approx(0.0003)
    assert sys.getswitchinterval() == before


def test_bad_thread_counts_are_refused():
    with pytest.raises(ValueError, match="threads must be >= 0"):
        DrawAhead(threads=-1)


def test_on_one_core_nothing_is_drawn_ahead(monkeypatch):
    """A drawing thread on the reader's only core would just take turns with it."""
    monkeypatch.setattr("hosts.draw_ahead.usable_cores", lambda: 1)
    before = sys.getswitchinterval()
    whole = gradient(5, 5, LENGTH)
    with DrawAhead() as ahead:
        assert ahead.threads == 0 and not ahead.open
        assert sys.getswitchinterval() == before
        stream = GradientStream(5, 5, LENGTH, ahead=ahead)
        stream.max_pass_ahead(BLOCK)
        assert stream._max_pass is None
        for first, end in _ranges(LENGTH, BLOCK):
            assert np.array_equal(stream.read(first, end), whole[first:end])
            assert stream._pending is None
    monkeypatch.setattr("hosts.draw_ahead.usable_cores", lambda: 4)
    assert DrawAhead().threads == 3


def test_a_range_drawn_ahead_and_read_after_closing_is_right_and_counts_nothing():
    whole = gradient(3, 3, LENGTH)
    ahead = DrawAhead(threads=1)
    with ahead:
        stream = GradientStream(3, 3, LENGTH, ahead=ahead)
        stream.read(0, BLOCK)
        assert stream._pending is not None
    assert ahead.held == 0
    assert np.array_equal(stream.read(BLOCK, 2 * BLOCK), whole[BLOCK:2 * BLOCK])
    assert np.array_equal(stream.read(2 * BLOCK, LENGTH), whole[2 * BLOCK:])
    assert ahead.held == 0 and stream._pending is None


@pytest.mark.parametrize("room", [True, False])
def test_a_max_pass_drawn_ahead_keeps_its_first_block_only_within_the_budget(room):
    """Memory a drawing thread allocates stays with its allocator arena: the first block a max
    pass ahead keeps counts in the budget until it is read again, and without room it is not
    kept (drawn again by the quantize pass: the same values)."""
    whole = gradient(4, 2, LENGTH)
    with DrawAhead(threads=1, held=BLOCK if room else BLOCK - 1) as ahead:
        stream = GradientStream(4, 2, LENGTH, ahead=ahead)
        stream.max_pass_ahead(BLOCK)
        stream._max_pass.result()
        assert ahead.held == (BLOCK if room else 0)
        assert stream.max_bits(BLOCK) == int(np.max(whole.view(np.uint32) & 0x7FFFFFFF))
        assert np.array_equal(stream.read(0, BLOCK), whole[:BLOCK])
        # the kept block given back, and with room the next one drawn ahead in its place
        assert stream._kept_reserved == 0
        assert ahead.held == (BLOCK if room else 0) and (stream._pending is not None) == room
        for first, end in _ranges(LENGTH, BLOCK)[1:]:
            assert np.array_equal(stream.read(first, end), whole[first:end])
        assert ahead.held == 0
    assert stream.drawn == 2 * LENGTH - (BLOCK if room else 0)


def test_a_draw_ahead_cancelled_by_closing_is_drawn_by_the_reader():
    """Closing cancels draws not begun: the stream reads those values itself."""
    import time
    whole = gradient(2, 5, LENGTH)
    ahead = DrawAhead(threads=1)
    with ahead:
        stream = GradientStream(2, 5, LENGTH, ahead=ahead)
        ahead.submit(time.sleep, 0.2)              # the one drawing thread busy
        stream.read(0, BLOCK)
        pending = stream._pending[3]
    assert pending.cancelled()
    assert np.array_equal(stream.read(BLOCK, 2 * BLOCK), whole[BLOCK:2 * BLOCK])
    assert np.array_equal(stream.read(2 * BLOCK, LENGTH), whole[2 * BLOCK:])


def test_a_read_or_max_pass_waits_for_what_the_drawing_thread_holds():
    """The stream is the drawing thread's while its max pass or a range drawn ahead is on
    it: a read before `max_bits`, or `max_bits` with a range drawn ahead, waits for it and
    still gets the gradient."""
    whole = gradient(1, 6, LENGTH)
    top = int(np.max(whole.view(np.uint32) & 0x7FFFFFFF))
    with DrawAhead(threads=1) as ahead:
        stream = GradientStream(1, 6, LENGTH, ahead=ahead)
        stream.max_pass_ahead(BLOCK)
        assert np.array_equal(stream.read(5, 9), whole[5:9])       # before max_bits
        assert stream._max_pass is None
        assert stream._pending is not None                          # [9, 13) drawn ahead
        assert stream.max_bits(BLOCK) == top
        assert np.array_equal(stream.read(0, BLOCK), whole[:BLOCK])
    assert ahead.held == 0
