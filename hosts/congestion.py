"""How long a worker waits for a result and how many chunks it keeps in flight (protocol §4).

INA has no congestion control of its own, and the switch is usually the bottleneck: when n
workers each keep a full window in flight, the switch's queue alone delays results by about
n · window · its per-packet cost. A fixed retransmission timeout shorter than that resends every
chunk and the duplicates overflow the queue. So a worker adapts, as TCP does:

* `RtoEstimator`: RFC 6298. SRTT/RTTVAR from round-trip times of chunks sent once (Karn's rule:
  the result of a retransmitted chunk could answer either copy), RTO = max(SRTT + 4·RTTVAR,
  2·SRTT) clamped to [rto_min, rto_max] (the 2·SRTT floor is the RTT-based floor: RTTVAR
  decays to nothing on a steady path); the configured `rto` until the first sample. Each chunk
  backs off on its own: the timer after its e-th expiry waits RTO·2^e (up to rto_max). Unlike
  TCP, a timeout does not back off the RTO of new chunks: here most timeouts are another
  worker's loss, and congestion is the window's business. It also keeps the minimum RTT.
* `InFlightWindow`: slow start from a floor, halve the window on a loss that congestion
  caused (not below the floor), grow it by one per window of results, never above the
  configured maximum (AIMD); so the senders back off when a queue overflows.
* Which losses are congestion (`LossBursts`): a drop-tail queue that overflows drops a burst,
  random loss a steady fraction. Each worker learns its usual fraction q of chunks lost per
  window of transmissions (an EWMA over windows; in an aggregation job a chunk is lost when
  any of the n contributions or the result is, so q is several times a link's loss rate) and
  judges a loss congestion only when the losses of the current window exceed what q explains:
  more than q·w + 3·sqrt(q·(1−q)·w) + 2 (nothing before q is first measured). Then the window
  halves, at most once per window.
  (TCP Veno's rule, "the backlog from the RTTs is small, so the loss is random", was tried:
  an RTT here includes the wait for the slowest worker, so the backlog looked large and
  windows fell to the floor; docs/loss.md.)

A window of chunks lost at once is one loss event, not one per chunk: only a loss of a
transmission made after the previous event counts (`CongestionEvents`). Sans-I/O: time comes
in as `now`. docs/hosts.md and docs/loss.md have the measurements behind these choices.
"""

from __future__ import annotations

import math

# RFC 6298 §2: gains 1/8 and 1/4, K = 4.
ALPHA, BETA, K_RTTVAR = 0.125, 0.25, 4.0
SRTT_FLOOR = 2.0        # the RTO is never below SRTT_FLOOR · SRTT
_KEEP_RTTVAR, _KEEP_SRTT = 1 - BETA, 1 - ALPHA


class RtoEstimator:
    """The retransmission timeout of RFC 6298, and each chunk's exponential backoff.

    The RTO is computed when it changes (a sample, a new `initial`), not each time it is read:
    every chunk sent reads it. Change it through `sample` and `initial` only."""

    # (slots: the native core reads and writes them at their offsets, native/attrs.c)
    __slots__ = ('minimum', 'maximum', 'srtt', 'rttvar', 'min_rtt', 'samples', '_initial', '_rto',
                 'first_timer')

    def __init__(self, *, initial: float, minimum: float, maximum: float):
        self.minimum, self.maximum = minimum, maximum
        self.srtt: float | None = None
        self.rttvar: float | None = None
        self.min_rtt: float | None = None
        self.samples = 0
        self.initial = initial

    @property
    def initial(self) -> float:
        """The RTO until the first sample."""
        return self._initial

    @initial.setter
    def initial(self, value: float) -> None:
        self._initial = value
        self._refresh()

    @property
    def rto(self) -> float:
        """The initial value until a sample, then max(SRTT + 4·RTTVAR, 2·SRTT) in
        [minimum, maximum]."""
        return self._rto

    def _refresh(self) -> None:
        # max(learnt, SRTT_FLOOR · SRTT) clamped to [minimum, maximum], then timer(1), which
        # every chunk sent reads; comparisons rather than max()/min() calls (per result)
        srtt, maximum = self.srtt, self.maximum
        if srtt is None:
            rto = self._initial
        else:
            rto = srtt + K_RTTVAR * self.rttvar
            floor = SRTT_FLOOR * srtt
            if floor > rto:
                rto = floor
            if self.minimum > rto:
                rto = self.minimum
            if maximum < rto:
                rto = maximum
        self._rto = rto
        self.first_timer = maximum if maximum < rto else rto

    def timer(self, tries: int) -> float:
        """How long a transmission waits after `tries - 1` expiries: the RTO doubled per
        expiry."""
        return min(self._rto * 2.0 ** (tries - 1), self.maximum)

    def sample(self, rtt: float) -> None:
        """A round-trip time of a chunk transmitted once (RFC 6298 §2.2-2.3). Runs per result:
        `_refresh` inline, no builtin calls (the same arithmetic, the same floats)."""
        if rtt < 0.0:
            rtt = 0.0
        min_rtt, srtt = self.min_rtt, self.srtt
        if min_rtt is None or rtt < min_rtt:
            self.min_rtt = rtt
        if srtt is None:
            srtt, rttvar = rtt, rtt / 2
        else:
            delta = srtt - rtt
            if delta < 0.0:
                delta = -delta
            rttvar = _KEEP_RTTVAR * self.rttvar + BETA * delta
            srtt = _KEEP_SRTT * srtt + ALPHA * rtt
        self.srtt, self.rttvar = srtt, rttvar
        self.samples += 1
        rto = srtt + K_RTTVAR * rttvar          # then as _refresh
        floor = SRTT_FLOOR * srtt
        if floor > rto:
            rto = floor
        if self.minimum > rto:
            rto = self.minimum
        maximum = self.maximum
        if maximum < rto:
            rto = maximum
        self._rto = rto
        self.first_timer = maximum if maximum < rto else rto


