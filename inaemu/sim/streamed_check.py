"""The verdict on a job's streamed results, a block at a time as the blocks arrive.

A streamed INA worker (`InaSession.start(..., sink=)`) hands each block of its sum over once,
when that block's last RESULT is stored, and keeps none of it. `StreamedCheck` compares each
block with the exact float64 sum of the job's seeded gradients over the same elements and
folds the worker's record fields (max and mean error, largest bound, correct) as they come.

The exact sums are built from what the workers quantize: each worker reads its input through
`source(rank)`, and its codec hands every range it quantizes to the check (FloatCodec's
`quantized` hook). Every worker has quantized a range before any RESULT of it can exist, so
by a block's first check its sum is complete, drawn by nobody a second time: drawing is ~14 ns
a value, the rest of the check ~1 ns. The ranks are added in order 0..n-1
(`hosts.agent.add_exact`, as `reference_blocks` adds them: the same float64 sums); a range
quantized ahead of a lower rank waits (held, up to `HELD_VALUES`; beyond that it is dropped
and drawn from the seed again when the block is checked, as is every rank a check finds
missing). A block is kept only until every worker still running has checked its elements:
what the run holds grows with how far apart the workers are, not with the vector.

The verdict is the one `driver.judge_worker` gives a whole result: the same max error, largest
bound and correct (maxima and "every element" do not depend on the order), and the mean error
summed per block (equal to the whole-vector mean to rounding, ~1e-16 relative).

The ring (`StreamedCheck.for_ring`): its ranks read their inputs through `SeekableGradient`s
and hand nothing over, so the check draws every rank of a block itself (in order 0..n-1, the
same float64 sums), with the sums of |x| its bound needs (`ring_error_bound`). Every rank of
a ring ends with the very same values (the all-gather forwards them unchanged) and one bound
for all, so a block is judged once: its verdict is kept under a digest of the values judged
(SHA-1: ~0.7 ns a byte here with the CPU's SHA instructions, BLAKE2b took 4.6; no adversary,
only a wrong sum to tell apart), the exact sums dropped, and a rank whose values have that digest gets
that verdict (the same numbers: they are functions of the values and the reference). Values
with another digest (a wrong sum) are judged against sums drawn again. A block then holds a
few verdicts until every rank has checked it, not the 16 bytes per element of its sums, and
the check's work is one draw of every rank per block, not one comparison per rank. With a
drawing thread, a block's first verdict is computed there (its sums drawn and added in C
without the GIL where `exact_sums` builds) and folded into each worker's record in that
worker's order of blocks.

INA: every worker of a job gets the same RESULTs, so its blocks of the sum are most often the
very values another worker's check judged already. A block keeps the first values judged (a
copy) and their verdict; a worker whose values are the same bytes, judged by a bound with the
same `key()` (the session's n and scale: all the verdict depends on besides the values and
the block's exact sum), gets that verdict (the same numbers) for a comparison of bytes (~10 µs
a block of 64 Ki values) instead of ~100-200 µs of error and bound arithmetic. Other values
are judged as they come.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from array import array
from collections import deque
from typing import Callable

import numpy as np

from hosts.agent import add_exact
from hosts.draw_ahead import DrawAhead
from hosts.gradient_stream import GradientStream
from inaemu.sim.native import block_digest, exact_sums
from inaemu.sim.seekable_gradient import SeekableGradient

HELD_VALUES = 1 << 24     # values (64 MiB of float32) held ahead of a lower rank, per job
LATER_VALUES = 1 << 25    # values (128 MiB) of ring blocks waiting for a drawing thread's verdict

# verdict_of(values, error): the largest bound of a block of the sum and whether every element's
# error is within its bound; with `magnitudes`, verdict_of(values, error, abs_sum)
VerdictOf = Callable[..., tuple[float, bool]]


class KeyedVerdict(ABC):
    """A verdict_of whose verdict depends only on the values, their errors and `key()`: a
    check may give a block's verdict to equal values judged by an equal key."""

    @abstractmethod
    def __call__(self, values: np.ndarray, error: np.ndarray) -> tuple[float, bool]:
        """(largest bound, every error within its bound)"""

    @abstractmethod
    def key(self) -> tuple:
        """What the verdict depends on besides the values and their errors"""


