"""When a silent chunk's retransmission timer really expires (docs/protocol.md §4.2): the
silence rules of an InaSession, an object its loss recovery (hosts/ina_recovery.py) asks.

Why they exist: a process descheduled for a few ms on a busy machine silences every chunk in
flight at once; resending them all (thousands of needless values per call) is what these rules
prevent. A silence is probed with the earliest chunk alone (RFC 6298 §5); the others' timers
count again only once the probe goes unanswered or losses are common; the earliest's timer
restarts on progress; the first window after a MAX round waits for that barrier.

`SilenceRules` owns what only these rules read: the call's progress marks (when the latest
data result came, which chunk it answered and when that transmission was made) and the
barrier's start. The session tells it of each call (`new_call`), of the MAX result
(`scale_agreed`) and of each data result (`progress`); the recovery asks `expiry`.
"""

from __future__ import annotations

from .congestion import RtoEstimator
from .ina_paths import Paths
from .ina_state import Counters, Flight

HEAD_EXPIRIES_FIRST = 2         # the earliest chunk's expiries before the others' timers count
# A silence is probed with the earliest chunk alone only while the usual losses of a window
# (the session's loss events per packet sent, times the window) stay below this: with more,
# the other chunks in flight hold losses of their own, and each chunk's timer counts as soon
# as it expires. (Over the session, not congestion.LossBursts' short EWMA: there a few stalls
# in a row looked like heavy loss, and the whole windows they then resent kept it so.)
# Rare means measured: before the session's first data result no loss can have been found
# (losses are found from results), so 0 losses per packet sent says nothing, and every chunk's
# timer counts as soon as it expires (issue 32: on the 16-worker fat-tree at 10 % loss nearly
# every chunk of the first window loses a piece; probing the earliest alone held the rest for
# three RTOs at the start of every job).
PROBE_LOSSES = 1.0


class SilenceRules:
    """The silence rules of one session, with the progress marks of its current call.

    Given at construction and only read: the session's `paths` (each slot's path and RTO),
    its traffic `counters` (how common losses are), the `barrier_estimator` (how long the first
    result of a call takes after the MAX result; sampled here) and `fixed_wait`, the probe's
    wait when the RTO is fixed (None: adaptive, the path's learnt first timer)."""

    # (slots: the native core reads and writes them at their offsets, native/attrs.c)
    __slots__ = ('paths', 'counters', 'barrier_estimator', 'fixed_wait', 'data_results',
                 'last_progress', 'last_progress_sent', 'last_progress_chunk', 'data_start',
                 'max_round_trip')

    def __init__(self, *, paths: Paths, counters: Counters, barrier_estimator: RtoEstimator,
                 fixed_wait: float | None):
        self.paths = paths
        self.counters = counters
        self.barrier_estimator = barrier_estimator
        self.fixed_wait = fixed_wait
        self.data_results = 0   # of the session: losses are found from them (none: unmeasured)
        self.new_call()

    # ---- what the session tells ------------------------------------------------------------

    def new_call(self) -> None:
        """A call begins (or ended): no progress yet, no barrier."""
        self.last_progress = float("-inf")   # when the latest data result arrived
        self.last_progress_sent = 0.0        # when the transmission it answered was made
        self.last_progress_chunk = -1        # and its chunk (-1: no result yet in this call)
        self.data_start: float | None = None  # adaptive float call: when the MAX result came
        self.max_round_trip = 0.0            # and how long after the MAX contribution's send

    def scale_agreed(self, now: float, round_trip: float) -> None:
        """The MAX result came at `now`, `round_trip` after the MAX contribution was sent: the
        data phase's first window waits for this barrier (adaptive sessions)."""
        self.data_start, self.max_round_trip = now, round_trip

    def progress(self, now: float, chunk: int, sent: float) -> None:
        """A data result for `chunk` arrived at `now`, answering its transmission of `sent`."""
        if self.last_progress_chunk < 0 and self.data_start is not None:
            # the call's first result, of any copy: how long the barrier held the data phase
            self.barrier_estimator.sample(now - self.data_start)
        self.data_results += 1
        self.last_progress = now
        self.last_progress_sent = sent
        self.last_progress_chunk = chunk

    # ---- what the recovery asks ------------------------------------------------------------

    def expiry(self, key: int, flight: Flight, deadline: float, now: float, in_flight: dict,
               heads: list, window: int) -> tuple[float, bool]:
        """When the retransmission timer of data chunk `key`, due at `deadline`, really expires
        (a time <= `now`: now), and whether the chunk is its path's earliest in flight.
        `in_flight` is the call's flight table (first-send order), `window` the session's
        current window; `heads` caches each path's earliest for one `timeout` (nothing leaves
        the flight in it: the caller makes it [None, None])."""
        path_of = self.paths.path
        path = path_of(flight.slot)
        head = heads[path]
        if head is None:
            head = heads[path] = next(k for k, f in in_flight.items()
                                      if path_of(f.slot) == path)
        counters = self.counters
        if (key != head and self.data_results
                and counters.loss_events * window < PROBE_LOSSES * counters.packets_sent):
            first = in_flight[head]
            if first.expiries < HEAD_EXPIRIES_FIRST and (
                    first.expiries or self.last_progress_chunk < 0
                    or first.last_sent <= self.last_progress):
                # Losses are rare and the silence covers the earliest chunk too (nothing sent
                # for it since the latest result; a process descheduled is more likely than a
                # lost window): the earliest, when its own timer expires, is resent alone.
                # Only when that probe goes unanswered do the others' own timers count again
                # (a piece of theirs may be this worker's, which no other worker can resend).
                # Look again when the probe expires, or in one RTO (not this chunk's own
                # backed-off wait).
                again = now + (self.paths.estimator(flight.slot).first_timer
                               if self.fixed_wait is None else self.fixed_wait)
                return (first.deadline if now < first.deadline < again else again), False
        return self._due(key, flight, deadline, key == head), key == head

    def _due(self, key: int, flight: Flight, deadline: float, head: bool) -> float:
        """The chunk's timer, due at `deadline`, with the silence rules of §4.2 applied."""
        # As TCP restarts its RTO on an ACK of new data, the earliest chunk's timer counts the
        # silence since the latest result of an earlier chunk; any chunk's, since the latest
        # result of a transmission made before its own. (Results of later transmissions are
        # early detection's evidence: they restart nothing.)
        if (head and self.last_progress_chunk < key
                or self.last_progress_sent <= flight.last_sent):
            restart = self.last_progress + flight.wait
            if restart > deadline:
                deadline = restart
        if self.data_start is not None and flight.expiries == 0 and self.last_progress_chunk < 0:
            # The first window after the MAX round, a barrier: no result before the slowest
            # worker has quantized its vector and sent.
            barrier = self.data_start + self._barrier_wait()
            if barrier > deadline:
                deadline = barrier
        return deadline

    def _barrier_wait(self) -> float:
        """How long after the MAX result the first data result may take: the MAX round's own
        round trip, and what the first results of the calls before took (an RTO of them)."""
        wait = self.max_round_trip
        if self.barrier_estimator.samples and self.barrier_estimator.rto > wait:
            wait = self.barrier_estimator.rto
        return wait
