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

import numpy as np

SKIP_BLOCK = 1 << 16      # values drawn at a time when skipping ahead to a read's start


def generator_of(seed: int, rank: int, job: int | None = None) -> np.random.Generator:
    """Rank `rank`'s generator: seeded by (seed, rank), or (seed, job, rank) with a job."""
    return np.random.default_rng([seed, rank] if job is None else [seed, job, rank])


def draw(generator: np.random.Generator, count: int, magnitude: float = 1.0) -> np.ndarray:
    """The generator's next `count` gradient values: standard normals times `magnitude`, as
    float32 (the one definition: `gradient`, the stream and the reference sums draw so)."""
    values = generator.standard_normal(count)
    if magnitude != 1.0:               # (x * 1.0 is x: the product's pass is skipped)
        values *= magnitude
    return values.astype(np.float32)


class GradientStream:
    """The float32 values of `gradient(seed, rank, length, magnitude, job)`, by ranges."""

    def __init__(self, seed: int, rank: int, length: int, magnitude: float = 1.0,
                 job: int | None = None):
        if length < 0:
            raise ValueError(f"length must be >= 0, got {length}")
        self.seed, self.rank, self.job = seed, rank, job
        self.size = length
        self.magnitude = magnitude
        self.drawn = 0               # values drawn so far, over every pass (tests, benchmarks)
        self._kept: tuple[int, np.ndarray, dict] | None = None   # the first read, for a re-read
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
        fresh = self._position == 0 and self.drawn == 0
        if self._kept is not None and first == 0 and end == self._kept[0] \
                and self._position >= end:
            # the first read again, with the generator past it: the values kept, and the
            # generator where it was after them (the next read in order draws on from there)
            _end, values, state = self._kept
            self._kept = None
            self._generator.bit_generator.state = state
            self._position = end
            return values
        if first < self._position:
            self._restart()
        while self._position < first:
            self._draw(min(SKIP_BLOCK, first - self._position))
        values = self._draw(end - first)
        if fresh and first == 0:     # kept until read again (once)
            values.flags.writeable = False
            self._kept = (end, values, self._generator.bit_generator.state)
        return values
