"""When a silent chunk's retransmission timer really expires (docs/protocol.md §4.2): the
silence rules of InaSession, kept apart from its packet handling.

Why they exist: a process descheduled for a few ms on a busy machine silences every chunk in
flight at once; resending them all (thousands of needless values per call) is what these rules
prevent. A silence is probed with the earliest chunk alone (RFC 6298 §5); the others' timers
count again only once the probe goes unanswered or losses are common; the earliest's timer
restarts on progress; the first window after a MAX round waits for that barrier.
"""

from __future__ import annotations

from .ina_state import Flight

HEAD_EXPIRIES_FIRST = 2         # the earliest chunk's expiries before the others' timers count
# A silence is probed with the earliest chunk alone only while the usual losses of a window
# (the session's loss events per packet sent, times the window) stay below this: with more,
# the other chunks in flight hold losses of their own, and each chunk's timer counts as soon
# as it expires. (Over the session, not congestion.LossBursts' short EWMA: there a few stalls
# in a row looked like heavy loss, and the whole windows they then resent kept it so.)
PROBE_LOSSES = 1.0


class SilenceRules:
    """Mixed into InaSession: reads its flight, counters, estimators and progress marks."""

    def _postponed(self, key: int, flight: Flight, deadline: float, now: float,
                   heads: list) -> tuple[float, bool]:
        """When the retransmission timer of data chunk `key`, due at `deadline`, really expires
        (a time <= `now`: now), and whether the chunk is its path's earliest in flight. `heads`
        caches each path's earliest for one `timeout` (nothing leaves the flight in it)."""
        path = self._path(flight.slot)
        head = heads[path]
        if head is None:
            head = heads[path] = next(k for k, f in self._in_flight.items()
                                      if self._path(f.slot) == path)
        counters = self.counters
        if (key != head and counters.loss_events * self.current_window
                < PROBE_LOSSES * counters.packets_sent):
            first = self._in_flight[head]
            if first.expiries < HEAD_EXPIRIES_FIRST and (
                    first.expiries or not self._answered_count
                    or first.last_sent <= self._last_progress):
                # Losses are rare and the silence covers the earliest chunk too (nothing sent
                # for it since the latest result; a process descheduled is more likely than a
                # lost window): the earliest, when its own timer expires, is resent alone.
                # Only when that probe goes unanswered do the others' own timers count again
                # (a piece of theirs may be this worker's, which no other worker can resend).
                # Look again when the probe expires, or in one RTO (not this chunk's own
                # backed-off wait).
                again = now + (self._estimator(flight.slot).first_timer if self.adaptive
                               else min(self.rto, self.rto_max))
                return (first.deadline if now < first.deadline < again else again), False
        return self._due(key, flight, deadline, key == head), key == head

    def _due(self, key: int, flight: Flight, deadline: float, head: bool) -> float:
        """The chunk's timer, due at `deadline`, with the silence rules of §4.2 applied."""
        # As TCP restarts its RTO on an ACK of new data, the earliest chunk's timer counts the
        # silence since the latest result of an earlier chunk; any chunk's, since the latest
        # result of a transmission made before its own. (Results of later transmissions are
        # early detection's evidence: they restart nothing.)
        if (head and self._last_progress_chunk < key
                or self._last_progress_sent <= flight.last_sent):
            restart = self._last_progress + flight.wait
            if restart > deadline:
                deadline = restart
        if self._data_start is not None and flight.expiries == 0 and not self._answered_count:
            # The first window after the MAX round, a barrier: no result before the slowest
            # worker has quantized its vector and sent.
            barrier = self._data_start + self._barrier_wait()
            if barrier > deadline:
                deadline = barrier
        return deadline

    def _barrier_wait(self) -> float:
        """How long after the MAX result the first data result may take: the MAX round's own
        round trip, and what the first results of the calls before took (an RTO of them)."""
        wait = self._max_round_trip
        if self.barrier_estimator.samples and self.barrier_estimator.rto > wait:
            wait = self.barrier_estimator.rto
        return wait
