"""Loss recovery of InaSession (docs/protocol.md §4.1-4.2), kept apart from its packet handling:
the per-transmission timers, the RACK-like detection of a lost chunk from a later result, the
QUERY / NACK / resend choices and the window's response to a loss.

Every transmission arms a timer on the session's heap, `(deadline, key, tries, kind)`: an RTO
timer, or a reorder timer for a chunk a later result showed missing. A heap entry whose chunk
was answered or sent again since is stale and skipped when it comes up. `timeout(now)` is the
session's third input (beside `start` and `receive`); the silence rules that postpone an RTO
expiry are `ina_silence.SilenceRules`'.
"""

from __future__ import annotations

import heapq

from .errors import PeerUnreachable
from .ina_state import Event, Flight, State, Step
from .ina_wire import query_for, with_retx

MAX_KEY = -1                    # the in-flight key of the MAX round's packet
RTO_TIMER, REORDER_TIMER = 0, 1  # timer kinds
REORDER_FRACTION = 0.25         # the reordering allowance, as a fraction of the min RTT


class LossRecovery:
    """Mixed into InaSession: reads and arms its flights, timers, estimators and counters."""

    def timeout(self, now: float) -> Step:
        """The timers due at `now`: a reorder timer resends its chunk (§4.1); a silence resends
        the earliest chunk in flight of its path alone, a probe backed off per expiry (RFC 6298
        §5; the others wait on it, `_postponed`); PeerUnreachable when the earliest is spent."""
        if self.state not in (State.MAX_ROUND, State.DATA):
            return Step((), None)
        out = []
        timers, heads = self._timers, [None, None]
        while timers and timers[0][0] <= now:
            deadline, key, tries, kind = heapq.heappop(timers)
            flight = self._in_flight.get(key)
            if flight is None or flight.tries != tries:
                continue            # answered, or rescheduled since
            if kind == REORDER_TIMER:
                if flight.suspect:
                    out.append(self._resend(key, flight, now, early=True))
                continue
            head = True
            if key != MAX_KEY:
                later, head = self._postponed(key, flight, deadline, now, heads)
                if later > now:
                    flight.deadline = later
                    heapq.heappush(timers, (later, key, tries, RTO_TIMER))
                    continue
            if head and flight.expiries >= self.max_retx:
                self._transition(Event.GIVE_UP)
                raise PeerUnreachable(job=self.job, slot=flight.slot,
                                      chunk=None if key == MAX_KEY else key, tries=flight.tries)
            flight.expiries += 1
            out.append(self._resend(key, flight, now, early=False))
        return Step(tuple(out), self._next_deadline())

    def _resend(self, key: int, flight: Flight, now: float, *, early: bool) -> bytes:
        """Retransmit a chunk (early: a later result showed it lost; else its timer expired)."""
        # A loss of a data chunk: is it congestion? The MAX round is a barrier (a
        # late worker delays it): its expiries say nothing about the network.
        if self.adaptive and key != MAX_KEY:
            self.counters.loss_events += 1
            self._on_loss(flight)
        flight.tries += 1
        flight.suspect = False
        self._arm(key, flight, now)
        # Early, a QUERY: most late chunks miss another worker's piece or a result, not ours.
        self._set_queried(flight, early and self.query and key != MAX_KEY)
        payload = query_for(flight.payload) if flight.queried else with_retx(flight.payload)
        self.counters.retransmissions += 1
        if early:
            self.counters.fast_retransmissions += 1
        else:
            self.counters.timer_retransmissions += 1
        self._count_sent(payload)
        if self.timeline is not None:
            self.timeline.append((now, "fast" if early else "timer", key))
        return payload

    def _spurious_timeout(self, flight: Flight, now: float) -> bool:
        """The chunk's one retransmission was its timer's, and the result came back sooner
        than any round trip seen: it answers the first copy."""
        min_rtt = self._estimator(flight.slot).min_rtt
        return (flight.tries == 2 and flight.expiries == 1 and min_rtt is not None
                and now - flight.last_sent < min_rtt)

    def _set_queried(self, flight: Flight, queried: bool) -> None:
        self._queried += int(queried) - int(flight.queried)
        flight.queried = queried

    def _on_nack(self, c: int, slot: int, ver: int, now: float) -> list[bytes]:
        """The switch lacks this worker's piece of chunk c: resend the values, once per QUERY
        (a later transmission of the values already answers any other NACK)."""
        flight = self._in_flight.get(c) if self.state is State.DATA else None
        if flight is None or slot != flight.slot or ver != flight.ver or not flight.queried:
            self.counters.duplicates_ignored += 1
            return []
        self._set_queried(flight, False)
        flight.tries += 1
        self._arm(c, flight, now)
        payload = with_retx(flight.payload)
        self.counters.retransmissions += 1
        self.counters.nack_retransmissions += 1
        self._count_sent(payload)
        if self.timeline is not None:
            self.timeline.append((now, "nack", c))
        return [payload]

    def _arm(self, key: int, flight: Flight, now: float) -> None:
        if not self.adaptive:
            wait = min(self.rto * 2.0 ** flight.expiries, self.rto_max)
        elif key == MAX_KEY:
            # A barrier: the first worker waits for the last to start. Probe from rto_min.
            wait = min(self.rto_min * 2.0 ** flight.expiries, self.rto_max)
        else:
            wait = self._estimator(flight.slot).timer(flight.expiries + 1)
        flight.serial = self._events.transmitted()
        if key != MAX_KEY:
            self.loss_bursts.transmitted(self.in_flight_window.size)
        flight.last_sent = now
        flight.wait = wait
        flight.deadline = now + wait
        heapq.heappush(self._timers, (flight.deadline, key, flight.tries, RTO_TIMER))

    def _next_deadline(self) -> float | None:
        while self._timers:
            deadline, key, tries, kind = self._timers[0]
            flight = self._in_flight.get(key)
            if (flight is not None and flight.tries == tries
                    and (kind == RTO_TIMER or flight.suspect)):
                return deadline
            heapq.heappop(self._timers)
        return None

    def _on_loss(self, flight: Flight) -> None:
        """A data chunk's transmission was lost (detected early or by its timer)."""
        if self.window_rule == "every_loss":
            if self._events.expired(flight.serial):     # once per round trip
                self._halve_window()
        elif (self.loss_bursts.lost(self.in_flight_window.size)
              and self._events.expired(flight.serial)):   # sent after the last halving
            self._halve_window()

    def _halve_window(self) -> None:
        self.counters.congestion_events += 1
        self.in_flight_window.on_timeout()

    def _detect_losses(self, chunk: int, answered: Flight, now: float) -> list[bytes]:
        """The result of `chunk` arrived (docs/protocol.md §4.1). Every worker sends its first
        copies in chunk order and links are FIFO, so an earlier chunk still in flight and sent
        once is lost; one already resent is lost if `chunk` was first sent after that resend.
        A lost chunk is resent once it is overdue by the reordering allowance (RACK's rule:
        its send time plus the answered chunk's RTT), else it gets a reorder timer."""
        rtt = now - answered.last_sent
        allowance = REORDER_FRACTION * (self._estimator(answered.slot).min_rtt or 0.0)
        out = []
        path = self._path(answered.slot)
        for key, flight in list(self._in_flight.items()):    # in first-send (= chunk) order
            if key >= chunk:
                break
            if self._path(flight.slot) != path:
                continue           # the other path's order says nothing about this one
            if flight.suspect or (flight.tries > 1 and flight.last_sent >= answered.last_sent):
                continue
            due = flight.last_sent + rtt + allowance
            if due <= now:
                out.append(self._resend(key, flight, now, early=True))
            else:
                flight.suspect = True
                heapq.heappush(self._timers, (due, key, flight.tries, REORDER_TIMER))
        return out