class _WorkerVerdict:
    __slots__ = ("max_error", "error_sum", "max_bound", "correct", "checked")

    def __init__(self):
        self.max_error = self.error_sum = self.max_bound = 0.0
        self.correct = True
        self.checked = 0


class _Block:
    """One range's exact sum as the ranks' values come in, and who has checked it."""
    __slots__ = ("size", "total", "abs_total", "next_rank", "held", "left", "checked",
                 "judged", "first_judged", "shared")

    def __init__(self, size: int, n: int, running: int, magnitudes: bool = False):
        self.size = size
        self.total = np.zeros(size, np.float64)
        self.abs_total = np.zeros(size, np.float64) if magnitudes else None   # Σ|x|
        self.next_rank = 0                      # ranks below are in `total`
        self.held: dict[int, np.ndarray] = {}   # rank -> its values, waiting for lower ranks
        self.left = size * running              # elements still to check
        self.checked = np.zeros(n, np.int64)    # elements checked, per worker
        self.judged: dict[bytes, tuple] | None = None   # one verdict: digest -> its numbers
        # a KeyedVerdict's first verdict: (its key, the values judged, the numbers); the values
        # are the block's shared array itself when it was that one, else (dtype, bytes)
        self.first_judged: tuple[tuple, object, tuple] | None = None
        # the first values a sink made (`_Sink.shared`): (their key, the lanes' bytes, values)
        self.shared: tuple[tuple, bytes, np.ndarray] | None = None


class _Later:
    """A ring block's verdict computed on a drawing thread (its exact sums drawn there), for
    the workers whose values have its digest; computed here if the thread never ran it."""
    __slots__ = ("future", "judge", "result", "size")

    def __init__(self, future, judge: Callable[[], tuple], size: int):
        self.future, self.judge, self.result, self.size = future, judge, None, size

    def done(self) -> bool:
        return self.result is not None or self.future.done()

    def value(self) -> tuple:
        if self.result is None:
            future = self.future
            self.result = self.judge() if future.cancelled() or future.cancel() \
                else future.result()
            self.future = self.judge = None
        return self.result


class _CheckedSource:
    """A worker's input for its codec: the stream's values, and what it quantizes to the check."""

    def __init__(self, stream: GradientStream, check: "StreamedCheck", rank: int):
        self._stream, self._check, self._rank = stream, check, rank
        self.size = stream.size

    def read(self, first: int, end: int) -> np.ndarray:
        return self._stream.read(first, end)

    def max_bits(self, block: int) -> int:
        return self._stream.max_bits(block)

    def quantized(self, first: int, values: np.ndarray) -> None:
        self._check.add(self._rank, first, values)


class _Sink:
    """What a worker's session hands its blocks of the sum to (`StreamedCheck.sink`)."""
    __slots__ = ("_check", "_worker", "_verdict_of")

    def __init__(self, check: "StreamedCheck", worker: int, verdict_of: VerdictOf):
        self._check, self._worker, self._verdict_of = check, worker, verdict_of

    def __call__(self, first: int, values: np.ndarray) -> None:
        self._check._check(self._worker, first, values, self._verdict_of)

    @property
    def lanes(self):
        """(the job's store of RESULT lanes, this worker's index), or None: the session's
        codec keeps its own (hosts/ina_codec.py)."""
        store = self._check.lanes
        return None if store is None else (store, self._worker)

    def shared(self, first: int, lanes, key: tuple, make: Callable[[], np.ndarray]):
        """The values of the block at `first`, made by `make()` from RESULT lanes `lanes` (a
        bytes-like object) and whatever else `key` names; the values another worker's sink
        made already when its lanes were the same bytes and its key was equal (every INA
        worker of a job receives the same RESULTs: one dequantization, not one per worker).
        The values given are read-only."""
        return self._check._shared(first, lanes, key, make)


