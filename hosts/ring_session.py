"""The ring all-reduce baseline, as a sans-I/O state machine (what NCCL's ring does, on hosts).

Rules this module keeps (the caller owns the two TCP connections; nothing here does I/O):

* n ranks in a ring; rank r sends only to its right neighbour (r + 1 mod n) and receives only
  from its left one, over a reliable ordered byte stream. `start(vector)` and `receive(bytes)`
  return the bytes to append to the stream to the right.
* The vector is cut into n segments (sizes differ by at most one). Reduce-scatter, steps
  s = 0..n-2: send segment (r - s) mod n, receive segment (r - s - 1) mod n and add it in. Rank r
  then holds the full sum of segment (r + 1) mod n. All-gather, steps s = 0..n-2: send segment
  (r + 1 - s) mod n, receive segment (r - s) mod n and keep it. Every send after the first of a
  phase forwards what was just received, so progress needs no timer.
* A segment travels as slices of at most `slice_values` values, in order, and each slice is
  forwarded (added in, or kept) as soon as it has arrived, as NCCL pipelines its ring: a rank's
  link never waits for the whole of a step's segment, so queueing in front of a link delays a
  call once, not once per step. (Whole segments, until 2026-11-28, left every link idle for
  the queueing delay at each of the 2(n-1) steps: ResNet-50 over 16 ranks at 10 Mbit/s took
  1.37x its link-bound time on Mininet.) Slicing changes no sum: every element still gets its
  n - 1 additions in ring order.
* Sums are accumulated in float32 as NCCL does (or in float64 with accumulate="float64"); the
  result is float32 either way. `error_bound` states how far it can be from the exact sum.
* Anything on the stream but the next expected message raises `RingProtocolError`; the session
  is then FAILED. Bytes that arrive before `start` (a faster left neighbour) are kept.
* Streamed (`start(source, sink=)`, the simulator's runs without kept results): no vector is
  held. The rank reads its own values from `source.read(first, end)` when it needs them (its
  first segment's slices at the start, its own slice of the segment each reduce-scatter slice
  adds into), sends own + received at once, and hands each slice of the result to
  `sink(first, values)` when it has it (the sum it completes at the last reduce-scatter step,
  then each all-gather slice); `result` stays None. Every element is read once, and its sum
  is the same float32 (or float64) addition as with a whole vector: the same bits.
"""

from __future__ import annotations

import enum
from collections import deque
from dataclasses import dataclass

import numpy as np

from .errors import RingProtocolError, UsageError
from .ring_wire import Hello, RingKind, Segment, StreamDecoder, encode

U32 = 2.0**-24     # unit roundoff of float32
U64 = 2.0**-53


class RingState(enum.Enum):
    IDLE = "idle"
    REDUCE_SCATTER = "reduce_scatter"
    ALL_GATHER = "all_gather"
    DONE = "done"
    FAILED = "failed"


class RingEvent(enum.Enum):
    START = "start"
    START_ALONE = "start_alone"          # n = 1 or an empty vector: nothing to exchange
    SCATTER_DONE = "scatter_done"
    GATHER_DONE = "gather_done"
    BAD_MESSAGE = "bad_message"


RING_TRANSITIONS: dict[tuple[RingState, RingEvent], RingState] = {
    (RingState.IDLE, RingEvent.START): RingState.REDUCE_SCATTER,
    (RingState.DONE, RingEvent.START): RingState.REDUCE_SCATTER,
    (RingState.IDLE, RingEvent.START_ALONE): RingState.DONE,
    (RingState.DONE, RingEvent.START_ALONE): RingState.DONE,
    (RingState.REDUCE_SCATTER, RingEvent.SCATTER_DONE): RingState.ALL_GATHER,
    (RingState.ALL_GATHER, RingEvent.GATHER_DONE): RingState.DONE,
    (RingState.IDLE, RingEvent.BAD_MESSAGE): RingState.FAILED,
    (RingState.REDUCE_SCATTER, RingEvent.BAD_MESSAGE): RingState.FAILED,
    (RingState.ALL_GATHER, RingEvent.BAD_MESSAGE): RingState.FAILED,
    (RingState.DONE, RingEvent.BAD_MESSAGE): RingState.FAILED,
}

ACCUMULATORS = {"float32": np.float32, "float64": np.float64}
SLICE_VALUES = 16384        # values per message: 64 KiB of float32


@dataclass(slots=True)
class RingCounters:
    messages_sent: int = 0
    bytes_sent: int = 0
    messages_received: int = 0
    bytes_received: int = 0


