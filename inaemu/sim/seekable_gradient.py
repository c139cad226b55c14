"""A seeded gradient read at any range, for about the cost of that range: the ring's input.

`SeekableGradient(seed, rank, length, cuts, marks)` has the values of `hosts.agent.gradient(seed,
rank, length)` (drawn by `hosts.gradient_stream.draw` from `generator_of(seed, rank)`, as
`GradientStream` draws them), read by ranges. Why not `GradientStream`: its reads are cheap in
order only (a read behind the last one draws again from the seed), and a ring rank reads its
segments backwards (segment r, then r - 1, r - 2, ...: hosts/ring_session.py), as the streamed
check reads every rank's ranges in the order the all-gather delivers them. Drawing from the
seed each time would cost n/2 passes over the vector per rank.

So the generator's state is recorded as it passes each of `cuts` (the ring's slice starts:
every read starts at one of them), into `marks`, a list shared by every reader of the same
(seed, rank): the rank's session and the check's draws of that rank. A read restores the
latest mark at or before its start and draws on from there. A generator's normals drawn in
pieces are the ones drawn at once (`GradientStream` relies on it too), so the values do not
depend on how reads cut them. Marks are recorded in order (every reader passes the positions
from 0 up), so mark i is the state at `cuts[i]`. A mark is 32 bytes (PCG64's 128-bit state,
its buffered 32-bit draw and flag, in an `array`; its increment is the generator's own), not
the 520 of the state's dict: a ring of n ranks has a cut at every segment start, so n marks per
rank and 32 n^2 bytes in all (1,024 ranks: 32 MiB; 16,000: 7.6 GiB, where dicts took 124).
"""

from __future__ import annotations

import threading
from array import array
from bisect import bisect_right

import numpy as np

from hosts.draw_ahead import DrawAhead
from hosts.gradient_stream import SKIP_BLOCK, draw, generator_of
from inaemu.sim.native.fast_normals import draw_from, job_from, marks_after

AHEAD_VALUES = 1 << 16       # values drawn ahead of a rank's next read (four 16,384-value slices)
THREAD_AHEAD_MIN = 1 << 14   # the smallest segments (values) whose next reads a Python thread
                             # draws ahead: smaller draws cost the loop more in hand-offs than
                             # they take off it (64 x 1 MiB: 4,096); fastnormals.c's jobs, any
_NOWHERE = -1                # the generator's position when a read drew without it: the next
                             # read restores a mark first


