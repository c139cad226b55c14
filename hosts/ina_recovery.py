"""Loss recovery of an InaSession (docs/protocol.md §4.1-4.2), an object the session holds: the
per-transmission timers, the RACK-like detection of a lost chunk from a later result, the
QUERY / NACK / resend choices and the window's response to a loss.

Every transmission arms a timer on the recovery's heap, `(deadline, key, tries, kind)`: an RTO
timer, or a reorder timer for a chunk a later result showed missing. A heap entry whose chunk
was answered or sent again since is stale and skipped when it comes up. The session's third
input, `timeout(now)`, is `expire` here; the silence rules that postpone an RTO expiry are a
`ina_silence.SilenceRules` the recovery is given.

What it works on, all given explicitly: the current call's flight table (`new_call`), which
the session fills and empties; the session's traffic counters, in-flight window, paths (RTO
estimators) and silence rules (shared objects, given at construction); its configuration.
What it owns: the timer heap, the count of chunks whose latest send is a QUERY, the
congestion event serials and loss-burst statistics, and the timeline of the session.
"""

from __future__ import annotations

from typing import Callable

from .congestion import CongestionEvents, InFlightWindow, LossBursts
from .errors import PeerUnreachable
from .ina_paths import Paths
from .ina_silence import SilenceRules
from .ina_state import Counters, Flight
from .ina_wire import query_for, with_retx
from .timer_heap import TimerHeap

MAX_KEY = -1                    # the in-flight key of the MAX round's packet
RTO_TIMER, REORDER_TIMER, TAIL_TIMER = 0, 1, 2  # timer kinds
REORDER_FRACTION = 0.25         # the reordering allowance, as a fraction of the min RTT
# The tail of a call (every chunk sent): the earliest chunk in flight is probed after
# TAIL_PROBE_RTTS minimum round trips of silence, doubling per probe, at most TAIL_PROBES times
# per chunk (protocol §4.2, "The tail").
TAIL_PROBE_RTTS = 4.0
TAIL_PROBES = 3
# The MAX round (a barrier) is probed from rto_min doubling per expiry; once the path's minimum
# round trip is known (from the session's earlier calls) the doubling stops at MAX_PROBE_RTTS
# of it (at least rto_min). It gives up after as long as the uncapped doubling would have
# (`max_round_budget`), not after a count of expiries (protocol §4.2, "The MAX round").
MAX_PROBE_RTTS = 4.0


