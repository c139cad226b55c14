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

from array import array
from bisect import bisect_right

import numpy as np

from hosts.gradient_stream import SKIP_BLOCK, draw, generator_of


class SeekableGradient:
    """The float32 values of `gradient(seed, rank, length, magnitude, job)`, at any range."""

    def __init__(self, seed: int, rank: int, length: int, cuts: list[int],
                 marks: array | None = None, magnitude: float = 1.0, job: int | None = None):
        if length < 0:
            raise ValueError(f"length must be >= 0, got {length}")
        if not cuts or cuts[0] != 0 or any(b <= a for a, b in zip(cuts, cuts[1:])):
            raise ValueError("cuts must rise strictly from 0")
        self.size = length
        self.magnitude = magnitude
        self.cuts = cuts
        self.marks = array("Q") if marks is None else marks    # 4 words a mark
        self.drawn = 0               # values drawn, over every read and skip (tests, benchmarks)
        self._generator = generator_of(seed, rank, job)
        state = self._generator.bit_generator.state
        if state["bit_generator"] != "PCG64":
            raise ValueError(f"marks are PCG64 states, the generator is "
                             f"{state['bit_generator']}")
        self._increment = state["state"]["inc"]
        self._position = 0           # the index of the next value the generator draws
        if not self.marks:
            self._mark()

    @property
    def marked(self) -> int:
        """How many cuts have their mark (the first `marked` cuts)."""
        return len(self.marks) // 4

    def _mark(self) -> None:
        """The generator's state, as the mark of the next cut."""
        state = self._generator.bit_generator.state
        value = state["state"]["state"]
        self.marks.extend((value >> 64, value & 0xFFFF_FFFF_FFFF_FFFF, state["has_uint32"],
                           state["uinteger"]))

    def _restore(self, mark: int) -> None:
        high, low, has_uint32, uinteger = self.marks[4 * mark:4 * mark + 4]
        self._generator.bit_generator.state = {
            "bit_generator": "PCG64",
            "state": {"state": (high << 64) | low, "inc": self._increment},
            "has_uint32": has_uint32, "uinteger": uinteger}
        self._position = self.cuts[mark]

    def read(self, first: int, end: int) -> np.ndarray:
        """Values [first, end) as a new float32 array."""
        if not 0 <= first <= end <= self.size:
            raise ValueError(f"range [{first}, {end}) is outside 0..{self.size}")
        mark = min(bisect_right(self.cuts, first), self.marked) - 1
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
