"""A reliable, ordered byte stream over the lossy simulated links: the ring baseline's TCP.

Why a model rather than a real TCP stack: the ring only needs TCP's *costs* (headers, one
segment per MSS, acknowledgements through the same switch, retransmission after loss and the
time it takes to notice it) and its guarantee (every byte, in order). The model, per direction:

- Segments carry at most `mss` payload bytes inside real Ethernet/IPv4/TCP frames (the host node
  frames them); the last segment of each write has PSH. Sequence numbers count bytes from 0.
- The sender keeps at most `window_bytes` unacknowledged. There is **no congestion control**
  (no slow start, no cwnd halving): the window is fixed, which favours the ring baseline.
- The receiver acknowledges cumulatively, every `ack_every`-th in-order segment, at once after a
  PSH, and at once for anything out of order or duplicated; an ACK for an out-of-order segment
  carries one SACK block (RFC 2018 option) naming that segment.
- Loss recovery as SACK TCP (RFC 6675's DupThresh): a hole with `dupthresh` SACKed segments after
  it is retransmitted once; a retransmission timer (RFC 6298 srtt/rttvar, Linux's 200 ms floor,
  doubling per expiry up to `rto_max`) resends every unSACKed outstanding segment; after
  `max_retx` expiries in a row without progress the connection fails (`TransportTimeout`).
- No handshake and no FIN: connections exist from time 0 (one RTT less than TCP).

Sans-I/O: `ReliableSender` and `ReliableReceiver` take segments/acks and the time, and return
segments/acks to send plus the next deadline; `host_node` moves them and keeps the timers.
"""

from __future__ import annotations

from collections import deque
from dataclasses import dataclass


class TransportTimeout(Exception):
    """The peer stopped acknowledging: every retransmission timed out."""


@dataclass(frozen=True)
class TransportConfig:
    mss: int = 1448
    window_bytes: int = 256 * 1024
    ack_every: int = 2
    dupthresh: int = 3
    rto_initial: float = 0.2
    rto_min: float = 0.2
    rto_max: float = 2.0
    max_retx: int = 6

    def __post_init__(self) -> None:
        if self.mss < 1 or self.window_bytes < self.mss:
            raise ValueError("transport: need mss >= 1 and window_bytes >= mss")
        if self.ack_every < 1 or self.dupthresh < 1 or self.max_retx < 0:
            raise ValueError("transport: ack_every and dupthresh >= 1, max_retx >= 0")
        if not 0 < self.rto_min <= self.rto_initial <= self.rto_max:
            raise ValueError("transport: need 0 < rto_min <= rto_initial <= rto_max")


@dataclass(frozen=True)
class Segment:
    seq: int
    data: bytes
    psh: bool
    retransmission: bool = False


@dataclass(frozen=True)
class Ack:
    cumulative: int                       # every byte below this has arrived
    sack: tuple[int, int] | None = None   # [left, right) of an out-of-order segment


class _Outstanding:
    __slots__ = ("seq", "data", "psh", "sent_at", "retransmitted", "sacked", "fast_done")

    def __init__(self, seq: int, data: bytes, psh: bool, now: float):
        self.seq, self.data, self.psh = seq, data, psh
        self.sent_at = now
        self.retransmitted = False
        self.sacked = False
        self.fast_done = False

    @property
    def end(self) -> int:
        return self.seq + len(self.data)


@dataclass
class SenderCounters:
    segments_sent: int = 0
    payload_bytes_sent: int = 0
    retransmissions: int = 0
    fast_retransmissions: int = 0
    timeouts: int = 0