def segment_bounds(length: int, n: int) -> list[int]:
    """n + 1 cut points: segment i is [bounds[i], bounds[i+1])."""
    return [i * length // n for i in range(n + 1)]


def ring_error_bound(abs_sum: np.ndarray, result: np.ndarray, n: int,
                     accumulate: str = "float32") -> np.ndarray:
    """Per element: |y - Σx| for the ring's result y, with abs_sum = Σ|x_i| (float64).

    n - 1 additions in the accumulator (any order: γ_(n-1)·Σ|x|, Higham), the final rounding to
    float32 (ulp32(y)/2, only for float64 accumulation), and the float64 reference sum's own
    rounding (γ64_(n-1)·Σ|x|).
    """
    unit = U32 if accumulate == "float32" else U64
    m = max(n - 1, 0)
    gamma = m * unit / (1 - m * unit)
    gamma64 = m * U64 / (1 - m * U64)
    y = np.abs(np.asarray(result, dtype=np.float32))
    final = np.spacing(y).astype(np.float64) / 2 if accumulate == "float64" else 0.0
    return (gamma + gamma64) * np.asarray(abs_sum, dtype=np.float64) + final


class RingSession:
    """Rank `rank` of an n-rank ring; reusable for many calls in order."""

    # (slots: the native core reads and writes them at their offsets, native/attrs.c)
    __slots__ = ('rank', 'n', 'accumulate', 'slice_values', 'state', 'counters', 'calls', 'result',
                 '_source', '_sink', '_decoder', '_pending', '_acc', '_bounds', '_step', '_offset',
                 '__weakref__')

    def __init__(self, *, rank: int, n: int, accumulate: str = "float32",
                 slice_values: int = SLICE_VALUES):
        if isinstance(n, bool) or not isinstance(n, int) or not 1 <= n <= 0xFFFF:
            raise UsageError(f"n must be an integer from 1 to 65535, got {n!r}")
        if isinstance(rank, bool) or not isinstance(rank, int) or not 0 <= rank < n:
            raise UsageError(f"rank must be an integer in [0, {n - 1}], got {rank!r}")
        if accumulate not in ACCUMULATORS:
            raise UsageError(f"accumulate must be one of {sorted(ACCUMULATORS)}, "
                             f"got {accumulate!r}")
        if isinstance(slice_values, bool) or not isinstance(slice_values, int) or \
                slice_values < 1:
            raise UsageError(f"slice_values must be a positive integer, got {slice_values!r}")
        self.rank, self.n, self.accumulate = rank, n, accumulate
        self.slice_values = slice_values
        self.state = RingState.IDLE
        self.counters = RingCounters()
        self.calls = 0                      # calls started so far (the wire's call number)
        self.result: np.ndarray | None = None
        self._source = None                 # streamed: where the rank's own values are read
        self._sink = None                   # streamed: where each slice of the result goes
        # inaemu/sim/native/ringpath.c appends bytes that complete no message to this
        # decoder's buffer itself (and counts them), as receive() would
        self._decoder = StreamDecoder()
        self._pending: deque[Segment] = deque()
        self._acc: np.ndarray | None = None
        self._bounds: list[int] = []
        self._step = 0
        self._offset = 0                    # where in the expected segment the next slice starts

    @property
    def done(self) -> bool:
        return self.state is RingState.DONE

    def hello(self, job: int) -> bytes:
        """The HELLO this rank sends first on its connection to the right (for drivers)."""
        return encode(Hello(job=job, rank=self.rank, n=self.n))

    def start(self, vector, sink=None) -> bytes:
        """Begin a call; returns the bytes for the right neighbour. Streamed (`sink` given):
        `vector` is a source (`size`, `read(first, end)` of float32), and each slice of the
        result goes to `sink(first, float32 values)` (module docstring)."""
        if sink is None:
            values = np.asarray(vector)
            if values.ndim != 1 or values.dtype != np.float32:
                raise UsageError(f"expected a 1-D float32 vector, got {values.dtype} "
                                 f"{values.shape}")
            size = values.size
        else:
            size = getattr(vector, "size", None)
            if isinstance(size, bool) or not isinstance(size, int) or size < 0 or \
                    not callable(getattr(vector, "read", None)):
                raise UsageError("a streamed start needs a source with an integer size and "
                                 f"read(first, end), got {type(vector).__name__}")
        self._source, self._sink = (None, None) if sink is None else (vector, sink)
        if self.n == 1 or size == 0:
            self._transition(RingEvent.START_ALONE)
            self.result = values.copy() if sink is None else None
            if sink is not None:
                for first in range(0, size, self.slice_values):
                    sink(first, self._own(slice(first, min(first + self.slice_values, size)))
                         .astype(np.float32, copy=False))
            self.calls += 1
            return b""
        self._transition(RingEvent.START)
        self.result = None
        self._acc = None if sink is not None else \
            values.astype(ACCUMULATORS[self.accumulate], copy=True)
        self._bounds = segment_bounds(size, self.n)
        self._step = self._offset = 0
        index = self.rank % self.n
        length = self._bounds[index + 1] - self._bounds[index]
        out = []
        for offset in range(0, max(length, 1), self.slice_values):
            target = self._slice(index, offset)
            own = self._own(target) if sink is not None else self._acc[target]
            out.append(self._send(RingKind.REDUCE_SCATTER, 0, index, offset, own))
        return b"".join(out) + self._drain()

    def receive(self, data: bytes) -> bytes:
        """Bytes from the left neighbour; returns the bytes for the right neighbour."""
        self.counters.bytes_received += len(data)
        try:
            messages = self._decoder.feed(data)
        except RingProtocolError:
            self._transition(RingEvent.BAD_MESSAGE)
            raise
        for message in messages:
            if not isinstance(message, Segment):
                self._fail(f"unexpected HELLO from rank {message.rank} in the middle of a run")
            self.counters.messages_received += 1
            self._pending.append(message)
        return self._drain()

    # ---- internals --------------------------------------------------------------------------

    def _transition(self, event: RingEvent) -> None:
        target = RING_TRANSITIONS.get((self.state, event))
        if target is None:
            raise UsageError(f"cannot {event.value} in state {self.state.value}")
        self.state = target

    def _fail(self, reason: str) -> None:
        self._transition(RingEvent.BAD_MESSAGE)
        raise RingProtocolError(f"rank {self.rank}: {reason}")

    def _slice(self, index: int, offset: int) -> slice:
        """Values [offset, offset + slice_values) of segment `index`, within the segment."""
        start = self._bounds[index] + offset
        return slice(start, min(start + self.slice_values, self._bounds[index + 1]))

    def _own(self, target: slice) -> np.ndarray:
        """Streamed: this rank's own values of `target`, read now, in a new array of the
        accumulator's dtype (the sum is made in it)."""
        return self._source.read(target.start, target.stop).astype(
            ACCUMULATORS[self.accumulate], copy=True)

    def _send(self, kind: RingKind, step: int, index: int, offset: int,
              values: np.ndarray) -> bytes:
        message = Segment(kind=kind, call=self.calls, step=step, index=index, offset=offset,
                          values=values)
        data = encode(message)
        self.counters.messages_sent += 1
        self.counters.bytes_sent += len(data)
        return data

    def _expected(self) -> tuple[RingKind, int]:
        if self.state is RingState.REDUCE_SCATTER:
            return RingKind.REDUCE_SCATTER, (self.rank - self._step - 1) % self.n
        return RingKind.ALL_GATHER, (self.rank - self._step) % self.n

    def _drain(self) -> bytes:
        out = []
        while self._pending and self.state in (RingState.REDUCE_SCATTER, RingState.ALL_GATHER):
            out.append(self._apply(self._pending.popleft()))
        return b"".join(out)

    def _apply(self, message: Segment) -> bytes:
        """The next slice from the left: add it in (reduce-scatter) or keep it (all-gather),
        forward it at the next step, and move on to the next slice or step."""
        kind, index = self._expected()
        offset = self._offset
        got = (message.kind, message.call, message.step, message.index, message.offset)
        if got != (kind, self.calls, self._step, index, offset):
            self._fail(f"expected {kind.name} call {self.calls} step {self._step} segment "
                       f"{index} offset {offset}, got {message.kind.name} call {message.call} "
                       f"step {message.step} segment {message.index} offset {message.offset}")
        target = self._slice(index, offset)
        if message.values.size != target.stop - target.start:
            self._fail(f"segment {index} offset {offset} has {message.values.size} values, "
                       f"expected {target.stop - target.start}")
        accumulator = np.dtype(ACCUMULATORS[self.accumulate])
        if message.values.dtype != accumulator:
            self._fail(f"segment {index} is {message.values.dtype}, this ring accumulates in "
                       f"{accumulator}")
        last_step = self._step == self.n - 2
        segment_end = target.stop >= self._bounds[index + 1]
        streamed = self._sink is not None
        if kind is RingKind.REDUCE_SCATTER:
            if streamed:            # own + received: the very addition `_acc[target] +=` makes
                values = self._own(target)
                values += message.values
            else:
                self._acc[target] += message.values
                values = self._acc[target]
            out = self._send(kind, self._step + 1, index, offset, values) if not last_step \
                else self._send(RingKind.ALL_GATHER, 0, index, offset, values)
        else:
            values = message.values
            if not streamed:
                self._acc[target] = values
            out = self._send(kind, self._step + 1, index, offset, values) if not last_step \
                else b""
        if streamed and (last_step or kind is RingKind.ALL_GATHER) and values.size:
            self._sink(target.start, values.astype(np.float32, copy=False))
        if not segment_end:
            self._offset += self.slice_values
            return out
        self._offset = 0
        if not last_step:
            self._step += 1
        elif kind is RingKind.REDUCE_SCATTER:
            self._transition(RingEvent.SCATTER_DONE)
            self._step = 0
        else:
            self._transition(RingEvent.GATHER_DONE)
            self.result = None if streamed else self._acc.astype(np.float32)
            self.calls += 1
            self._acc = self._source = self._sink = None
        return out
