"""The verdict on a job's streamed results, a block at a time as the blocks arrive.

A streamed INA worker (`InaSession.start(..., sink=)`) hands each block of its sum over once,
when that block's last RESULT is stored, and keeps none of it. `StreamedCheck` compares each
block with the exact float64 sum of the job's seeded gradients over the same elements and
folds the worker's record fields (max and mean error, largest bound, correct) as they come.
The exact sums are drawn a reference block at a time (`hosts.agent.reference_blocks`: every
worker's generator, in order) and kept only until every worker still running has checked its
elements of that block: what the run holds grows with how far apart the workers' results are,
not with the vector.

The verdict is the one `driver.judge_worker` gives a whole result: the same max error, largest
bound and correct (maxima and "every element" do not depend on the order), and the mean error
summed per block (equal to the whole-vector mean to rounding, ~1e-16 relative).
"""

from __future__ import annotations

from typing import Callable

import numpy as np

from hosts.agent import VERIFY_BLOCK, reference_blocks


class _WorkerVerdict:
    __slots__ = ("max_error", "error_sum", "max_bound", "correct", "checked")

    def __init__(self):
        self.max_error = self.error_sum = self.max_bound = 0.0
        self.correct = True
        self.checked = 0


class StreamedCheck:
    """One job's exact sums, by reference block, and each worker's running verdict.

    `bound_of(worker)` is the per-element error bound of that worker's blocks (its session's:
    INA's one scale makes it a function of the block alone)."""

    def __init__(self, *, seed: int, n: int, length: int):
        self.n, self.length = n, length
        self._blocks = reference_blocks(seed, n, length, 1.0)
        self._drawn = 0                                # reference blocks drawn so far
        self._exact: dict[int, tuple[np.ndarray, np.ndarray]] = {}   # block -> (sum, |x| sum)
        self._left: dict[int, int] = {}               # block -> elements still to check
        self._verdicts = [_WorkerVerdict() for _ in range(n)]
        self._ended: set[int] = set()
        self._checked: dict[int, np.ndarray] = {}     # block -> elements checked per worker
        self.most_blocks_held = 0                     # (tests: memory follows the spread)

    def sink(self, worker: int, bound_of: Callable[[np.ndarray], np.ndarray]):
        """What worker `worker`'s session calls with each block of its sum."""
        def take(first: int, values: np.ndarray) -> None:
            self._check(worker, first, values, bound_of)
        return take

    def _reference(self, block: int) -> tuple[np.ndarray, np.ndarray]:
        while self._drawn <= block:
            _first, exact, abs_sum = next(self._blocks)
            self._exact[self._drawn] = (exact, abs_sum)
            self._left[self._drawn] = exact.size * (self.n - len(self._ended))
            self._checked[self._drawn] = np.zeros(self.n, np.int64)
            self._drawn += 1
        self.most_blocks_held = max(self.most_blocks_held, len(self._exact))
        return self._exact[block]

    def _check(self, worker: int, first: int, values: np.ndarray,
               bound_of: Callable[[np.ndarray], np.ndarray]) -> None:
        verdict = self._verdicts[worker]
        end = first + values.size
        bounds = bound_of(values)
        position = first
        while position < end:           # the reference blocks this range spans
            block = position // VERIFY_BLOCK
            stop = min(end, (block + 1) * VERIFY_BLOCK)
            exact, _abs = self._reference(block)
            offset = block * VERIFY_BLOCK
            part = slice(position - first, stop - first)
            error = np.abs(values[part].astype(np.float64) - exact[position - offset:
                                                                   stop - offset])
            bound = bounds[part]
            verdict.max_error = max(verdict.max_error, float(np.max(error)))
            verdict.error_sum += float(np.sum(error))
            verdict.max_bound = max(verdict.max_bound, float(np.max(bound)))
            verdict.correct = verdict.correct and bool(np.all(error <= bound))
            verdict.checked += stop - position
            self._checked[block][worker] += stop - position
            self._used(block, stop - position)
            position = stop

    def _used(self, block: int, elements: int) -> None:
        self._left[block] -= elements
        if self._left[block] <= 0:
            del self._exact[block], self._left[block], self._checked[block]

    def end(self, worker: int) -> None:
        """Worker `worker` will check nothing more (its sum is complete, or it failed): the
        reference blocks no longer wait for it."""
        if worker in self._ended:
            return
        self._ended.add(worker)
        for block in list(self._left):
            size = self._exact[block][0].size
            self._used(block, size - int(self._checked[block][worker]))

    def verdict(self, worker: int, finished: bool) -> tuple:
        """(max error, mean error, largest bound, correct), as `driver.judge_worker` gives
        them; all None/False for a worker without a complete sum."""
        verdict = self._verdicts[worker]
        if not finished or verdict.checked != self.length:
            return None, None, None, False
        mean = verdict.error_sum / self.length if self.length else 0.0
        return verdict.max_error, mean, verdict.max_bound, verdict.correct