class ReliableSender:
    """The sending half of one connection."""

    def __init__(self, config: TransportConfig):
        self.config = config
        self.counters = SenderCounters()
        self.deadline: float | None = None
        self._unsent: deque[tuple[bytes, bool]] = deque()
        self._outstanding: deque[_Outstanding] = deque()
        self._next_seq = 0
        self._acked = 0
        self._srtt: float | None = None
        self._rttvar = 0.0
        self._rto = config.rto_initial
        self._expiries = 0

    @property
    def idle(self) -> bool:
        """Everything written has been acknowledged."""
        return not self._unsent and not self._outstanding

    @property
    def acked(self) -> int:
        return self._acked

    def write(self, data: bytes, now: float) -> list[Segment]:
        mss = self.config.mss
        for start in range(0, len(data), mss):
            piece = data[start:start + mss]
            self._unsent.append((piece, start + mss >= len(data)))
        return self._fill(now)

    def on_ack(self, ack: Ack, now: float) -> list[Segment]:
        outstanding = self._outstanding
        progressed = False
        while outstanding and outstanding[0].end <= ack.cumulative:
            done = outstanding.popleft()
            if not done.retransmitted:
                self._sample_rtt(now - done.sent_at)
            progressed = True
        if ack.cumulative > self._acked:
            self._acked = ack.cumulative
        if progressed:
            self._expiries = 0
            self.deadline = now + self._rto if outstanding else None
        out: list[Segment] = []
        if ack.sack is not None and outstanding:
            left, right = ack.sack
            for seg in outstanding:
                if left <= seg.seq and seg.end <= right:
                    seg.sacked = True
            out += self._fast_retransmit(now)
        out += self._fill(now)
        return out

    def on_timeout(self, now: float) -> list[Segment]:
        if self.deadline is None or now < self.deadline or not self._outstanding:
            return []
        self._expiries += 1
        self.counters.timeouts += 1
        if self._expiries > self.config.max_retx:
            self.deadline = None
            raise TransportTimeout(
                f"no acknowledgement for byte {self._acked} after {self._expiries} timeouts")
        self._rto = min(self._rto * 2, self.config.rto_max)
        out = []
        for seg in self._outstanding:
            if not seg.sacked:
                seg.fast_done = False
                out.append(self._resend(seg, now))
        self.deadline = now + self._rto
        return out

    # -- internals --------------------------------------------------------------------------------

    def _fill(self, now: float) -> list[Segment]:
        out = []
        window = self.config.window_bytes
        while self._unsent and self._next_seq + len(self._unsent[0][0]) - self._acked <= window:
            data, psh = self._unsent.popleft()
            seg = _Outstanding(self._next_seq, data, psh, now)
            self._next_seq += len(data)
            self._outstanding.append(seg)
            self.counters.segments_sent += 1
            self.counters.payload_bytes_sent += len(data)
            out.append(Segment(seg.seq, data, psh))
            if self.deadline is None:
                self.deadline = now + self._rto
        return out

    def _fast_retransmit(self, now: float) -> list[Segment]:
        """Resend each hole that has `dupthresh` SACKed segments above it (once per hole)."""
        out = []
        sacked_above = 0
        holes: list[tuple[_Outstanding, int]] = []
        for seg in reversed(self._outstanding):
            if seg.sacked:
                sacked_above += 1
            elif not seg.fast_done:
                holes.append((seg, sacked_above))
        for seg, above in reversed(holes):
            if above >= self.config.dupthresh:
                seg.fast_done = True
                self.counters.fast_retransmissions += 1
                out.append(self._resend(seg, now))
        return out

    def _resend(self, seg: _Outstanding, now: float) -> Segment:
        seg.retransmitted = True
        seg.sent_at = now
        self.counters.segments_sent += 1
        self.counters.payload_bytes_sent += len(seg.data)
        self.counters.retransmissions += 1
        return Segment(seg.seq, seg.data, seg.psh, retransmission=True)

    def _sample_rtt(self, rtt: float) -> None:
        if self._srtt is None:
            self._srtt, self._rttvar = rtt, rtt / 2
        else:
            self._rttvar = 0.75 * self._rttvar + 0.25 * abs(self._srtt - rtt)
            self._srtt = 0.875 * self._srtt + 0.125 * rtt
        self._rto = min(max(self._srtt + 4 * self._rttvar, self.config.rto_min),
                        self.config.rto_max)


class ReliableReceiver:
    """The receiving half: reorders, delivers in order, decides when to acknowledge."""

    def __init__(self, config: TransportConfig):
        self.config = config
        self.next_expected = 0
        self.duplicates = 0
        self._early: dict[int, bytes] = {}
        self._unacked_in_order = 0

    def on_segment(self, seg: Segment) -> tuple[bytes, Ack | None]:
        """The bytes now deliverable in order, and the ACK to send (None: delay it)."""
        if seg.seq != self.next_expected:
            if seg.seq < self.next_expected:
                self.duplicates += 1
            elif seg.seq not in self._early:
                self._early[seg.seq] = seg.data
            else:
                self.duplicates += 1
            sack = None if seg.seq < self.next_expected else (seg.seq, seg.seq + len(seg.data))
            self._unacked_in_order = 0
            return b"", Ack(self.next_expected, sack)
        pieces = [seg.data]
        self.next_expected += len(seg.data)
        filled_hole = False
        while self.next_expected in self._early:
            data = self._early.pop(self.next_expected)
            pieces.append(data)
            self.next_expected += len(data)
            filled_hole = True
        self._unacked_in_order += 1
        if (seg.psh or filled_hole or self._early
                or self._unacked_in_order >= self.config.ack_every):
            self._unacked_in_order = 0
            return b"".join(pieces), Ack(self.next_expected)
        return b"".join(pieces), None