class SeekableGradient:
    """The float32 values of `gradient(seed, rank, length, magnitude, job)`, at any range."""

    def __init__(self, seed: int, rank: int, length: int, cuts: list[int],
                 marks: array | None = None, magnitude: float = 1.0, job: int | None = None,
                 ahead: DrawAhead | None = None, segments: list[int] | None = None):
        """`ahead`: threads that draw a range asked for (`draw_ahead`) before it is read; with
        `segments` (the ring's segment bounds, each start a cut), the next read's values after
        each read: by fastnormals.c's own thread from the read's mark once every cut has one
        (`_submit_job`), else on a Python thread where segments hold THREAD_AHEAD_MIN values
        or more."""
        if length < 0:
            raise ValueError(f"length must be >= 0, got {length}")
        if not cuts or cuts[0] != 0 or any(b <= a for a, b in zip(cuts, cuts[1:])):
            raise ValueError("cuts must rise strictly from 0")
        self.size = length
        self.magnitude = magnitude
        self.cuts = cuts
        self.marks = array("Q") if marks is None else marks    # 4 words a mark
        self.drawn = 0               # values drawn, over every read and skip (tests, benchmarks)
        self.drawn_ahead = 0         # of them, drawn on a drawing thread (skips there not counted)
        self._generator = generator_of(seed, rank, job)
        state = self._generator.bit_generator.state
        if state["bit_generator"] != "PCG64":
            raise ValueError(f"marks are PCG64 states, the generator is "
                             f"{state['bit_generator']}")
        self._increment = state["state"]["inc"]
        self._position = 0           # the index of the next value the generator draws
        if not self.marks:
            self._mark()
        self._seed, self._rank, self._job = seed, rank, job
        self._ahead = ahead
        if segments is not None:
            if len(segments) < 2 or segments[0] != 0 or segments[-1] != length or \
                    any(b < a for a, b in zip(segments, segments[1:])) or \
                    not set(segments[:-1]) <= set(cuts):
                raise ValueError("segments must rise from 0 to the length, each start a cut")
        self._segments = segments
        # (the segments' values, as segment_bounds splits the length: a Python thread's draws)
        self._thread_ahead = segments is not None and \
            length // (len(segments) - 1) >= THREAD_AHEAD_MIN
        self._pending: tuple[int, int, object, int] | None = None   # (first, end, Future, reserved)
        self._job: tuple[int, int, object, int] | None = None   # (first, end, DrawJob, reserved)
        self._held: tuple[int, np.ndarray, int] | None = None       # (first, values, reserved)
        self._generators: dict[int, np.random.Generator] = {}  # thread -> its own generator

    @property
    def marked(self) -> int:
        """How many cuts have their mark (the first `marked` cuts)."""
        return len(self.marks) // 4

    def _mark(self) -> None:
        """The generator's state, as the mark of the next cut."""
        self.marks.extend(_mark_of(self._generator))

    def _restore(self, mark: int) -> None:
        _restore_mark(self._generator, self.marks[4 * mark:4 * mark + 4], self._increment)
        self._position = self.cuts[mark]

    def mark_all(self) -> bool:
        """Every cut's mark recorded now, the generator's state stepped in C from the latest
        one (`fast_normals.marks_after`, a max pass's cost a value, no value kept): reads then
        never skip (a ring rank's first read drew the values before its segment only to pass
        their cuts, and its wrap to the last segment again: its whole vector, drawn twice).
        False where the C does not step this generator (the reads record the marks as they
        pass them)."""
        following = self.marked
        if following >= len(self.cuts):
            return True
        latest = following - 1
        steps = [end - start for start, end in zip(self.cuts[latest:], self.cuts[following:])]
        made = marks_after(tuple(self.marks[4 * latest:4 * latest + 4]), self._increment, steps)
        if made is None:
            return False
        if self.marked == following:        # (else a read passed the cuts meanwhile)
            self.marks.extend(made)
        return True

    def read(self, first: int, end: int) -> np.ndarray:
        """Values [first, end) as a new float32 array."""
        if not 0 <= first <= end <= self.size:
            raise ValueError(f"range [{first}, {end}) is outside 0..{self.size}")
        if self._ahead is None:
            return self._read(first, end)
        values = self._from_job(first, end) if self._job is not None else None
        if values is None:
            values = self._drawn_ahead(first, end)
        if values is None:
            values = self._read(first, end)
        if first < end and self._segments is not None:
            self._draw_next(end, end - first)
        return values

    def _read(self, first: int, end: int) -> np.ndarray:
        mark = min(bisect_right(self.cuts, first), self.marked) - 1
        following = self.marked
        if self.cuts[mark] == first and (following == len(self.cuts) or
                                         end < self.cuts[following]):
            # from a mark, passing no cut without one (a ring rank's every read once its
            # marks are made): drawn from the mark's state in C, the generator not moved
            values = draw_from(self.marks[4 * mark:4 * mark + 2], self._increment, end - first,
                               self.magnitude)
            if values is not None:
                self._position = _NOWHERE
                self.drawn += end - first
                return values
        if first < self._position or self.cuts[mark] > self._position:
            self._restore(mark)
        if self._position < first:
            self._draw(first - self._position, keep=False)
        return self._draw(end - first)

    def _draw(self, count: int, keep: bool = True) -> np.ndarray | None:
        """The next `count` values, drawn in pieces that end at the cuts not marked yet (their
        states recorded as the generator passes them); None when not `keep` (a skip: a
        rank's first read skips most of the vector, which is not to be held at once)."""
        pieces = []
        cuts = self.cuts
        while count > 0:
            following = self.marked      # the first cut without a mark
            stop = cuts[following] if following < len(cuts) else None
            if stop is not None and self._position < stop < self._position + count:
                piece = stop - self._position
            else:
                piece = count
            while not keep and piece > SKIP_BLOCK:      # (a cut is never inside one)
                draw(self._generator, SKIP_BLOCK, self.magnitude)
                self._position += SKIP_BLOCK
                self.drawn += SKIP_BLOCK
                piece -= SKIP_BLOCK
                count -= SKIP_BLOCK
            values = draw(self._generator, piece, self.magnitude)
            if keep:
                pieces.append(values)
            self._position += piece
            self.drawn += piece
            count -= piece
            if stop is not None and self._position == stop:
                self._mark()
        if not keep:
            return None
        if len(pieces) == 1:
            return pieces[0]
        return np.concatenate(pieces) if pieces else np.zeros(0, np.float32)

    # ---- drawn ahead -------------------------------------------------------------------------

    def draw_ahead(self, first: int, end: int) -> None:
        """Values [first, end) drawn on a drawing thread, for a read of them to come (when
        the budget has room and nothing else is drawn ahead): a rank's first segment, or the
        check's draws of a block split between the threads."""
        if self._ahead is not None and self._pending is None and 0 <= first < end <= self.size:
            self._submit(first, end)

    def read_elsewhere(self, first: int, end: int) -> np.ndarray:
        """Values [first, end), drawn with a generator of the caller's own from the latest
        mark at or before `first`: on any thread, changing nothing here (no mark recorded)."""
        if not 0 <= first <= end <= self.size:
            raise ValueError(f"range [{first}, {end}) is outside 0..{self.size}")
        if first == end:
            return np.zeros(0, np.float32)
        mark = min(bisect_right(self.cuts, first), self.marked) - 1
        words = tuple(self.marks[4 * mark:4 * mark + 4])     # (marks are only appended)
        return self._draw_elsewhere(mark, words, first, end, len(self.cuts))[0]

    def generator_at(self, first: int) -> np.random.Generator:
        """The calling thread's own generator of this stream, at value `first` (restored from
        the latest mark at or before it, skipping on from there; no mark recorded): for a
        caller that draws the values itself (the ring check's sums without the GIL)."""
        if not 0 <= first <= self.size:
            raise ValueError(f"value {first} is outside 0..{self.size}")
        mark = min(bisect_right(self.cuts, first), self.marked) - 1
        generator = self._own_generator()
        _restore_mark(generator, tuple(self.marks[4 * mark:4 * mark + 4]), self._increment)
        position = self.cuts[mark]
        while position < first:
            step = min(SKIP_BLOCK, first - position)
            draw(generator, step, self.magnitude)
            position += step
        return generator

    def _own_generator(self) -> np.random.Generator:
        """The calling thread's generator of this stream (making one is ~15 us with the GIL)."""
        thread = threading.get_ident()
        generator = self._generators.get(thread)
        if generator is None:
            generator = self._generators[thread] = generator_of(self._seed, self._rank,
                                                                self._job)
        return generator

    def _draw_next(self, end: int, count: int) -> None:
        """After a read of `count` values that ended at `end`: the next read's values, drawn
        ahead unless held or drawn already: by a C job (that read alone, one slice), else a
        Python thread's run. The next read starts at `end`, or, where a segment ends there,
        at the start of the segment before it (the first's is the last's), and has as many
        values, or the rest of its segment."""
        segments = self._segments
        index = bisect_right(segments, end) - 1       # the segment `end` is in, or ends
        if end == segments[index] or end == self.size:
            # a segment ends at `end`: its own index is the one before `index` (skip empty ones)
            ended = bisect_right(segments, end - 1) - 1
            before = (ended - 1) % (len(segments) - 1)
            start, stop = segments[before], segments[before + 1]
            if start == stop:
                return
        else:
            start, stop = end, segments[index + 1]
        following = min(stop, start + count)
        held = self._held
        if held is not None and held[0] <= start and following <= held[0] + held[1].size:
            return
        pending = self._pending
        if pending is not None and pending[0] <= start and following <= pending[1]:
            return
        if self._job is None:
            # reads start at cuts (the slices' starts) and end at the next one or the
            # segment's end
            after = bisect_right(self.cuts, start)
            if self._submit_job(start, min(stop, self.cuts[after]) if after < len(self.cuts)
                                else stop):
                if pending is not None:
                    self._take()      # (its marks kept; its values dropped below)
                self._drop_held()
                return
        if not self._thread_ahead:
            return
        if pending is not None:
            self._take()              # (its marks kept; its values dropped below)
            self._drop_held()
        self._submit(start, min(stop, start + max(AHEAD_VALUES, count)))

    def _submit_job(self, first: int, end: int) -> bool:
        """Values [first, end) drawn from the mark at `first` by fastnormals.c's thread (no
        Python thread, no GIL: a hand-off of a few us, where a Python thread's took ~40),
        when every cut has its mark, `first` is a cut and the budget has room; whether it
        was."""
        cuts = self.cuts
        if self.marked < len(cuts):
            return False
        mark = bisect_right(cuts, first) - 1
        if cuts[mark] != first or not self._ahead.reserve(end - first):
            return False
        job = job_from(self.marks[4 * mark:4 * mark + 2], self._increment, end - first,
                       self.magnitude)
        if job is None:
            self._ahead.release(end - first)
            return False
        self._job = (first, end, job, end - first)
        return True

    def _from_job(self, first: int, end: int) -> np.ndarray | None:
        """The job's values when it drew exactly [first, end), else None (the job let go:
        cancelled if it had not started, its values dropped)."""
        job_first, job_end, job, reserved = self._job
        self._job = None
        self._ahead.release(reserved)
        if (job_first, job_end) != (first, end):
            job.cancel()
            return None
        try:
            values = job.result()
        except (LookupError, RuntimeError):     # 32 bits asked for; cancelled by a fork
            return None
        self._position = _NOWHERE               # (as draw_from: the generator not moved)
        self.drawn += end - first
        self.drawn_ahead += end - first
        return values

    def _submit(self, first: int, end: int) -> None:
        if not self._ahead.reserve(end - first):
            return
        mark = min(bisect_right(self.cuts, first), self.marked) - 1
        words = tuple(self.marks[4 * mark:4 * mark + 4])
        future = self._ahead.submit(self._draw_elsewhere, mark, words, first, end, self.marked)
        if future is None:
            self._ahead.release(end - first)
            return
        self._pending = (first, end, future, end - first)

    def _draw_elsewhere(self, mark: int, words: tuple, first: int, end: int,
                        marked: int) -> tuple[np.ndarray, list]:
        """On a drawing thread: values [first, end) from mark `mark` (its `words`), with a
        generator of this thread's own (kept for its next draws), and the marks of the cuts from index `marked` on that
        it passes: ([values], [(cut index, words)])."""
        generator = self._own_generator()
        _restore_mark(generator, words, self._increment)
        cuts, position, following = self.cuts, self.cuts[mark], marked
        pieces, passed = [], []
        while position < end:
            stop = first if position < first else end
            if following < len(cuts) and cuts[following] < stop:
                stop = cuts[following]
            if position < first:                     # a skip, a block at a time
                while position < stop:
                    step = min(SKIP_BLOCK, stop - position)
                    draw(generator, step, self.magnitude)
                    position += step
            else:
                pieces.append(draw(generator, stop - position, self.magnitude))
                position = stop
            if following < len(cuts) and position == cuts[following]:
                passed.append((following, _mark_of(generator)))
                following += 1
        values = pieces[0] if len(pieces) == 1 else np.concatenate(pieces)
        return values, passed

    def _take(self) -> None:
        """The pending draw's values held (waited for), and the marks it passed recorded;
        nothing if it was cancelled (never started, or the threads closed)."""
        first, end, future, reserved = self._pending
        self._pending = None
        if future.cancelled() or future.cancel():
            self._ahead.release(reserved)
            return
        values, passed = future.result()
        for index, words in passed:
            if index == self.marked:
                self.marks.extend(words)
        self.drawn += end - first
        self.drawn_ahead += end - first
        self._drop_held()
        self._held = (first, values, reserved)

    def _drop_held(self) -> None:
        held, self._held = self._held, None
        if held is not None:
            self._ahead.release(held[2])

    def _drawn_ahead(self, first: int, end: int) -> np.ndarray | None:
        """Values [first, end) from what was drawn ahead, when it holds them all."""
        pending = self._pending
        if pending is not None and pending[0] <= first and end <= pending[1]:
            self._take()
        held = self._held
        if held is None or not (held[0] <= first and end <= held[0] + held[1].size):
            return None
        return held[1][first - held[0]:end - held[0]].copy()


def _mark_of(generator: np.random.Generator) -> tuple[int, int, int, int]:
    """A PCG64 generator's state as a mark's four words (its increment is the stream's own)."""
    state = generator.bit_generator.state
    value = state["state"]["state"]
    return (value >> 64, value & 0xFFFF_FFFF_FFFF_FFFF, state["has_uint32"], state["uinteger"])


def _restore_mark(generator: np.random.Generator, words, increment: int) -> None:
    """The generator put back at a mark (four words) of its stream (`increment`)."""
    high, low, has_uint32, uinteger = words
    generator.bit_generator.state = {
        "bit_generator": "PCG64",
        "state": {"state": (high << 64) | low, "inc": increment},
        "has_uint32": has_uint32, "uinteger": uinteger}
