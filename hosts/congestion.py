"""How long a worker waits for a result and how many chunks it keeps in flight (protocol §4).

INA has no congestion control of its own, and the switch is usually the bottleneck: when n
workers each keep a full window in flight, the switch's queue alone delays results by about
n · window · its per-packet cost. A fixed retransmission timeout shorter than that resends every
chunk and the duplicates overflow the queue. So a worker adapts, as TCP does:

* `RtoEstimator`: RFC 6298. SRTT/RTTVAR from round-trip times of chunks sent only once (Karn's
  rule: the result of a retransmitted chunk could answer either copy),
  RTO = SRTT + 4·RTTVAR clamped to [rto_min, rto_max]; the configured `rto` until the first
  sample. A timeout doubles the RTO (`back_off`) until the next valid sample.
* `InFlightWindow`: halve the window on a timeout, grow it by one per window of results, never
  above the configured maximum (AIMD); so the senders back off when the switch's queue is full.

Both count a "congestion event" at most once per round trip: only a timer of a transmission
made after the previous event counts (`CongestionEvents`), so a whole window expiring at once
halves the window and doubles the RTO once, not once per chunk. Sans-I/O: time comes in as `now`.
"""

from __future__ import annotations

# RFC 6298 §2: gains 1/8 and 1/4, K = 4.
ALPHA, BETA, K_RTTVAR = 0.125, 0.25, 4.0


class RtoEstimator:
    """The retransmission timeout of RFC 6298, with exponential backoff on expiry."""

    def __init__(self, *, initial: float, minimum: float, maximum: float):
        self.initial, self.minimum, self.maximum = initial, minimum, maximum
        self.srtt: float | None = None
        self.rttvar: float | None = None
        self.backoff = 0             # timeouts since the last valid sample (each doubles)
        self.samples = 0

    @property
    def base(self) -> float:
        """The RTO before backoff: the initial value until a sample, then SRTT + 4·RTTVAR."""
        if self.srtt is None:
            return self.initial
        return min(max(self.srtt + K_RTTVAR * self.rttvar, self.minimum), self.maximum)

    @property
    def rto(self) -> float:
        """What a transmission made now waits before it is retransmitted."""
        return min(self.base * 2.0 ** self.backoff, self.maximum)

    def sample(self, rtt: float) -> None:
        """A round-trip time of a chunk transmitted once; ends any backoff."""
        rtt = max(rtt, 0.0)
        if self.srtt is None:
            self.srtt, self.rttvar = rtt, rtt / 2
        else:
            self.rttvar = (1 - BETA) * self.rttvar + BETA * abs(self.srtt - rtt)
            self.srtt = (1 - ALPHA) * self.srtt + ALPHA * rtt
        self.backoff = 0
        self.samples += 1

    def back_off(self) -> None:
        """A timeout: double the RTO (until it reaches the maximum)."""
        if self.base * 2.0 ** self.backoff < self.maximum:
            self.backoff += 1


class InFlightWindow:
    """AIMD on the number of chunks in flight: halve on a timeout, +1 per window of results."""

    def __init__(self, maximum: int):
        self.maximum = maximum
        self.size = maximum          # start at the configured window: no cost without congestion
        self.reductions = 0
        self._results = 0            # results since the window last grew

    def on_result(self) -> None:
        if self.size >= self.maximum:
            return
        self._results += 1
        if self._results >= self.size:
            self.size += 1
            self._results = 0

    def on_timeout(self) -> None:
        self.size = max(1, self.size // 2)
        self._results = 0
        self.reductions += 1


class CongestionEvents:
    """Turns timer expiries into congestion events, at most one per round trip.

    Every transmission takes a serial number; an expiry is an event only if its transmission
    was made after the last event (the transmissions made before it were already in the network
    when the window shrank and the RTO doubled).
    """

    def __init__(self) -> None:
        self.serial = 0              # serial of the latest transmission
        self._last_event = 0         # serial at the last event
        self.count = 0

    def transmitted(self) -> int:
        self.serial += 1
        return self.serial

    def expired(self, serial: int) -> bool:
        """Whether the expiry of transmission `serial` is a new congestion event."""
        if serial <= self._last_event:
            return False
        self._last_event = self.serial
        self.count += 1
        return True
