"""One worker's side of in-network aggregation, as a sans-I/O state machine (docs/protocol.md §4–5).

Rules this module keeps (the caller owns sockets and clocks; nothing here reads the time):

* Three inputs: `start(vector, now)`, `receive(payload, now)`, `timeout(now)`. Each returns a
  `Step`: UDP payloads to send to the aggregator, and the time `timeout` should next be called
  (None when nothing is in flight). `now` is any monotonic clock in seconds.
* A float32 call is a MAX round (every worker offers its largest |x|; the switch returns the
  maximum), then the data phase with the agreed scale; `result` is float32. `start_integers`
  sums int32 vectors exactly, without a MAX round (the caller keeps sums in range). The job's
  lane format (int32, int16, int8) and scaling (one scale per call, or per block with
  block maxima agreed one step ahead) are `hosts/ina_codec.py`'s; chunks the switch flagged as
  overflowed are sent again at the safe scale after the first pass (docs/formats.md).
* Chunk positions continue over the life of the session (one session per worker per job):
  position p uses slot p mod pool_size, version (p div pool_size) mod 2. MAX rounds alternate
  versions the same way. At most `window` chunks are in flight, and position p is sent only when
  the result of p - pool_size has arrived.
* Loss detection without a timer (§4.1, RACK-like): results come back in the order the
  contributions were sent, so a result of a chunk sent later than an in-flight one means that
  one is lost; after a reordering allowance (min RTT / 4) the worker sends a header-only QUERY
  (§3.1), answered by the RESULT, by a NACK (then the values are resent), or not at all (the
  worker whose piece is missing resends).
* Every transmission also arms a timer, the last resort (§4.2): the RTO doubled per expiry of
  that chunk, up to rto_max. A silence expires the earliest chunk in flight alone (a probe, RFC
  6298 §5); the others' timers count again once the probe goes unanswered. The first window
  after a MAX round waits for that barrier. Adaptive (the default): RTO and in-flight window
  as `congestion.py` says (RFC 6298 with a 2·SRTT floor, Karn's rule; slow start from
  window/8, halving only on a burst of losses); fixed (`adaptive=False`): `rto` and `window`.
  When the earliest chunk's timer has expired 1 + max_retx times (the MAX round, adaptive:
  once as long has passed as that many uncapped expiries take), `timeout` raises
  PeerUnreachable and the session is FAILED.
* The values travel as numpy arrays end to end (quantized vector → views per chunk → payload
  bytes; payload → big-endian view → slice of the sums): no per-value Python work per packet.
* Loss recovery (timers, RACK-like detection, QUERY/NACK/resend, the window's response) is a
  `ina_recovery.LossRecovery` the session holds, which asks the session's
  `ina_silence.SilenceRules` when a silent chunk's timer really expires. The session owns the
  call's flight table and tells them of each call, the MAX result and each data result;
  both paths' RTO estimators are reached through one `ina_paths.Paths`. The recovery keeps
  its timers in a `timer_heap.TimerHeap` (the constructor's `timer_heap` makes one per call;
  the simulator's native core passes its own, of the same contract, kept in C).
* Input from the network is never fatal: a malformed payload, a packet of another job or
  worker, and a result for a chunk not in flight are counted and ignored.
"""

from __future__ import annotations

from typing import Callable

import numpy as np

from . import quantize as qz
from .ina_codec import FloatCodec
from .congestion import SRTT_FLOOR, InFlightWindow, RtoEstimator
from .errors import PeerUnreachable, UsageError
from .ina_params import check_encoding, check_int, is_seconds
from .ina_paths import Paths
from .ina_recovery import MAX_KEY, RTO_TIMER, LossRecovery
from .ina_silence import SilenceRules
from .ina_state import TRANSITIONS, Counters, Event, Flight, State, Step
from .ina_wire import (FLAG_FORMAT, FLAG_NEXT, FLAG_OVERFLOW, FLAG_RETX, FLAG_VER, HEADER,
                       ChunkEncoder, InaPacket, Kind, WireError, block_fields, check_k,
                       decode_header, decode_values, encode, payload_bytes)
from .timer_heap import TimerHeap