class LossRecovery:
    """The timers and retransmissions of one session (its configuration: `adaptive`, the
    fixed `rto` / `rto_min` / `rto_max`, `max_retx`, the configured `window`, `query`,
    `window_rule`, as InaSession takes them)."""

    # (slots: the native core reads and writes them at their offsets, native/attrs.c)
    __slots__ = ('job', 'paths', 'silence', 'counters', 'in_flight_window', 'adaptive', 'rto',
                 'rto_min', 'rto_max', 'max_retx', 'window', 'query', 'window_rule', 'events',
                 'loss_bursts', 'timeline', 'in_flight', 'timers', 'queried', 'tail',
                 '_tail_serial', '_timer_heap')

    def __init__(self, *, job: int, paths: Paths, silence: SilenceRules, counters: Counters,
                 in_flight_window: InFlightWindow, adaptive: bool, rto: float, rto_min: float,
                 rto_max: float, max_retx: int, window: int, query: bool, window_rule: str,
                 timer_heap: Callable[[], TimerHeap] = TimerHeap):
        self.job = job
        self.paths = paths
        self.silence = silence
        self.counters = counters
        self.in_flight_window = in_flight_window
        self.adaptive = adaptive
        self.rto, self.rto_min, self.rto_max = rto, rto_min, rto_max
        self.max_retx = max_retx
        self.window = window
        self.query = query
        self.window_rule = window_rule
        self.events = CongestionEvents()
        self.loss_bursts = LossBursts()
        # (time, event, chunk) of every send, retransmission and result when a list
        # (InaSession.timeline, which is this attribute); None: nothing is recorded.
        self.timeline: list | None = None
        self._timer_heap = timer_heap       # makes each call's heap (the native core's: in C)
        self.new_call({})

    def new_call(self, in_flight: dict[int, Flight]) -> None:
        """A call begins (or ended): `in_flight` is its flight table (key -> Flight, in
        first-send order), which the session fills and empties; no timers yet."""
        self.in_flight = in_flight
        self.timers = self._timer_heap()
        self.queried = 0                # chunks in flight whose latest send is a QUERY
        self.tail = False               # every chunk of the call sent (the session says)
        self._tail_serial = 0           # of the one live tail-probe timer (older ones: stale)

    @property
    def current_window(self) -> int:
        """Chunks the session may have in flight now."""
        return self.in_flight_window.size if self.adaptive else self.window

    def expire(self, now: float) -> list[bytes]:
        """The timers due at `now`: a reorder timer resends its chunk (§4.1); a silence resends
        the earliest chunk in flight of its path alone, a probe backed off per expiry (RFC 6298
        §5; the others wait on it, `SilenceRules.expiry`); PeerUnreachable when the earliest is
        spent (the session then fails)."""
        out = []
        timers, heads, in_flight = self.timers, [None, None], self.in_flight
        while timers and timers.top()[0] <= now:
            deadline, key, tries, kind = timers.pop()
            flight = in_flight.get(key)
            if kind == TAIL_TIMER:
                # (`tries` holds the probe's serial: only the latest armed probe is live)
                if flight is not None and tries == self._tail_serial and self.tail \
                        and key == next(iter(in_flight)):
                    flight.tail_probes += 1
                    out.append(self._resend(key, flight, now, early=False, probe=True))
                continue
            if flight is None or flight.tries != tries:
                continue            # answered, or rescheduled since
            if kind == REORDER_TIMER:
                if flight.suspect:
                    out.append(self._resend(key, flight, now, early=True))
                continue
            head = True
            if key != MAX_KEY:
                later, head = self.silence.expiry(key, flight, deadline, now, in_flight, heads,
                                                  self.current_window)
                if later > now:
                    flight.deadline = later
                    timers.push(later, key, tries, RTO_TIMER)
                    continue
            if head and self._spent(key, flight, now):
                raise PeerUnreachable(job=self.job, slot=flight.slot,
                                      chunk=None if key == MAX_KEY else key, tries=flight.tries)
            flight.expiries += 1
            out.append(self._resend(key, flight, now, early=False))
        return out

    def _resend(self, key: int, flight: Flight, now: float, *, early: bool,
                probe: bool = False) -> bytes:
        """Retransmit a chunk (early: a later result showed it lost; else its timer expired,
        or, `probe`, the tail's probe timer: values, and no loss is counted)."""
        # A loss of a data chunk: is it congestion? The MAX round is a barrier (a
        # late worker delays it): its expiries say nothing about the network.
        if self.adaptive and key != MAX_KEY and not probe:
            self.counters.loss_events += 1
            # Before the call's first data result the first window waits on a barrier (the
            # slowest worker's start) as the MAX round does: its losses say nothing of
            # congestion (judged against a loss rate not yet measured, they ended slow start
            # at the floor; protocol §4.2).
            if self.silence.last_progress_chunk >= 0:
                self._on_loss(flight)
        flight.tries += 1
        flight.suspect = False
        self.arm(key, flight, now)
        # Early, a QUERY: most late chunks miss another worker's piece or a result, not ours.
        self.set_queried(flight, early and self.query and key != MAX_KEY)
        payload = query_for(flight.payload) if flight.queried else with_retx(flight.payload)
        self.counters.retransmissions += 1
        if early:
            self.counters.fast_retransmissions += 1
        else:
            self.counters.timer_retransmissions += 1
            if probe:
                self.counters.tail_probes += 1
        self._count_sent(payload)
        if self.timeline is not None:
            self.timeline.append((now, "fast" if early else "probe" if probe else "timer", key))
        return payload

    def spurious_timeout(self, flight: Flight, now: float) -> bool:
        """The chunk's one retransmission was its timer's, and the result came back sooner
        than any round trip seen: it answers the first copy."""
        min_rtt = self.paths.estimator(flight.slot).min_rtt
        return (flight.tries == 2 and flight.expiries == 1 and min_rtt is not None
                and now - flight.last_sent < min_rtt)

    def set_queried(self, flight: Flight, queried: bool) -> None:
        """Whether the flight's latest send is a QUERY (the session clears it on its result)."""
        self.queried += int(queried) - int(flight.queried)
        flight.queried = queried

    def on_nack(self, c: int, slot: int, ver: int, now: float) -> list[bytes]:
        """The switch lacks this worker's piece of chunk c: resend the values, once per QUERY
        (a later transmission of the values already answers any other NACK). The session
        calls this in its data phase only."""
        flight = self.in_flight.get(c)
        if flight is None or slot != flight.slot or ver != flight.ver or not flight.queried:
            self.counters.duplicates_ignored += 1
            return []
        self.set_queried(flight, False)
        flight.tries += 1
        self.arm(c, flight, now)
        payload = with_retx(flight.payload)
        self.counters.retransmissions += 1
        self.counters.nack_retransmissions += 1
        self._count_sent(payload)
        if self.timeline is not None:
            self.timeline.append((now, "nack", c))
        return [payload]

    def arm(self, key: int, flight: Flight, now: float) -> None:
        """Start the timer of the flight's transmission made `now` (the session's per-chunk
        path, `InaSession._fill_window`, does the same inline for first transmissions)."""
        if not self.adaptive:
            wait = min(self.rto * 2.0 ** flight.expiries, self.rto_max)
        elif key == MAX_KEY:
            wait = self.max_probe_wait(flight.expiries)
        else:
            wait = self.paths.estimator(flight.slot).timer(flight.expiries + 1)
        flight.serial = self.events.transmitted()
        if key != MAX_KEY:
            self.loss_bursts.transmitted(self.in_flight_window.size)
        flight.last_sent = now
        flight.wait = wait
        flight.deadline = now + wait
        self.timers.push(flight.deadline, key, flight.tries, RTO_TIMER)
        if self.tail:
            self.probe_tail(now)

    def max_probe_wait(self, expiries: int) -> float:
        """The MAX round's timer after `expiries` expiries (adaptive). A barrier: the first
        worker waits for the last to start, so it probes from rto_min, doubling. The doubling
        stops at MAX_PROBE_RTTS minimum round trips (at least rto_min, at most rto_max) once a
        round trip has been measured: then the workers are known to be lined up by the calls
        before, and a worker whose MAX result (or probe) was lost k times in a row waited
        2^k·rto_min for it, and every other worker's data phase waited for that one (issue 32:
        one of 16 workers on the fat-tree at 10 % lost it four times and began its data phase
        0.1 s after the others, the lossless call's length). The cost of the cap is a probe per
        interval while a worker really is late (a compute step between calls)."""
        # (capped expiries keep counting up to the budget's end: 2.0 ** 1100 would overflow)
        wait = self.rto_min * 2.0 ** min(expiries, 64)
        ceiling = self.rto_max
        min_rtt = self.paths.estimator(0).min_rtt
        if min_rtt is not None:
            ceiling = min(ceiling, max(self.rto_min, MAX_PROBE_RTTS * min_rtt))
        return min(wait, ceiling)

    def _spent(self, key: int, flight: Flight, now: float) -> bool:
        """Whether this expiry of the earliest chunk's timer is one too many: after max_retx
        expiries; the adaptive MAX round once `max_round_budget` has passed since its first
        send (the same moment while its probes are not capped; 1 ns of slack for the float
        sums of the same waits)."""
        if key == MAX_KEY and self.adaptive:
            return now - flight.sent_at >= self.max_round_budget() - 1e-9
        return flight.expiries >= self.max_retx

    def max_round_budget(self) -> float:
        """How long the MAX round waits before PeerUnreachable (adaptive): as long as the
        uncapped doubling from rto_min (up to rto_max) takes to expire 1 + max_retx times, so
        the cap of `max_probe_wait` shortens the wait for a lost packet, not the patience
        with a peer that is slow to start."""
        budget, wait = 0.0, self.rto_min
        for _ in range(self.max_retx + 1):
            budget += min(wait, self.rto_max)
            wait *= 2.0
        return budget

    def probe_tail(self, now: float) -> None:
        """Arm the tail's probe (docs/protocol.md §4.2, "The tail"): the session calls this
        once every chunk of the call has been sent, and again on every result; so does every
        transmission then. After a call's last chunk no later result can show a loss, and
        the RTO, learnt while the worker's own window queued ahead of each chunk, is several
        times the round trip of a probe sent into the empty tail (16-worker fat-tree at 5 %:
        RTO 27-48 ms, minimum RTT 1.4-2.2 ms). So the earliest chunk in flight is resent with
        its values after TAIL_PROBE_RTTS minimum round trips (at least rto_min) of silence:
        since its latest transmission and the latest result, doubling per probe, at most
        TAIL_PROBES times per chunk (a straggler that has not sent yet costs a few duplicates,
        and only the RTO timers, with their backoff and give-up count, remain after that).
        Only the earliest: one packet per probe interval per worker, whatever the window."""
        in_flight = self.in_flight
        if not (self.adaptive and self.tail and in_flight):
            return
        key = next(iter(in_flight))
        flight = in_flight[key]
        min_rtt = self.paths.estimator(flight.slot).min_rtt
        if key == MAX_KEY or flight.tail_probes >= TAIL_PROBES or min_rtt is None:
            return
        base = TAIL_PROBE_RTTS * min_rtt
        if base < self.rto_min:
            base = self.rto_min
        since = flight.last_sent
        if self.silence.last_progress > since:
            since = self.silence.last_progress
        due = since + base * 2.0 ** flight.tail_probes
        self._tail_serial += 1
        self.timers.push(due, key, self._tail_serial, TAIL_TIMER)

    def next_deadline(self) -> float | None:
        """When `expire` should next be called (None: no live timer)."""
        timers, in_flight = self.timers, self.in_flight
        while timers:
            deadline, key, tries, kind = timers.top()
            flight = in_flight.get(key)
            if kind == TAIL_TIMER:
                if flight is not None and tries == self._tail_serial and self.tail:
                    return deadline
            elif (flight is not None and flight.tries == tries
                    and (kind == RTO_TIMER or flight.suspect)):
                return deadline
            timers.pop()
        return None

    def _count_sent(self, payload: bytes) -> None:
        self.counters.packets_sent += 1
        self.counters.bytes_sent += len(payload)

    def _on_loss(self, flight: Flight) -> None:
        """A data chunk's transmission was lost (detected early or by its timer)."""
        if self.window_rule == "every_loss":
            if self.events.expired(flight.serial):     # once per round trip
                self._halve_window()
        elif (self.loss_bursts.lost(self.in_flight_window.size)
              and self.events.expired(flight.serial)):   # sent after the last halving
            self._halve_window()

    def _halve_window(self) -> None:
        self.counters.congestion_events += 1
        self.in_flight_window.on_timeout()

    def detect_losses(self, chunk: int, answered: Flight, now: float) -> list[bytes]:
        """The result of `chunk` arrived (docs/protocol.md §4.1). Every worker sends its first
        copies in chunk order and links are FIFO, so an earlier chunk still in flight and sent
        once is lost; one already resent is lost if `chunk` was first sent after that resend.
        A lost chunk is resent once it is overdue by the reordering allowance (RACK's rule:
        its send time plus the answered chunk's RTT), else it gets a reorder timer."""
        rtt = now - answered.last_sent
        allowance = REORDER_FRACTION * (self.paths.estimator(answered.slot).min_rtt or 0.0)
        out = []
        path_of = self.paths.path
        path = path_of(answered.slot)
        for key, flight in list(self.in_flight.items()):    # in first-send (= chunk) order
            if key >= chunk:
                break
            if path_of(flight.slot) != path:
                continue           # the other path's order says nothing about this one
            if flight.suspect or (flight.tries > 1 and flight.last_sent >= answered.last_sent):
                continue
            due = flight.last_sent + rtt + allowance
            if due <= now:
                out.append(self._resend(key, flight, now, early=True))
            else:
                flight.suspect = True
                self.timers.push(due, key, flight.tries, REORDER_TIMER)
        return out