class StreamedCheck:
    """One job's exact sums, by block, and each worker's running verdict."""

    def __init__(self, *, seed: int, n: int, length: int, cuts: list[int] | None = None,
                 magnitudes: bool = False, one_verdict: bool = False,
                 ahead: DrawAhead | None = None, segments: list[int] | None = None,
                 lanes=None):
        """`cuts`: the ranks' inputs are `SeekableGradient`s marked there (`seekable`), and
        the check draws through such readers; `magnitudes`: keep the sums of |x| too (the
        bound's third argument); `one_verdict`: every worker's values of a block are meant to
        be the same and their verdict_of is one function (the ring): judge a block once per
        distinct value digest; `ahead`: threads that draw the workers' inputs (`source`)
        ahead of their reads (`max_passes_ahead` for the max passes), and the ring's first
        verdicts of its blocks; `segments`: the ring's segment bounds, by which its ranks'
        inputs (`seekable`) predict their next reads; `lanes`: where the workers' codecs
        keep their RESULT lanes (the native core's `JobLanes`: once for the job, so the
        lanes of equal blocks are one object; None: each codec its own)."""
        self.seed, self.n, self.length = seed, n, length
        self.lanes = lanes
        self._ahead = ahead
        self._sources: list[GradientStream] = []
        self._prepared: dict[int, GradientStream] = {}   # rank -> its input, not yet given
        self.segments = segments                      # the ring's segment bounds (for_ring)
        self._seekables: list[SeekableGradient] = []
        self.cuts, self.magnitudes, self.one_verdict = cuts, magnitudes, one_verdict
        self._marks = [array("Q") for _ in range(n)] if cuts is not None else None
        self._blocks: dict[int, _Block] = {}          # first element -> its block
        self._done: set[int] = set()                  # blocks every worker has checked
        self._streams: dict[int, GradientStream] = {}  # rank -> draws of a missing rank
        self._held = 0                                 # values held, over every block
        self._verdicts = [_WorkerVerdict() for _ in range(n)]
        self._unfolded: list[deque] = [deque() for _ in range(n)]   # verdicts to fold, in order
        self._later_values = 0                        # values of ring blocks judged later
        self._ended: set[int] = set()
        self.most_blocks_held = 0                     # (tests: memory follows the spread)
        self.values_drawn = 0                         # drawn again from the seed (tests)
        self._add_values = exact_sums.add_values()   # add_exact in one C pass, or None
        # a block's bytes known again (one verdict a block), by a C digest or SHA-1
        self._digest = block_digest.digester() if one_verdict else None

    @classmethod
    def for_ring(cls, *, seed: int, n: int, length: int, cuts: list[int],
                 segments: list[int] | None = None,
                 ahead: DrawAhead | None = None) -> "StreamedCheck":
        """A ring job's check: seekable inputs marked at `cuts` (the slice starts), sums of
        |x| for `ring_error_bound`, one verdict per block; with `segments` (the ring's bounds)
        and `ahead`, the ranks' inputs draw their next reads ahead (`seekable`)."""
        return cls(seed=seed, n=n, length=length, cuts=cuts, magnitudes=True,
                   one_verdict=True, ahead=ahead, segments=segments)

    def source(self, rank: int) -> _CheckedSource:
        """Rank `rank`'s input (its seeded gradient), whose quantized ranges sum the reference."""
        stream = self._prepared.pop(rank, None)
        if stream is None:
            stream = self._new_input(rank)
        return _CheckedSource(stream, self, rank)

    def _new_input(self, rank: int) -> GradientStream:
        stream = GradientStream(self.seed, rank, self.length, ahead=self._ahead)
        self._sources.append(stream)
        return stream

    def sources_ahead(self, block: int) -> None:
        """Every rank's input made now, before any is given out, for `source` to give out,
        and their max passes started (`max_passes_ahead`): workers that start one by one (a
        scenario's call) find theirs drawn, or the first of them draw their own while the
        threads draw the rest. `close` gives back what no worker took."""
        if self._ahead is None or not self._ahead.open:
            return
        if self._sources:
            raise ValueError("inputs are made ahead before any is given out")
        self._prepared = {rank: self._new_input(rank) for rank in range(self.n)}
        self.max_passes_ahead(block)

    def close(self) -> None:
        """The call is over or started again: inputs made ahead and never given out let go
        of what they drew ahead."""
        prepared, self._prepared = self._prepared, {}
        for stream in prepared.values():
            stream.close()

    def max_passes_ahead(self, block: int) -> None:
        """The max pass of every source given out, started on the drawing threads, the last
        rank first (the workers start from the first: the simulation's thread does the first
        ranks' passes while the drawing threads do the last ones')."""
        for stream in reversed(self._sources):
            stream.max_pass_ahead(block)

    def seekable(self, rank: int) -> SeekableGradient:
        """Rank `rank`'s input read at any range, sharing its marks with the check's own
        draws of that rank (whoever passes a cut first records it); its next reads drawn
        ahead when the check has threads and the ring's segments."""
        reader = SeekableGradient(self.seed, rank, self.length, self.cuts, self._marks[rank],
                                  ahead=self._ahead if self.segments else None,
                                  segments=self.segments)
        self._seekables.append(reader)
        return reader

    def marks_ahead(self) -> None:
        """Every ring rank's marks at every cut, recorded before any rank reads
        (`SeekableGradient.mark_all`): half the ranks' on a drawing thread, half here, each
        rank's by one thread (the marks a rank's reader shares with the check's are written
        by nobody else before the run)."""
        if self.cuts is None:
            return
        readers = self._seekables
        ahead = self._ahead
        elsewhere = readers[len(readers) // 2:] if ahead is not None and ahead.open else []
        pending = [ahead.submit(reader.mark_all) for reader in elsewhere]
        for reader in readers[:len(readers) - len(elsewhere)]:
            reader.mark_all()
        for future in pending:
            if future is not None:
                future.result()
            # (a closed pool's None: that rank's reads record its marks as they go)

    def first_reads_ahead(self) -> None:
        """Every ring rank's first segment (rank r's is segment r), started on the drawing
        threads, the last rank first (the simulation's thread starts the first ranks, whose
        first reads skip the least, itself)."""
        if self.segments is None:
            return
        for rank, reader in reversed(list(enumerate(self._seekables))):
            index = rank % (len(self.segments) - 1)
            reader.draw_ahead(self.segments[index], self.segments[index + 1])

    def _reader(self, rank: int):
        if self.cuts is not None:
            return SeekableGradient(self.seed, rank, self.length, self.cuts, self._marks[rank],
                                    ahead=self._ahead)
        return GradientStream(self.seed, rank, self.length)

    def sink(self, worker: int, verdict_of: VerdictOf):
        """What worker `worker`'s session calls with each block of its sum; `verdict_of` its
        session's bound of a block (INA's one scale makes it a function of the block alone).
        Its `shared` lets the workers' codecs share one dequantization of the same lanes."""
        return _Sink(self, worker, verdict_of)

    def _shared(self, first: int, lanes, key: tuple, make: Callable[[], np.ndarray]):
        block = self._blocks.get(first)
        seen = None if block is None else block.shared
        if seen is not None:
            seen_key, seen_lanes, values = seen
            if seen_key == key and lanes == seen_lanes:
                return values
        values = make()
        values.flags.writeable = False       # (the first is every sharing worker's)
        if block is not None and seen is None:   # (none: nobody quantized it, or all checked)
            block.shared = (key, bytes(lanes), values)
        return values

    def _block(self, first: int, size: int) -> _Block:
        block = self._blocks.get(first)
        if block is None:
            if first in self._done:
                raise ValueError(f"elements {first}.. were checked by every worker already")
            block = self._blocks[first] = _Block(size, self.n, self.n - len(self._ended),
                                                 self.magnitudes)
            self.most_blocks_held = max(self.most_blocks_held, len(self._blocks))
        elif block.size != size:
            raise ValueError(f"elements {first}..: a range of {size}, where the block "
                             f"has {block.size}")
        return block

    def add(self, rank: int, first: int, values: np.ndarray) -> None:
        """Rank `rank` quantized `values`, its elements from `first` on: into the block's sum
        when every lower rank's are in, else held for them."""
        if first in self._done:
            return
        block = self._block(first, values.size)
        if rank != block.next_rank:
            if rank > block.next_rank and rank not in block.held and \
                    self._held + values.size <= HELD_VALUES:
                block.held[rank] = values
                self._held += values.size
            return                     # (beyond the limit: drawn again at the check)
        self._add(block.total, values, block.abs_total)
        block.next_rank += 1
        self._fold_held(block)

    def _add(self, total: np.ndarray, values: np.ndarray, abs_total: np.ndarray | None) -> None:
        """`add_exact`, in one C pass where the values are contiguous float32 (the same sums)."""
        if self._add_values is not None and values.dtype == np.float32 and \
                values.flags.c_contiguous:
            self._add_values(values, total, abs_total)
        else:
            add_exact(total, values, abs_total)

    def _fold_held(self, block: _Block) -> None:
        while block.next_rank in block.held:
            values = block.held.pop(block.next_rank)
            self._held -= values.size
            self._add(block.total, values, block.abs_total)
            block.next_rank += 1

    def _complete(self, first: int, block: _Block) -> np.ndarray:
        """The block's exact sum, drawing from the seed every rank not given (in order). Ring
        readers with drawing threads: the upper half of the ranks drawn there meanwhile."""
        if self.cuts is not None and self._ahead is not None and self._ahead.open:
            missing = range(block.next_rank, self.n)
            for rank in missing[len(missing) // 2:]:
                reader = self._streams.get(rank)
                if reader is None:
                    reader = self._streams[rank] = self._reader(rank)
                reader.draw_ahead(first, first + block.size)
        while block.next_rank < self.n:
            rank = block.next_rank
            stream = self._streams.get(rank)
            if stream is None:
                stream = self._streams[rank] = self._reader(rank)
            self._add(block.total, stream.read(first, first + block.size), block.abs_total)
            self.values_drawn += block.size
            block.next_rank += 1
            self._fold_held(block)
        return block.total

    def _check(self, worker: int, first: int, values: np.ndarray,
               verdict_of: VerdictOf) -> None:
        verdict = self._verdicts[worker]
        block = self._block(first, values.size)
        if self.one_verdict:
            digest = self._digest(np.ascontiguousarray(values).data)
            judged = block.judged.get(digest) if block.judged is not None else None
            if judged is None:
                judged = self._judge_later(first, block, values, verdict_of)
                if judged is None:
                    judged = self._judge(first, block, values, verdict_of)
                if block.judged is None:
                    block.judged = {}
                    block.total = block.abs_total = None     # the verdict is what is kept
                block.judged[digest] = judged
        elif isinstance(verdict_of, KeyedVerdict):
            judged = self._judge_keyed(first, block, values, verdict_of)
        else:
            judged = self._judge(first, block, values, verdict_of)
        unfolded = self._unfolded[worker]
        unfolded.append(judged)
        self._fold(verdict, unfolded, wait=False)
        verdict.checked += values.size
        block.checked[worker] += values.size
        self._used(first, block, values.size)

    def _fold(self, verdict: _WorkerVerdict, unfolded: deque, wait: bool) -> None:
        """A worker's verdicts into its record, in the order of its blocks (the error sum's
        order); one judged later stops the fold until it is done, unless `wait`."""
        while unfolded:
            judged = unfolded[0]
            if isinstance(judged, _Later):
                if not (wait or judged.done()):
                    return
                fresh = judged.result is None
                judged = judged.value()
                if fresh:
                    self._later_values -= unfolded[0].size
            unfolded.popleft()
            max_error, error_sum, max_bound, within = judged
            verdict.max_error = max(verdict.max_error, max_error)
            verdict.error_sum += error_sum
            verdict.max_bound = max(verdict.max_bound, max_bound)
            verdict.correct = verdict.correct and within

    def _judge_later(self, first: int, block: _Block, values: np.ndarray,
                     verdict_of: VerdictOf) -> _Later | None:
        """A ring block's first verdict, on a drawing thread while the simulation runs on (its
        exact sums are every rank's values: one draw of the block per rank, which, judged
        here, stalled the event loop when every rank completed its segment at once); None
        without threads, or with LATER_VALUES already waiting."""
        ahead = self._ahead
        if self.cuts is None or ahead is None or not ahead.open or \
                self._later_values + values.size > LATER_VALUES:
            return None
        readers = []
        for rank in range(self.n):
            reader = self._streams.get(rank)
            if reader is None:
                reader = self._streams[rank] = self._reader(rank)
            readers.append(reader)
        values = np.array(values, copy=True)
        size = block.size
        add_drawn = exact_sums.add_drawn()

        def judge() -> tuple:
            total = np.zeros(size, np.float64)
            abs_total = np.zeros(size, np.float64) if self.magnitudes else None
            if add_drawn is not None:      # every rank drawn and added in C, without the GIL
                add_drawn(tuple(reader.generator_at(first).bit_generator.capsule
                                for reader in readers), size, readers[0].magnitude,
                          total, abs_total)
            else:
                for reader in readers:
                    add_exact(total, reader.read_elsewhere(first, first + size), abs_total)
            return self._verdict_against(total, abs_total, values, verdict_of)

        future = ahead.submit(judge)
        if future is None:
            return None
        self._later_values += values.size
        self.values_drawn += self.n * size
        return _Later(future, judge, values.size)

    def _judge(self, first: int, block: _Block, values: np.ndarray,
               verdict_of: VerdictOf) -> tuple:
        """(max error, error sum, largest bound, every error within its bound) of `values`
        against the block's exact sum (drawn again if a first verdict dropped it)."""
        if block.total is None:
            block.total = np.zeros(block.size, np.float64)
            block.abs_total = np.zeros(block.size, np.float64) if self.magnitudes else None
            block.next_rank = 0
        exact = self._complete(first, block)
        result = self._verdict_against(exact, block.abs_total, values, verdict_of)
        if block.judged is not None:          # a second opinion: its sums go again
            block.total = block.abs_total = None
        return result

    def _judge_keyed(self, first: int, block: _Block, values: np.ndarray,
                     verdict_of: KeyedVerdict) -> tuple:
        """The block's first verdict again when these are the values it judged, by an equal
        key; else judged (and kept, when it is the block's first)."""
        key = verdict_of.key()
        seen = block.first_judged
        if seen is not None:
            seen_key, kept, judged = seen
            if seen_key == key and _same_values(values, kept):
                return judged
        judged = self._judge(first, block, values, verdict_of)
        if seen is None:
            shared = block.shared is not None and values is block.shared[2]
            kept = values if shared else (values.dtype, values.tobytes())
            block.first_judged = (key, kept, judged)
        return judged

    def _verdict_against(self, exact: np.ndarray, abs_total: np.ndarray | None,
                         values: np.ndarray, verdict_of: VerdictOf) -> tuple:
        error = np.subtract(values, exact, dtype=np.float64)   # (float32 to float64: exact)
        np.abs(error, out=error)
        if self.magnitudes:
            max_bound, within = verdict_of(values, error, abs_total)
        else:
            max_bound, within = verdict_of(values, error)
        return float(np.max(error)), float(np.sum(error)), max_bound, within

    def _used(self, first: int, block: _Block, elements: int) -> None:
        block.left -= elements
        if block.left <= 0:
            del self._blocks[first]
            self._done.add(first)
            for values in block.held.values():
                self._held -= values.size

    def end(self, worker: int) -> None:
        """Worker `worker` will check nothing more (its sum is complete, or it failed): the
        blocks no longer wait for it."""
        if worker in self._ended:
            return
        self._ended.add(worker)
        if self.lanes is not None:
            self.lanes.end(worker)
        for first, block in list(self._blocks.items()):
            self._used(first, block, block.size - int(block.checked[worker]))

    def verdict(self, worker: int, finished: bool) -> tuple:
        """(max error, mean error, largest bound, correct), as `driver.judge_worker` gives
        them; all None/False for a worker without a complete sum."""
        verdict = self._verdicts[worker]
        self._fold(verdict, self._unfolded[worker], wait=True)
        if not finished or verdict.checked != self.length:
            return None, None, None, False
        mean = verdict.error_sum / self.length if self.length else 0.0
        return verdict.max_error, mean, verdict.max_bound, verdict.correct


def _same_values(values: np.ndarray, kept) -> bool:
    """`values` are the ones a block kept of its first verdict: the very shared array (read-
    only: its bytes are the ones judged), or the same dtype and bytes."""
    if isinstance(kept, tuple):
        dtype, data = kept
        return values.dtype == dtype and values.tobytes() == data
    return values is kept