DEFAULT_RTO_MIN = 0.002   # the learnt RTO's floor unless configured (clock granularity)
# "burst": a loss halves the window only when a window's losses exceed the usual random
# fraction (congestion.LossBursts); "every_loss": every loss event (at most one per round
# trip) halves it, what the hosts did before, kept for comparison.
WINDOW_RULES = ("burst", "every_loss")
_RESULT_KINDS = (Kind.RESULT, Kind.MAX_RESULT)
_UNPACK_HEADER = HEADER.unpack_from
_RESULT = int(Kind.RESULT)
_DATA = State.DATA
# the flag bits a RESULT may carry besides its format: ver, retx, overflow (receive's fast path)
_RESULT_FLAGS = FLAG_VER | FLAG_RETX | FLAG_OVERFLOW | FLAG_NEXT
_INF_BITS = 0x7F800000       # float32 +inf: patterns from here on are not finite maxima


SHARING_MODES = ("static", "hashed")
QUERIED_ALLOWANCE_DIVISOR = 4   # up to window/4 queried chunks do not count as in flight


class InaSession:
    """The worker state machine for one (job, worker); reusable for many calls."""

    # (slots: the native core reads and writes them at their offsets, native/attrs.c)
    __slots__ = ('job', 'n', 'worker', 'pool_size', 'window', 'rto', 'rto_max', 'rto_min',
                 'max_retx', 'adaptive', 'fast_retransmit', 'fmt', 'scaling', 'divisor',
                 'window_rule', '_result_bytes', '_format_bits', 'query', 'switch_slots',
                 'sharing', 'rto_estimator', 'host_rto_estimator', 'barrier_estimator',
                 'in_flight_window', 'state', 'counters', '_paths', '_granted', '_silence',
                 '_recovery', 'loss_bursts', 'next_position', 'max_rounds', 'result', 'global_max',
                 'scale', '_codec', '_scratch', '_float_input', '_chunks', '_answered',
                 '_local_max', '_max_offer', '_sums', '_encoder', '_length', '_next_chunk',
                 '_answered_count', '_highest_answered', '_in_flight', '_redoing', 'k',
                 '__weakref__')

    def __init__(self, *, job: int, worker: int, n: int, k: int, pool_size: int, window: int,
                 rto: float, rto_max: float, max_retx: int, rto_min: float | None = None,
                 adaptive: bool = True, fast_retransmit: bool = True,
                 window_rule: str = "burst", query: bool = True, fmt: str = "int32",
                 scaling: str = "job", divisor: int | None = None,
                 switch_slots: int | None = None, sharing: str = "static",
                 timer_heap: Callable[[], TimerHeap] = TimerHeap):
        self.job = check_int("job", job, 0, 0xFFFF)
        self.n = check_int("n", n, 1, qz.MAX_WORKERS)
        self.worker = check_int("worker", worker, 0, n - 1)
        try:
            self.k = check_k(k)
        except ValueError as error:
            raise UsageError(str(error)) from None
        self.pool_size = check_int("pool_size", pool_size, 1, 0xFFFF)
        self.window = check_int("window", window, 1, pool_size)
        if not is_seconds(rto):
            raise UsageError(f"rto must be a positive number of seconds, got {rto!r}")
        if not (is_seconds(rto_max) and rto_max >= rto):
            raise UsageError(f"rto_max must be >= rto ({rto}), got {rto_max!r}")
        rto_min = min(rto, DEFAULT_RTO_MIN) if rto_min is None else rto_min
        if not (is_seconds(rto_min) and rto_min <= rto_max):
            raise UsageError(f"rto_min must be a positive number of seconds <= rto_max "
                             f"({rto_max}), got {rto_min!r}")
        if not isinstance(adaptive, bool):
            raise UsageError(f"adaptive must be a bool, got {adaptive!r}")
        self.rto, self.rto_max, self.rto_min = float(rto), float(rto_max), float(rto_min)
        self.max_retx = check_int("max_retx", max_retx, 0, 1000)
        self.adaptive = adaptive
        if not isinstance(fast_retransmit, bool):
            raise UsageError(f"fast_retransmit must be a bool, got {fast_retransmit!r}")
        if window_rule not in WINDOW_RULES:
            raise UsageError(f"window_rule must be one of {', '.join(WINDOW_RULES)}, "
                             f"got {window_rule!r}")
        if not isinstance(query, bool):
            raise UsageError(f"query must be a bool, got {query!r}")
        self.fast_retransmit = fast_retransmit
        self.fmt, self.scaling, self.divisor = check_encoding(fmt, scaling, divisor, self.n)
        self.window_rule = window_rule
        self._result_bytes = payload_bytes(self.k)
        self._format_bits = qz.FORMAT_CODES[self.fmt] << 2    # flags bits 2-3 of this job
        # early detection sends a header-only QUERY (True) or the values again (False)
        self.query = query
        # Slots below switch_slots are aggregated in the switch, the rest by the job's host
        # aggregator (docs/fallback.md): two paths, each in order, with different round trips,
        # so loss detection (§4.1) compares a chunk only with chunks of its own path.
        self.switch_slots = self.pool_size if switch_slots is None else check_int(
            "switch_slots", switch_slots, 1, self.pool_size)
        # Hashed sharing (docs/protocol.md §3.3): a contribution asks the switch to claim a
        # cell for its slot's next use (flag `next`) when that use is in this call and not in
        # its last window, so that a job between calls holds no cell of the shared pool.
        if sharing not in SHARING_MODES:
            raise UsageError(f"sharing must be one of {', '.join(SHARING_MODES)}, "
                             f"got {sharing!r}")
        self.sharing = sharing
        # Congestion state lives as long as the session: what one call learnt serves the next.
        self.rto_estimator = RtoEstimator(initial=self.rto, minimum=self.rto_min,
                                          maximum=self.rto_max)
        # the host aggregator's slots (docs/fallback.md) have round trips of their own
        self.host_rto_estimator = RtoEstimator(initial=self.rto, minimum=self.rto_min,
                                               maximum=self.rto_max)
        # the delay from the MAX result to a call's first data result (the barrier, §4.2)
        self.barrier_estimator = RtoEstimator(initial=self.rto, minimum=self.rto_min,
                                              maximum=self.rto_max)
        self.in_flight_window = InFlightWindow(self.window)
        self.state = State.IDLE
        self.counters = Counters()
        # Its collaborators: the two paths' RTOs, the silence rules (which own the call's
        # progress marks) and the loss recovery (which owns the timers), each given what it
        # reads; the session tells them of each call (`_reset_call`) and result.
        self._paths = Paths(self.switch_slots, self.rto_estimator, self.host_rto_estimator,
                            self.pool_size)
        # hashed sharing: per slot, whether the latest RESULT said its next use has a cell
        self._granted = bytearray(self.pool_size) if sharing == "hashed" else None
        self._silence = SilenceRules(
            paths=self._paths, counters=self.counters, barrier_estimator=self.barrier_estimator,
            fixed_wait=None if adaptive else min(self.rto, self.rto_max))
        self._recovery = LossRecovery(
            job=self.job, paths=self._paths, silence=self._silence, counters=self.counters,
            in_flight_window=self.in_flight_window, adaptive=adaptive, rto=self.rto,
            rto_min=self.rto_min, rto_max=self.rto_max, max_retx=self.max_retx,
            window=self.window, query=query, window_rule=window_rule, timer_heap=timer_heap)
        self.loss_bursts = self._recovery.loss_bursts
        self.next_position = 0          # position of the next call's chunk 0
        self.max_rounds = 0             # MAX rounds completed (their versions alternate)
        self.result: np.ndarray | None = None
        self.global_max: float | None = None   # M of the last float call
        self.scale: float | None = None
        self._codec: FloatCodec | None = None  # the last float call's (kept for error_bound)
        self._scratch: dict = {}    # memory the calls' codecs reuse (their internal vectors)
        self._reset_call()

    # ---- the three inputs -------------------------------------------------------------------

    def start(self, vector, now: float, sink=None) -> Step:
        """Begin a float32 all-reduce: the MAX round, then the data phase.

        Streamed (`sink` given): `vector` is read a block at a time (`size`, `read(first,
        end)`: a `hosts.gradient_stream.GradientStream`) and each block of the sum goes to
        `sink(first, values)` as its last RESULT arrives; `result` stays None. The call then
        holds what is in flight, not the vector (job scaling, divisor n: FloatCodec)."""
        values = vector if sink is not None else self._checked_float_vector(vector,
                                                                              finite=False)
        if values.size == 0:
            return self._start_empty(np.zeros(0, np.float32))
        try:      # (first: it refuses inf and NaN, in the pass of its block maxima)
            codec = FloatCodec(values, job=self.job, worker=self.worker, n=self.n, k=self.k,
                               pool_size=self.pool_size, fmt=self.fmt, scaling=self.scaling,
                               divisor=self.divisor, first_position=self.next_position,
                               scratch=self._scratch, sink=sink)
        except ValueError as error:
            raise UsageError(str(error)) from None
        self._transition(Event.START)
        self._begin_call(values.size, now)
        self._float_input = values
        self._codec = codec
        self._chunks = self._codec.chunks
        self._answered = bytearray(self._chunks)
        self._local_max = self._codec.local_max
        if self.scaling == "job":
            offer = np.full(self.k, qz.float32_bits(self._local_max), np.int32)
        else:
            offer = self._codec.max_offer()
        packet = InaPacket(kind=Kind.MAX_CONTRIB, job=self.job, worker=self.worker, slot=0,
                           chunk=0, values=offer, ver=self.max_rounds % 2)
        # what any genuine MAX_RESULT is at least, lane by lane (the switch's max, unsigned)
        self._max_offer = offer.astype(np.int64) & 0xFFFFFFFF
        payload = self._send_new(MAX_KEY, encode(packet), packet.slot, packet.ver, now)
        return Step((payload,), self._recovery.next_deadline())

    def start_integers(self, vector, now: float) -> Step:
        """Begin an exact int32 all-reduce (no MAX round; sums wrap modulo 2^32 as the switch)."""
        values = np.asarray(vector)
        if values.ndim != 1 or values.dtype != np.int32:
            raise UsageError(f"expected a 1-D int32 vector, got {values.dtype} {values.shape}")
        if values.size == 0:
            return self._start_empty(np.zeros(0, np.int32))
        self._transition(Event.START_INTEGERS)
        self._begin_call(values.size, now)
        self._codec = None
        self._sums = np.zeros(self._chunks * self.k, dtype=np.int32)   # float calls: the codec's
        self._encoder = self._chunk_encoder(values)
        return Step(tuple(self._fill_window(now)), self._recovery.next_deadline())

    def receive(self, payload: bytes, now: float) -> Step:
        """A UDP payload from the aggregator; never raises for its content."""
        return Step(tuple(self._receive(payload, now)), self._recovery.next_deadline())

    def timeout(self, now: float) -> Step:
        """The timers due at `now` (`LossRecovery.expire`): a reorder timer resends its chunk
        (§4.1); a silence resends the earliest chunk in flight of its path alone, a probe
        backed off per expiry; PeerUnreachable (the session is FAILED) when the earliest is
        spent."""
        if self.state not in (State.MAX_ROUND, State.DATA):
            return Step((), None)
        try:
            out = self._recovery.expire(now)
        except PeerUnreachable:
            self._transition(Event.GIVE_UP)
            raise
        return Step(tuple(out), self._recovery.next_deadline())

    def receive_many(self, payloads, now: float) -> Step:
        """Several payloads that arrived together: the same as `receive` for each in turn
        (the same payloads to send, in the same order; the deadline of the last), with one
        Step and one look at the timers for the whole batch."""
        out: list[bytes] = []
        counters, receive, on_result = self.counters, self._receive, self._on_result
        size, own = self._result_bytes, (self.job, self.worker, self.n)
        format_bits = 0 if self._codec is None else self._format_bits
        fill, answered = self._fill_window, self._answered
        highest, host_of, granted = self._highest_answered, self._paths.host, self._granted
        adaptive, window = self.adaptive, self.in_flight_window
        estimator, host_estimator = self.rto_estimator, self.host_rto_estimator
        codec = self._codec
        # The common RESULT goes through `_on_result`'s steps inline (below): a data chunk
        # sent once, in flight, not the call's last, with no earlier chunk in flight (no loss
        # to look for), stored as is (job scaling, no overflow); anything else through it.
        plain = (codec is not None and self._encoder is codec and self.scaling == "job"
                 and self.timeline is None)
        fast_retransmit = self.fast_retransmit
        progress = self._silence.progress
        for payload in payloads:        # _receive's fast path, inline; the rest through it
            if len(payload) == size and payload[0] == _RESULT:
                _kind, flags, job, worker, pad, slot, chunk, count, bmax = \
                    _UNPACK_HEADER(payload)
                if ((job, worker, count) == own and not pad
                        and not flags & ~(_RESULT_FLAGS | FLAG_FORMAT)
                        and flags & FLAG_FORMAT == format_bits):
                    counters.packets_received += 1
                    counters.bytes_received += size
                    in_flight = self._in_flight
                    flight = in_flight.get(chunk)
                    if (plain and flight is not None and self.state is _DATA
                            and flight.tries == 1 and slot == flight.slot
                            and flags & (FLAG_VER | FLAG_OVERFLOW | FLAG_RETX) == flight.ver
                            and chunk < codec.chunks and self._answered_count + 1 < self._chunks
                            and (not fast_retransmit or next(iter(in_flight)) == chunk)):
                        del in_flight[chunk]
                        progress(now, chunk, flight.last_sent)
                        path = host_of[slot]
                        if granted is not None:
                            granted[slot] = 1 if flags & FLAG_NEXT else 0
                        if chunk > highest[path]:
                            if adaptive:
                                (host_estimator if path else estimator).sample(
                                    now - flight.sent_at)
                            highest[path] = chunk
                        if adaptive and window.size < window.maximum:
                            window.on_result()
                        answered[chunk] = 1
                        self._answered_count += 1
                        codec.store(chunk, payload)
                        out += fill(now)
                        continue
                    out += on_result(chunk, slot, flags & FLAG_VER, payload, now, bmax,
                                     flags & FLAG_OVERFLOW, flags & FLAG_RETX)
                else:
                    out += receive(payload, now)
            else:
                out += receive(payload, now)
            # (the general path may have ended the call or changed its state)
            answered, highest, codec = self._answered, self._highest_answered, self._codec
            plain = (codec is not None and self._encoder is codec and self.scaling == "job"
                     and self.timeline is None)
        return Step(tuple(out), self._recovery.next_deadline())

    def _receive(self, payload: bytes, now: float) -> list[bytes]:
        """One payload in, the payloads to send out."""
        counters = self.counters
        counters.packets_received += 1
        size = len(payload)
        counters.bytes_received += size
        if size == self._result_bytes and payload[0] == Kind.RESULT:
            # The common case in one go: a well-formed RESULT of this job, worker, count and
            # lane format. Anything else takes the full checks below (the same verdicts).
            _kind, flags, job, worker, pad, slot, chunk, count, bmax = _UNPACK_HEADER(payload)
            if (job == self.job and worker == self.worker and count == self.n and not pad
                    and not flags & ~(_RESULT_FLAGS | FLAG_FORMAT)
                    and flags & FLAG_FORMAT == (0 if self._codec is None
                                                else self._format_bits)):
                return self._on_result(chunk, slot, flags & FLAG_VER, payload, now,
                                       bmax, flags & FLAG_OVERFLOW, flags & FLAG_RETX)
        try:
            kind, job, worker, slot, chunk, ver, retx, count = decode_header(payload, self.k)
        except WireError:
            counters.malformed_ignored += 1
            return []
        if job != self.job or worker != self.worker:
            counters.foreign_ignored += 1
            return []
        if kind is Kind.NACK:
            if self.state is not State.DATA:
                counters.duplicates_ignored += 1
                return []
            return self._recovery.on_nack(chunk, slot, ver, now)
        if kind not in _RESULT_KINDS:
            counters.foreign_ignored += 1
            return []
        if count != self.n:
            counters.malformed_ignored += 1
            return []
        if kind is Kind.MAX_RESULT:
            return self._on_max_result(ver, decode_values(payload), now, retx)
        bmax, fmt, overflow = block_fields(payload)
        if fmt != (0 if self._codec is None else self._codec.format_code):
            counters.malformed_ignored += 1     # another lane format than this job's
            return []
        return self._on_result(chunk, slot, ver, payload, now, bmax, overflow, retx)

    # ---- what the caller reads --------------------------------------------------------------

    @property
    def done(self) -> bool:
        return self.state is State.DONE

    @property
    def timeline(self) -> list | None:
        """(time, event, chunk) for every send, retransmission and result when a list
        (scripts/loss_timeline.py; set it to [] to record); None: nothing is recorded."""
        return self._recovery.timeline

    @timeline.setter
    def timeline(self, value: list | None) -> None:
        self._recovery.timeline = value

    @property
    def current_rto(self) -> float:
        """What a chunk sent now would wait for its result before being resent."""
        return self.rto_estimator.rto if self.adaptive else self.rto

    @property
    def in_flight(self) -> int:
        """Chunks (or the MAX round's packet) sent and not yet answered."""
        return len(self._in_flight)

    @property
    def current_window(self) -> int:
        """Chunks this session may have in flight now."""
        return self._recovery.current_window

    def error_bound(self) -> np.ndarray:
        """Per-element bound on |result - exact sum| of the last float call (§5)."""
        return self.error_bound_later()()

    def error_bound_later(self):
        """`error_bound` of the last float call as a function to call when it is needed, even
        after further calls (a 16 MiB call's bound is 32 MiB of float64: a caller that may
        never read it need not build it between calls)."""
        if self.state is not State.DONE or self.result is None or self.result.dtype != np.float32:
            raise UsageError("error_bound needs a finished float32 call")
        codec, result, global_max, n = self._codec, self.result, self.global_max, self.n
        if codec is None:
            return lambda: qz.error_bound(global_max or 0.0, n, result)
        return lambda: codec.error_bound(result)

    # ---- internals --------------------------------------------------------------------------

    def _transition(self, event: Event) -> None:
        target = TRANSITIONS.get((self.state, event))
        if target is None:
            raise UsageError(f"cannot {event.value} in state {self.state.value}")
        self.state = target

    def _checked_float_vector(self, vector, finite: bool = True) -> np.ndarray:
        try:
            return qz.as_float32_vector(vector, finite=finite)
        except ValueError as error:
            raise UsageError(str(error)) from None

    def _reset_call(self) -> None:
        self._length = 0
        self._chunks = 0
        self._next_chunk = 0
        self._answered = bytearray()
        self._answered_count = 0
        self._highest_answered = [-1, -1]   # per path (switch, host): the latest answered
        self._in_flight: dict[int, Flight] = {}
        self._recovery.new_call(self._in_flight)  # its timers and queries: this call's
        self._silence.new_call()                  # its progress marks and barrier: this call's
        self._float_input: np.ndarray | None = None
        self._encoder: ChunkEncoder | FloatCodec | None = None
        self._redoing = False                 # the pass that resends overflowed chunks
        self._sums: np.ndarray | None = None
        self._local_max = 0.0
        self._max_offer = np.zeros(0, np.int64)

    def _begin_call(self, length: int, now: float) -> None:
        self._reset_call()
        self.result, self.global_max, self.scale = None, None, None
        self._length = length
        self._chunks = -(-length // self.k)
        self._answered = bytearray(self._chunks)

    def _start_empty(self, result: np.ndarray) -> Step:
        self._transition(Event.START_EMPTY)
        self._reset_call()
        self.result, self.global_max, self.scale = result, 0.0, None
        self._codec = None
        return Step((), None)

    def _chunk_encoder(self, quantized: np.ndarray) -> ChunkEncoder:
        """The call's contributions: the int32 vector padded with zeros to whole chunks."""
        padded = np.zeros(self._chunks * self.k, dtype=np.int32)
        padded[:self._length] = quantized
        return ChunkEncoder(job=self.job, worker=self.worker, k=self.k, vector=padded)

    def _fill_window(self, now: float) -> list[bytes]:
        """Send new chunks while the window and the pool allow (the per-chunk path: kept to
        plain arithmetic on locals; `_send_new` and `LossRecovery.arm` do the same for one
        chunk, on the recovery's timer heap, congestion serials and loss-burst counts)."""
        window = self.in_flight_window.size if self.adaptive else self.window
        # A chunk whose latest transmission is a 16-byte QUERY holds no frame of values in
        # any queue: up to window/4 of them do not count against the window, so a few losses
        # waiting for their NACK do not starve the link. Not more: the switch pays per packet,
        # and at window/2 a star of 32 overflowed its input queue (docs/loss.md).
        recovery = self._recovery
        queried = recovery.queried
        if queried:
            window += min(queried, window // QUERIED_ALLOWANCE_DIVISOR)
        in_flight = self._in_flight
        c, chunks, pool = self._next_chunk, self._chunks, self.pool_size
        out: list[bytes] = []
        if c >= chunks:       # the tail: every chunk sent; its probe restarts on each result
            recovery.tail = True
            recovery.probe_tail(now)
            return out
        recovery.tail = False     # (an overflow redo pass adds chunks after a tail)
        room = window - len(in_flight)            # the loop below is all that adds to it
        if room <= 0:
            return out
        encoder = self._encoder
        answered, contribution = self._answered, encoder.contribution
        # job scaling: the payloads are rows of one table (slices of it, no method call),
        # those of the chunks quantized so far; the codec quantizes the next block on demand
        table, size, base, ready = encoder.table_rows()
        timers, timeline = recovery.timers, recovery.timeline
        events, bursts = recovery.events, recovery.loss_bursts
        bursts_window = self.in_flight_window.size
        if self.adaptive:    # a first transmission waits its path's RTO (timer(1))
            switch_wait = self.rto_estimator.first_timer
            host_wait = self.host_rto_estimator.first_timer
        else:
            switch_wait = host_wait = min(self.rto, self.rto_max)
        host_of, granted = self._paths.host, self._granted
        position = self.next_position + c
        first, sent_bytes = c, 0
        # hashed sharing: chunks below this ask for their slot's next use (`next`)
        claim_below = chunks - 2 * pool if self.sharing == "hashed" else 0
        while c < chunks and room > 0 and (c < pool or answered[c - pool]):
            slot, ver = position % pool, (position // pool) % 2
            if c < ready:
                payload = table[(c - base) * size:(c - base + 1) * size].tobytes()
            else:
                payload = contribution(c, slot, ver)
                table, size, base, ready = encoder.table_rows()
            if c < claim_below:
                payload = payload[:1] + bytes((payload[1] | FLAG_NEXT,)) + payload[2:]
            if granted is not None:      # hashed: in the switch only if its cell was claimed
                host_of[slot] = 0 if pool <= c < chunks - pool and granted[slot] else 1
            wait = host_wait if host_of[slot] else switch_wait
            events.serial += 1                   # CongestionEvents.transmitted()
            deadline = now + wait
            in_flight[c] = Flight(payload, slot, ver, 1, deadline, now, events.serial, now,
                                   wait)
            bursts._sent += 1                    # LossBursts.transmitted(bursts_window)
            if bursts._sent >= bursts_window:
                bursts.window_ends()
            timers.push(deadline, c, 1, RTO_TIMER)
            sent_bytes += len(payload)
            if timeline is not None:
                timeline.append((now, "send", c))
            out.append(payload)
            c += 1
            room -= 1
            position += 1
        self._next_chunk = c
        counters = self.counters
        counters.packets_sent += c - first
        counters.bytes_sent += sent_bytes
        if c >= chunks:
            recovery.tail = True
            recovery.probe_tail(now)
        return out

    def _send_new(self, key: int, payload: bytes, slot: int, ver: int, now: float) -> bytes:
        flight = Flight(payload, slot, ver, 1, 0.0, now)
        self._in_flight[key] = flight
        self._recovery.arm(key, flight, now)
        self._count_sent(payload)
        if self.timeline is not None:
            self.timeline.append((now, "send", key))
        return payload

    def _count_sent(self, payload: bytes) -> None:
        self.counters.packets_sent += 1
        self.counters.bytes_sent += len(payload)

    def _on_max_result(self, ver: int, values: np.ndarray, now: float,
                       retx: int) -> list[bytes]:
        if (self.state is not State.MAX_ROUND or ver != self.max_rounds % 2
                or MAX_KEY not in self._in_flight):
            self.counters.duplicates_ignored += 1
            return []
        patterns = values.astype(np.int64) & 0xFFFFFFFF    # unsigned, as the switch
        # The lane-wise maximum over every worker's offer (finite, non-negative floats, whose
        # bit patterns order as the floats do) is at least this worker's offer in every lane,
        # finite, and largest in lane 0 (the global max bounds every block max). Anything else
        # cannot be the maximum over all workers, and would make the scale miss the values
        # (the codec quantizes with lane 0 and the block lanes).
        if (patterns.size != self._max_offer.size or patterns.max() >= _INF_BITS
                or patterns[0] < patterns.max() or (patterns < self._max_offer).any()):
            self.counters.malformed_ignored += 1
            return []
        global_max = qz.float32_from_bits(int(patterns[0]))
        flight = self._in_flight.pop(MAX_KEY)
        # The barrier's round trip: from the first send, unless the round waited for a
        # recovery: the result has retx (a retransmitted piece somewhere, or an answer to a
        # duplicate) and this worker's first probe went unanswered too (its second expiry,
        # as the silence rules judge a probe: one expiry may be a slow round, a queue or a
        # late start, which the whole wait measures). Then the wait also held the round's
        # probe intervals (2, 4, 8 ms ... from rto_min, this worker's or another's), and the
        # round trip counts from the latest copy (Karn's rule: the result may answer either),
        # not below rto_min, the probes' resolution (sooner than that after the latest copy,
        # the result was already on its way). At 10 % loss on the 16-worker fat-tree the probe
        # intervals made the first RTO 15-31 ms against a 2 ms path, which with few clean RTT
        # samples at such loss paced the call; a star of 32 at 1 % loss, whose results came
        # 0.3 ms after one probe at 2 ms, needs the whole wait: its first window queues at the
        # switch (docs/loss.md, "Trees, third round"; tests/sim/test_hosts_adaptive.py).
        round_trip = now - flight.sent_at
        if retx and flight.expiries >= 2:
            round_trip = max(now - flight.last_sent, self.rto_min)
        if self.adaptive and self.rto_estimator.srtt is None:
            # No RTT sample yet: the barrier's round trip bounds the path's from above (it
            # also holds the wait for the last worker), so the data's first timers wait
            # twice that, not the configured rto, when it is shorter.
            self.rto_estimator.initial = min(self.rto, max(SRTT_FLOOR * round_trip,
                                                           self.rto_min))
            self.host_rto_estimator.initial = self.rto_estimator.initial
        if self.adaptive:
            self._silence.scale_agreed(now, round_trip)
        self.max_rounds += 1
        self.global_max = global_max
        self._codec.on_max(patterns)
        self.scale = self._codec.scale if self.scaling == "job" else None
        self._encoder = self._codec
        self._transition(Event.SCALE_AGREED)
        return self._fill_window(now)

    def _on_result(self, c: int, slot: int, ver: int, payload: bytes, now: float,
                   bmax: int, overflow: int, retx: int = 0) -> list[bytes]:
        """The RESULT of transmission c (`bmax`, `overflow` and `retx`: its header's block max
        and flags). Runs for every chunk: locals and inline arithmetic."""
        flight = self._in_flight.get(c) if self.state is State.DATA else None
        if flight is None or slot != flight.slot or ver != flight.ver:
            self.counters.duplicates_ignored += 1
            return []
        del self._in_flight[c]
        if flight.queried:
            self._recovery.set_queried(flight, False)
        self._silence.progress(now, c, flight.last_sent)
        if self.timeline is not None:
            self.timeline.append((now, "result", c))
        path = self._paths.host[slot]
        if self._granted is not None:
            self._granted[slot] = 1 if payload[1] & FLAG_NEXT else 0
        highest = self._highest_answered
        if self.adaptive:
            # Karn: a resent chunk's result could answer either copy. A result overtaken by a
            # later chunk's, or one the switch marks retx (its cell, at some tier, took a
            # retransmitted piece, or it answers a duplicate or query: §3), waited for a
            # recovery, this worker's or another's: not a path delay.
            if c > highest[path] and not retx:
                estimator = self.host_rto_estimator if path else self.rto_estimator
                if flight.tries == 1:
                    estimator.sample(now - flight.sent_at)
                elif self._recovery.spurious_timeout(flight, now):
                    # No round trip fits since the timer's copy: the result answers the first
                    # copy, an unambiguous sample of a round trip the RTO was too short for
                    # (a stalled switch process, not loss). Karn's rule would learn nothing.
                    self.counters.spurious_timeouts += 1
                    estimator.sample(now - flight.sent_at)
            window = self.in_flight_window
            if window.size < window.maximum:       # (on_result does nothing at the maximum)
                window.on_result()
        if c > highest[path]:
            highest[path] = c
        self._answered[c] = 1
        self._answered_count += 1
        codec = self._codec
        if self._encoder is codec:
            if overflow or self.scaling != "job" or c >= codec.chunks:
                codec.on_result(c, payload, bmax, bool(overflow))
            else:
                codec.store(c, payload)            # on_result's whole work in this case
        else:
            self._sums[c * self.k:(c + 1) * self.k] = decode_values(payload)
        if self._answered_count == self._chunks and self._encoder is codec \
                and not self._redoing:
            self._redoing = True
            redo = codec.end_of_pass()
            if redo:   # every worker saw the same flags: the same extra chunks, in order
                self.counters.overflow_redos += redo
                self._chunks += redo
                self._answered.extend(bytes(redo))
        if self._answered_count < self._chunks:
            in_flight = self._in_flight
            # §4.1 looks at chunks sent before c still in flight; in_flight is in first-send
            # (= chunk) order, so its first key says whether there is any.
            if self.fast_retransmit and in_flight and next(iter(in_flight)) < c:
                return (self._recovery.detect_losses(c, flight, now)
                        + self._fill_window(now))
            return self._fill_window(now)
        self._finish()
        return []

    def _finish(self) -> None:
        if self._codec is not None:
            self.result = self._codec.result()
            self._codec.release()
        else:
            self.result = self._sums[:self._length].copy()
        self.next_position += self._chunks
        self._transition(Event.LAST_RESULT)
        self._reset_call()
