"""A seeded gradient read a range at a time, never held whole.

`GradientStream(seed, rank, length)` has the values of `hosts.agent.gradient(seed, rank, length)`
(a Generator's normals drawn in pieces are the stream drawn at once, as `reference_blocks`
relies on), drawn when `read` asks for them. Why: a simulated run of 64 workers x 100 MiB would
hold 6.4 GiB of inputs alone; a session that reads its input through a stream (FloatCodec's
streamed mode, docs/sim.md) holds only the block it is quantizing.

Reads are cheapest in order (each pass over the vector draws it once); a read behind the last
one starts the generator again from the seed and draws up to it.
"""

from __future__ import annotations

import numpy as np

SKIP_BLOCK = 1 << 16      # values drawn at a time when skipping ahead to a read's start


class GradientStream:
    """The float32 values of `gradient(seed, rank, length, magnitude, job)`, by ranges."""

    def __init__(self, seed: int, rank: int, length: int, magnitude: float = 1.0,
                 job: int | None = None):
        if length < 0:
            raise ValueError(f"length must be >= 0, got {length}")
        self.seed, self.rank, self.job = seed, rank, job
        self.size = length
        self.magnitude = magnitude
        self._restart()

    def _restart(self) -> None:
        key = [self.seed, self.rank] if self.job is None else [self.seed, self.job, self.rank]
        self._generator = np.random.default_rng(key)
        self._position = 0          # the index of the next value the generator draws

    def _draw(self, count: int) -> np.ndarray:
        values = (self._generator.standard_normal(count) * self.magnitude).astype(np.float32)
        self._position += count
        return values

    def read(self, first: int, end: int) -> np.ndarray:
        """Values [first, end) as a new float32 array."""
        if not 0 <= first <= end <= self.size:
            raise ValueError(f"range [{first}, {end}) is outside 0..{self.size}")
        if first < self._position:
            self._restart()
        while self._position < first:
            self._draw(min(SKIP_BLOCK, first - self._position))
        return self._draw(end - first)