class InFlightWindow:
    """AIMD on the number of chunks in flight, between a floor and the configured window.

    Starts at the floor and grows by one per result (doubling per round trip: slow start) up
    to the maximum, until the first timeout; from then on +1 per window of results. A timeout
    halves it, never below the floor (`maximum // FLOOR_DIVISOR`, at least 1). The floor is
    not TCP's 1: random loss makes every worker time out now and then (a chunk waits for
    another worker's retransmission), and a window of a few chunks would stall behind each
    of those; the floor keeps enough in flight for the switch to stay busy meanwhile.
    """

    # (slots: the native core reads and writes them at their offsets, native/attrs.c)
    __slots__ = ('maximum', 'floor', 'size', 'slow_start', 'reductions', '_results')

    FLOOR_DIVISOR = 8

    def __init__(self, maximum: int):
        self.maximum = maximum
        self.floor = max(1, maximum // self.FLOOR_DIVISOR)
        self.size = self.floor
        self.slow_start = True
        self.reductions = 0
        self._results = 0            # results since the window last grew

    def on_result(self) -> None:
        if self.size >= self.maximum:
            return
        self._results += 1
        if self.slow_start or self._results >= self.size:
            self.size += 1
            self._results = 0

    def on_timeout(self) -> None:
        """A congestion loss: halve (the name is historic: any loss judged congestion)."""
        self.size = max(self.floor, self.size // 2)
        self.slow_start = False
        self._results = 0
        self.reductions += 1


class CongestionEvents:
    """Turns losses (timer expiries, losses detected early) into events, at most one per round
    trip.

    Every transmission takes a serial number; an expiry is an event only if its transmission
    was made after the last event (the transmissions made before it were already in the network
    when the window shrank and the RTO doubled).
    """

    # (slots: the native core reads and writes them at their offsets, native/attrs.c)
    __slots__ = ('serial', '_last_event', 'count')

    def __init__(self) -> None:
        self.serial = 0              # serial of the latest transmission
        self._last_event = 0         # serial at the last event
        self.count = 0

    def transmitted(self) -> int:
        self.serial += 1
        return self.serial

    def expired(self, serial: int) -> bool:
        """Whether the loss of transmission `serial` is a new loss event."""
        if serial <= self._last_event:
            return False
        self._last_event = self.serial
        self.count += 1
        return True


class LossBursts:
    """Tells congestion (a burst of losses: a queue overflowed) from random loss (a steady
    fraction), per window of transmissions.

    `transmitted(window)` for every transmission, `lost(window)` for every loss detected (early
    or by a timer); `lost` says whether this loss makes the current window's losses a burst:
    more than q·w + 3·sqrt(q·(1−q)·w) + SLACK, q being the EWMA (gain GAIN) of the fraction of
    transmissions lost in past windows (the first window's fraction as it is: nothing is
    judged before one window has been measured). At most one burst per window.

    Why three deviations and a first measurement: on a 16-worker fat-tree at 5 % loss nearly
    every chunk loses a piece somewhere (56 link crossings), q is about 0.6, and with q still
    near 0 in the first window, or 2 deviations later, random loss was judged a burst 2-6
    times per worker per 1 MiB call; each halving ended slow start and the window stayed
    at a third of its maximum (docs/loss.md, "Trees").
    """

    # (slots: the native core reads and writes them at their offsets, native/attrs.c)
    __slots__ = ('rate', 'learnt', 'bursts', '_sent', '_losses', '_burst')

    GAIN = 0.25
    SLACK = 2.0
    DEVIATIONS = 3.0             # standard deviations of a binomial above the mean

    def __init__(self) -> None:
        self.rate = 0.0              # q: the usual fraction of transmissions lost
        self.learnt = False          # q holds a window's measurement (none judged before)
        self.bursts = 0
        self._sent = 0               # transmissions of the current window
        self._losses = 0             # losses detected during it
        self._burst = False          # this window already had its burst

    def transmitted(self, window: int) -> None:
        self._sent += 1
        if self._sent >= window:          # (>= max(1, window): _sent is at least 1 here)
            self.window_ends()

    def window_ends(self) -> None:
        """A window of transmissions is complete: its loss fraction into the rate. (The
        session's per-chunk path counts `_sent` itself and calls this, as `transmitted`.)"""
        fraction = self._losses / self._sent
        if self.learnt:
            self.rate += self.GAIN * (fraction - self.rate)
        else:       # the first window's fraction is the first estimate (as RFC 6298's SRTT)
            self.rate, self.learnt = fraction, True
        self._sent = self._losses = 0
        self._burst = False

    def expected(self, window: int) -> float:
        """Losses random loss explains in a window of `window` transmissions."""
        q = min(max(self.rate, 0.0), 1.0)
        return q * window + self.DEVIATIONS * math.sqrt(q * (1.0 - q) * window) + self.SLACK

    def lost(self, window: int) -> bool:
        self._losses += 1
        if not self.learnt or self._burst or self._losses <= self.expected(window):
            return False
        self._burst = True
        self.bursts += 1
        return True
