"""A seeded gradient read a range at a time, never held whole.

`GradientStream(seed, rank, length)` has the values of `hosts.agent.gradient(seed, rank, length)`
(a Generator's normals drawn in pieces are the stream drawn at once, as `reference_blocks`
relies on), drawn when `read` asks for them. Why: a simulated run of 64 workers x 100 MiB would
hold 6.4 GiB of inputs alone; a session that reads its input through a stream (FloatCodec's
streamed mode, docs/sim.md) holds only the block it is quantizing.

Reads are cheapest in order (each pass over the vector draws it once); a read behind the last
one starts the generator again from the seed and draws up to it. Drawing is nearly all of the
cost (~14 ns per value, every other step on a value well under 1 ns), so the stream keeps its
first read and the generator's state after it: a second pass (FloatCodec quantizes after its
max pass) starts with that range again and gets it without drawing it twice.
"""

from __future__ import annotations

from concurrent.futures import Future
from typing import Callable

import numpy as np

from .draw_ahead import DrawAhead

SKIP_BLOCK = 1 << 16      # values drawn at a time when skipping ahead to a read's start


def generator_of(seed: int, rank: int, job: int | None = None) -> np.random.Generator:
    """Rank `rank`'s generator: seeded by (seed, rank), or (seed, job, rank) with a job."""
    return np.random.default_rng([seed, rank] if job is None else [seed, job, rank])


# fast(generator, count, magnitude): the same float32 values as `draw` below, or None
FastDraw = Callable[[np.random.Generator, int, float], "np.ndarray | None"]
# fast_max(generator, count, magnitude): `max_bits_of`'s pattern, drawing as `draw`, or None
FastMax = Callable[[np.random.Generator, int, float], "int | None"]
_fast_draw: FastDraw | None = None
_fast_max: FastMax | None = None


def use_fast_draw(fast: FastDraw | None, fast_max: FastMax | None = None) -> None:
    """`draw` asks `fast` first from now on, and `max_bits_of` `fast_max` (None: NumPy
    alone). Each must give NumPy's very values (or their maximum) and leave the generator
    where NumPy would, or None for NumPy to draw them: the simulator installs ones it has
    checked so (inaemu/sim/native/fast_normals.py)."""
    global _fast_draw, _fast_max
    _fast_draw, _fast_max = fast, fast_max


# passes made ahead of the streams (hosts/max_passes.py: take(key) -> int | None, put(key,
# top), drop(key)), keyed by (seed, rank, length, magnitude, job), or None
_passes = None


def use_passes(passes) -> None:
    """`GradientStream.max_bits` asks `passes` first from now on (None: every stream makes
    its own pass)."""
    global _passes
    _passes = passes


def passes_in_use():
    """What `use_passes` was last given."""
    return _passes


def max_bits_of(generator: np.random.Generator, count: int, magnitude: float = 1.0) -> int:
    """The largest |x| of the generator's next `count` gradient values (`draw`'s) as its
    float32 bit pattern (0 for none; 0x7F800000 and up: inf or NaN): a max pass's block,
    without keeping the values where the fast drawer takes them."""
    fast = _fast_max
    if fast is not None:
        top = fast(generator, count, magnitude)
        if top is not None:
            return top
    top = 0
    for first in range(0, count, SKIP_BLOCK):        # (a long pass never held whole)
        values = draw(generator, min(SKIP_BLOCK, count - first), magnitude)
        top = max(top, int(np.max(values.view(np.uint32) & 0x7FFFFFFF)))
    return top


def draw(generator: np.random.Generator, count: int, magnitude: float = 1.0) -> np.ndarray:
    """The generator's next `count` gradient values (`numpy_draw`'s), drawn by the drawer
    given to `use_fast_draw` when there is one and it takes them."""
    fast = _fast_draw
    if fast is not None:
        values = fast(generator, count, magnitude)
        if values is not None:
            return values
    return numpy_draw(generator, count, magnitude)


def numpy_draw(generator: np.random.Generator, count: int, magnitude: float = 1.0) -> np.ndarray:
    """The generator's next `count` gradient values: standard normals times `magnitude`, as
    float32 (the one definition: `gradient`, the stream and the reference sums draw so)."""
    values = generator.standard_normal(count)
    if magnitude != 1.0:               # (x * 1.0 is x: the product's pass is skipped)
        values *= magnitude
    return values.astype(np.float32)


class GradientStream:
    """The float32 values of `gradient(seed, rank, length, magnitude, job)`, by ranges."""

    def __init__(self, seed: int, rank: int, length: int, magnitude: float = 1.0,
                 job: int | None = None, ahead: DrawAhead | None = None):
        """`ahead`: threads that draw the next range after each read in order, and the max
        pass when asked to (`max_pass_ahead`), while the reader's thread runs on."""
        if length < 0:
            raise ValueError(f"length must be >= 0, got {length}")
        self.seed, self.rank, self.job = seed, rank, job
        self.size = length
        self.magnitude = magnitude
        self.drawn = 0               # values drawn so far, over every pass (tests, benchmarks)
        self._kept: tuple[int, np.ndarray, dict] | None = None   # the first read, for a re-read
        self._ahead = ahead
        # a range drawn ahead: (its first value, count, the generator's state before it, the
        # draw's Future); the generator is the drawing thread's until it is taken
        self._pending: tuple[int, int, dict, Future] | None = None
        self._max_pass: Future | None = None    # the max pass, drawn ahead
        self._kept_reserved = 0      # values of the kept first read counted in the budget
        self._max_given = False      # the max pass came from `use_passes`: no second pass
        self._restart()

    def _restart(self) -> None:
        self._generator = generator_of(self.seed, self.rank, self.job)
        self._position = 0          # the index of the next value the generator draws

    def _draw(self, count: int) -> np.ndarray:
        self._position += count
        self.drawn += count
        return draw(self._generator, count, self.magnitude)

    def read(self, first: int, end: int) -> np.ndarray:
        """Values [first, end) as a float32 array (read only when it is the kept first read;
        otherwise a new one)."""
        if not 0 <= first <= end <= self.size:
            raise ValueError(f"range [{first}, {end}) is outside 0..{self.size}")
        self._settle_max_pass()
        values = self._drawn_ahead(first, end)
        if values is None:
            values = self._read(first, end)
        if self._ahead is not None and first < end < self.size:
            self._draw_ahead(end, min(end - first, self.size - end))
        return values

    def _read(self, first: int, end: int, keep: bool = True) -> np.ndarray:
        """Values [first, end) drawn here; the first read of all kept if `keep`."""
        fresh = self._position == 0 and self.drawn == 0 and not self._max_given
        if self._kept is not None and first == 0 and end == self._kept[0] \
                and self._position >= end:
            # the first read again, with the generator past it: the values kept, and the
            # generator where it was after them (the next read in order draws on from there)
            _end, values, state = self._kept
            self._kept = None
            if self._kept_reserved:
                self._ahead.release(self._kept_reserved)
                self._kept_reserved = 0
            self._generator.bit_generator.state = state
            self._position = end
            return values
        if first < self._position:
            self._restart()
        while self._position < first:
            self._draw(min(SKIP_BLOCK, first - self._position))
        values = self._draw(end - first)
        if keep and fresh and first == 0:     # kept until read again (once)
            values.flags.writeable = False
            self._kept = (end, values, self._generator.bit_generator.state)
        return values

    def _draw_ahead(self, first: int, count: int) -> None:
        """Values [first, first + count) drawn on a drawing thread, when the budget has room
        (the generator is at `first`: the read before ended there)."""
        if not self._ahead.reserve(count):
            return
        state = self._generator.bit_generator.state
        future = self._ahead.submit_draw(draw, self._generator, count, self.magnitude)
        if future is None:                       # closed: read as without it
            self._ahead.release(count)
            return
        self._pending = (first, count, state, future)
        self._position += count
        self.drawn += count

    def _drawn_ahead(self, first: int, end: int) -> np.ndarray | None:
        """The values drawn ahead when they are [first, end); otherwise none, and the
        generator back where it was before that draw."""
        pending, self._pending = self._pending, None
        if pending is None:
            return None
        start, count, state, future = pending
        try:
            values = None if future.cancelled() else future.result()   # (cancelled: closed)
        finally:
            self._ahead.release(count)
        if values is not None and (start, start + count) == (first, end):
            return values
        self._generator.bit_generator.state = state
        self._position = start
        return None

    def max_bits(self, block: int = SKIP_BLOCK) -> int:
        """The largest |x| of the whole vector as its float32 bit pattern (0x7F800000 and up:
        inf or NaN), from one pass of reads of `block` values (the first kept for the next
        read of it): the codec's max pass. Drawn ahead when `max_pass_ahead` asked for it."""
        ahead, self._max_pass = self._max_pass, None
        if ahead is not None and not ahead.cancel():
            return ahead.result()
        self._drawn_ahead(-1, -1)        # a range drawn ahead: waited for, the generator back
        top, made = self._shared_max_bits(block)
        if not made and self._ahead is not None and self._position == 0 and self.size:
            # the pass came made: the first read, which follows soon, drawn ahead meanwhile
            self._draw_ahead(0, min(block, self.size))
        return top

    def _shared_max_bits(self, block: int, keep: bool = True) -> tuple[int, bool]:
        """(`_max_bits`, whether it was made here): the pass given by `use_passes` when it
        has it (or is making it), else made here and given to it."""
        passes = _passes
        if passes is None:
            return self._max_bits(block, keep), True
        key = (self.seed, self.rank, self.size, self.magnitude, self.job)
        top = passes.take(key)
        if top is not None:
            self._max_given = True
            return top, False
        try:
            top = self._max_bits(block, keep)
        except BaseException:
            passes.drop(key)
            raise
        passes.put(key, top)
        return top, True

    def _settle_max_pass(self) -> None:
        """A max pass drawn ahead and not asked for is waited for (or cancelled) before the
        stream is read: the generator is the drawing thread's until then."""
        ahead, self._max_pass = self._max_pass, None
        if ahead is not None and not ahead.cancel():
            ahead.result()

    def close(self) -> None:
        """A stream no reader will take: its max pass drawn ahead waited for (or cancelled),
        its range drawn ahead and its kept first read given back to the draw-ahead budget."""
        self._settle_max_pass()
        self._drawn_ahead(-1, -1)
        if self._kept_reserved:
            self._ahead.release(self._kept_reserved)
            self._kept_reserved = 0
        self._kept = None

    def _max_bits(self, block: int, keep: bool = True) -> int:
        top = 0
        for first in range(0, self.size, block):
            end = min(first + block, self.size)
            if first == 0 or first != self._position:       # (the first read is kept)
                values = self._read(first, end, keep)
                top = max(top, int(np.max(values.view(np.uint32) & 0x7FFFFFFF)))
            else:                                           # in order: not kept, not held
                self._position = end
                self.drawn += end - first
                top = max(top, max_bits_of(self._generator, end - first, self.magnitude))
        return top

    def _max_bits_ahead(self, block: int) -> int:
        """The max pass on a drawing thread. Its first block is kept only within the draw-
        ahead budget: what a thread allocates comes from its own allocator arena (glibc's), and
        the loop's thread freeing it later hands it back to that arena, not to its own, where
        only the drawing thread reuses it (fat-tree k = 16, 1,024 workers x 1 MiB: peak RSS
        1.45-1.55 GB keeping every one, 1.36 GB within the budget, 1.29 GB drawing nothing
        ahead)."""
        first_block = min(block, self.size)
        keep = first_block > 0 and self._ahead.reserve(first_block)
        top, made = self._shared_max_bits(block, keep)
        if keep and not made:
            # the pass came made (`use_passes`): the first block is drawn here all the same,
            # kept for the first read, which the loop's thread would otherwise draw itself
            values = self._draw(first_block)
            values.flags.writeable = False
            self._kept = (first_block, values, self._generator.bit_generator.state)
        if keep:
            self._kept_reserved = first_block
        return top

    def max_pass_ahead(self, block: int = SKIP_BLOCK) -> None:
        """Start the max pass on a drawing thread (the stream is that thread's until
        `max_bits` takes the result, or cancels it if it has not started)."""
        if self._ahead is not None and self._max_pass is None and self._pending is None:
            self._max_pass = self._ahead.submit(self._max_bits_ahead, block)
