"""A reliable, ordered byte stream over the lossy simulated links: the ring baseline's TCP.

Why a model rather than a real TCP stack: the ring only needs TCP's *costs* (headers, one
segment per MSS, acknowledgements through the same switch, retransmission after loss and the
time it takes to notice it) and its guarantee (every byte, in order). The model, per direction:

- Segments carry at most `mss` payload bytes inside real Ethernet/IPv4/TCP frames (the host node
  frames them); the last segment of each write has PSH. Sequence numbers count bytes from 0.
- The sender keeps at most `window_bytes` unacknowledged. By default (`congestion="none"`)
  there is **no congestion control** (no slow start, no cwnd halving): the window is fixed,
  which favours the ring baseline.
- The receiver acknowledges cumulatively, every `ack_every`-th in-order segment, at once after a
  PSH, and at once for anything out of order or duplicated; an ACK for an out-of-order segment
  carries one SACK block (RFC 2018 option) naming that segment. In-order data it holds back is
  acknowledged at the latest `delayed_ack` after its first segment came (the delayed-ACK timer:
  RFC 5681 requires an ACK within 500 ms; Linux's timer is 40 ms at its shortest). The drivers
  run the timer (`ReliableReceiver.delay_started`, `delayed_ack`).
- Loss recovery as SACK TCP (RFC 6675's DupThresh): a hole with `dupthresh` SACKed segments after
  it is retransmitted once; a retransmission timer (RFC 6298 srtt/rttvar, Linux's 200 ms floor,
  doubling per expiry up to `rto_max`, back to the samples' RTO once new data is acknowledged)
  resends every unSACKed outstanding segment; after
  `max_retx` expiries in a row without progress the connection fails (`TransportTimeout`).
- No handshake and no FIN: connections exist from time 0 (one RTT less than TCP).

Congestion control (`congestion="reno"`, for background traffic; RFC 5681 simplified): the
sender sends while the bytes in the network (RFC 6675's "pipe": sent, not cumulatively
acknowledged, not SACKed, not deemed lost by a timeout and still unsent) stay within cwnd, and
new data only while the bytes from the oldest unacknowledged one to the next new one stay
within `window_bytes` (the receiver's window).

- cwnd starts at `initial_window` segments (10, RFC 6928 as Linux; RFC 5681 says 2-4), ssthresh
  at infinity.
- Slow start (cwnd < ssthresh): each ACK that advances adds the bytes it acknowledged (byte
  counting without RFC 3465's per-ACK limit, as Linux: cwnd doubles per RTT with delayed ACKs),
  never beyond ssthresh.
- Congestion avoidance: each advancing ACK adds mss * acked / cwnd, so about one MSS per RTT
  whatever the ACK frequency.
- Fast retransmit (the SACK rule above) halves: ssthresh = max(flight / 2, 2 mss), cwnd =
  ssthresh at once (no window inflation, no PRR). One halving per recovery episode: the episode
  lasts until the cumulative ACK reaches what had been sent when it began (RFC 6582's "recover"),
  and cwnd does not grow within it.
- Retransmission timeout: ssthresh = max(flight / 2, 2 mss), cwnd = 1 mss, then slow start
  again; every unSACKed outstanding segment is deemed lost and resent, oldest first, as cwnd
  allows (before any new data); a fast retransmit of what was outstanding at the timeout does
  not halve again.
- A fast retransmission that is lost again is resent once `dupthresh` segments sent after it
  have been SACKed (a little of Linux's RACK; without congestion control only the timer finds
  it).
  Simplification: the timer still resends every unSACKed outstanding segment at once, as without
  congestion control (not one segment, then the rest as cwnd allows); only new data waits for
  cwnd.
- No ACK clocking subtleties: no cwnd validation (RFC 7661) for an application-limited sender,
  no limited transmit, no ECN.

TCP Small Queues (Linux's TSQ, tcp_output.c; `nic_budget`, see `tsq_budget`): a sender hands
a segment to its host's NIC queue only while its own frames there stay within a small budget;
the rest of what the window allows waits in the sender, unsent (not outstanding, no timer), and
goes when the driver reports that a frame of this connection left the queue (`on_left`). Why:
without it a fixed 256 KiB window sits in the host's drop-tail queue (210 ms at 10 Mbit/s), every
ACK the host returns on the same uplink waits behind it, and the peer's 200 ms timer fires on
data that was merely queued (spurious retransmissions, which real Linux TCP does not make).
Retransmissions wait for room too, before any new data. Simplifications: the budget counts
frame bytes (Linux: the skbs' truesize, with GSO at least two 2-segment skbs at low rates), is
the same for retransmissions (Linux doubles it for them), has no "always send when at most one
skb is outstanding" rule (the budget is never below two frames), and uses the link rate where
Linux uses its pacing rate (1.2-2 x cwnd / srtt), as it was when the sender was made (a later
rate change does not retune it). ACKs are never held back.

Sans-I/O: `ReliableSender` and `ReliableReceiver` take segments/acks and the time, and return
segments/acks to send plus the next deadline; `host_node` moves them and keeps the timers.
"""

from __future__ import annotations

import struct
from collections import deque
from dataclasses import dataclass

from hosts.tcp_driver import RECEIVE_WINDOW

from inaemu.sim.frames import HEADERS_TCP


CONGESTION = ("none", "reno")

# TCP Small Queues: at most max(2 frames, rate >> TSQ_PACING_SHIFT) bytes per connection in the
# qdisc/NIC (about 1 ms: 1/1024 s), capped at tcp_limit_output_bytes: 4 MiB since 2025 (the
# kernel of this machine reads 4194304), 1 MiB from 2018, 256 KiB from 2015, 128 KiB in 2012.
TSQ_PACING_SHIFT = 10
TSQ_LIMIT_OUTPUT_BYTES = 4 << 20


def tsq_budget(link_bps: float | None, mss: int) -> int | None:
    """The bytes (whole frames) one connection may have in a NIC queue draining at `link_bps`;
    None for an unshaped link (it never holds anything)."""
    if not link_bps:
        return None
    return min(max(2 * (mss + HEADERS_TCP), int(link_bps / 8) >> TSQ_PACING_SHIFT),
               TSQ_LIMIT_OUTPUT_BYTES)


class TransportTimeout(Exception):
    """The peer stopped acknowledging: every retransmission timed out."""


@dataclass(frozen=True)
class TransportConfig:
    mss: int = 1448
    window_bytes: int = RECEIVE_WINDOW    # the hosts' sockets' (hosts/tcp_driver.py)
    ack_every: int = 2
    delayed_ack: float = 0.04         # s: in-order data held back is acknowledged within it
    dupthresh: int = 3
    rto_initial: float = 0.2
    rto_min: float = 0.2
    rto_max: float = 2.0
    max_retx: int = 6
    congestion: str = "none"          # "none" (fixed window) or "reno" (module docstring)
    initial_window: int = 10          # segments, for "reno"
    small_queues: bool = True         # TCP Small Queues on shaped links (module docstring)

    def __post_init__(self) -> None:
        if self.congestion not in CONGESTION:
            raise ValueError(f"transport: congestion must be one of {', '.join(CONGESTION)}, "
                             f"not {self.congestion!r}")
        if self.initial_window < 1:
            raise ValueError("transport: initial_window >= 1 segment")
        if self.mss < 1 or self.window_bytes < self.mss:
            raise ValueError("transport: need mss >= 1 and window_bytes >= mss")
        if self.ack_every < 1 or self.dupthresh < 1 or self.max_retx < 0:
            raise ValueError("transport: ack_every and dupthresh >= 1, max_retx >= 0")
        if not 0 < self.rto_min <= self.rto_initial <= self.rto_max:
            raise ValueError("transport: need 0 < rto_min <= rto_initial <= rto_max")
        if not 0 < self.delayed_ack <= 0.5:
            raise ValueError("transport: need 0 < delayed_ack <= 0.5 s (RFC 5681's limit)")


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

    def options(self) -> bytes:
        """The TCP options an ACK frame carries: the SACK block (RFC 2018's layout after two
        NOPs), or none."""
        return b"" if self.sack is None else SACK.pack(1, 1, 5, 10, *self.sack)

    @classmethod
    def of(cls, cumulative: int, options: bytes) -> "Ack":
        """The ACK a frame's acknowledgement number and options carry (a SACK block if the
        options start with one; anything else is no SACK)."""
        if len(options) >= SACK.size:
            _, _, kind, length, left, right = SACK.unpack_from(options)
            if kind == 5 and length == 10:
                return cls(cumulative, (left, right))
        return cls(cumulative)


SACK = struct.Struct("!BBBBII")       # NOP, NOP, kind 5, length 10, left, right


class _Outstanding:
    __slots__ = ("seq", "data", "psh", "sent_at", "retransmitted", "sacked", "fast_done",
                 "pending", "order", "waiting")

    def __init__(self, seq: int, data: bytes, psh: bool, now: float):
        # (the native core's ring path makes these without this __init__, writing the same
        # slots: `new_outstanding` in inaemu/sim/native/ringpath.c; a change here is one there)
        self.seq, self.data, self.psh = seq, data, psh
        self.sent_at = now
        self.retransmitted = False
        self.sacked = False
        self.fast_done = False
        self.pending = False        # "reno": deemed lost by a timeout, not yet resent
        self.order = 0              # "reno": the sender's transmission count when last sent
        self.waiting = False        # due for a resend that waits for room in the NIC queue

    @property
    def end(self) -> int:
        return self.seq + len(self.data)


@dataclass(slots=True)
class SenderCounters:
    segments_sent: int = 0
    payload_bytes_sent: int = 0
    retransmissions: int = 0
    fast_retransmissions: int = 0
    timeouts: int = 0
    window_reductions: int = 0        # "reno": halvings on fast retransmit, collapses on RTO


# inaemu/sim/native/ringpath.c (the ring's per-segment path on the native core) reads and
# writes ReliableSender's, _Outstanding's and ReliableReceiver's attributes by name and does
# what on_ack/on_left/write/_output/_fill/_fast_retransmit and on_segment do without
# congestion control: a change here needs the same change there (tests/sim/test_native_ring.py
# compares the two event for event).
class ReliableSender:
    """The sending half of one connection. `nic_budget`: the bytes of frames it may have in its
    host's NIC queue (`tsq_budget`; None: no limit). A budget that holds a whole window of
    frames hardly ever binds and is dropped (`throttles` is then False), so the driver skips
    `on_left` (one event per frame) where the queue would never hold anything back."""

    # (slots: the native core reads and writes them at their offsets, native/attrs.c)
    __slots__ = ('config', 'nic_budget', 'nic_bytes', '_resends', 'counters', 'deadline',
                 '_unsent', '_outstanding', '_next_seq', '_acked', '_srtt', '_rttvar', '_rto',
                 '_expiries', '_sacked_bytes', '_pending', '_pending_bytes', '_sends', '_reno',
                 '_cwnd', '_ssthresh', '_recover', '_fast_recovery', '__weakref__')

    def __init__(self, config: TransportConfig, nic_budget: int | None = None):
        self.config = config
        window_frames = config.window_bytes + -(-config.window_bytes // config.mss) * HEADERS_TCP
        self.nic_budget = (nic_budget if nic_budget is not None
                           and nic_budget < window_frames else None)
        self.nic_bytes = 0                # frame bytes of this connection in the NIC queue
        self._resends: deque[tuple[_Outstanding, bool]] = deque()   # (segment, fast): waiting
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
        self._sacked_bytes = 0            # of the outstanding segments
        self._pending: deque[_Outstanding] = deque()    # "reno": to resend after a timeout
        self._pending_bytes = 0
        self._sends = 0                   # "reno": transmissions so far (orders them)
        self._reno = config.congestion == "reno"
        self._cwnd = float(config.initial_window * config.mss)
        self._ssthresh = float("inf")
        self._recover = -1                # one reduction until the cumulative ACK reaches it
        self._fast_recovery = False       # after a fast retransmit: no growth until `_recover`

    @property
    def throttles(self) -> bool:
        """Whether TSQ can hold segments back (the driver must then report `on_left`)."""
        return self.nic_budget is not None

    @property
    def cwnd(self) -> int | None:
        """The congestion window in bytes ("reno"), None without congestion control."""
        return int(self._cwnd) if self._reno else None

    @property
    def ssthresh(self) -> float | None:
        """The slow-start threshold in bytes (inf before the first loss), None for "none"."""
        return self._ssthresh if self._reno else None

    @property
    def in_flight(self) -> int:
        """Bytes sent and not cumulatively acknowledged."""
        return self._next_seq - self._acked

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
        timed = not self._acks_a_resend(ack.cumulative)
        while outstanding and outstanding[0].end <= ack.cumulative:
            done = outstanding.popleft()
            done.waiting = False
            if done.sacked:
                self._sacked_bytes -= len(done.data)
            else:
                if done.pending:
                    done.pending = False
                    self._pending_bytes -= len(done.data)
                if timed:
                    self._sample_rtt(now - done.sent_at)
            progressed = True
        if ack.cumulative > self._acked:
            if self._reno:
                self._grow(ack.cumulative - self._acked, ack.cumulative)
            self._acked = ack.cumulative
        if progressed:
            if self._expiries:
                self._rto = self._unbacked_rto()
            self._expiries = 0
            self.deadline = now + self._rto if outstanding else None
        out: list[Segment] = []
        if ack.sack is not None and outstanding:
            left, right = ack.sack
            for seg in outstanding:
                if left <= seg.seq and seg.end <= right and not seg.sacked:
                    seg.sacked = True
                    seg.waiting = False
                    self._sacked_bytes += len(seg.data)
                    if seg.pending:
                        seg.pending = False
                        self._pending_bytes -= len(seg.data)
            self._fast_retransmit()
        return self._output(now)

    def on_left(self, frame_bytes: int, now: float) -> list[Segment]:
        """A frame of `frame_bytes` that this sender handed out left the NIC queue: what may
        go now."""
        self.nic_bytes -= frame_bytes
        return self._output(now)

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
        self._drop_resends()
        if self._reno:
            return self._reno_timeout(now)
        for seg in self._outstanding:
            if not seg.sacked:
                seg.fast_done = False
                seg.waiting = True
                self._resends.append((seg, False))
        self.deadline = now + self._rto
        return self._output(now)

    # -- internals --------------------------------------------------------------------------------

    def _fill(self, now: float) -> list[Segment]:
        if self._reno:
            return self._reno_fill(now)
        out = []
        window = self.config.window_bytes
        while self._unsent and self._next_seq + len(self._unsent[0][0]) - self._acked <= window:
            if not self._room(len(self._unsent[0][0])):
                break
            data, psh = self._unsent.popleft()
            seg = _Outstanding(self._next_seq, data, psh, now)
            self._next_seq += len(data)
            self._outstanding.append(seg)
            self._queued(len(data))
            self.counters.segments_sent += 1
            self.counters.payload_bytes_sent += len(data)
            out.append(Segment(seg.seq, data, psh))
            if self.deadline is None:
                self.deadline = now + self._rto
        return out

    def _output(self, now: float) -> list[Segment]:
        """What may be handed to the NIC now: resends that wait (oldest decision first), then
        what the window allows, as long as the NIC budget has room."""
        out = []
        resends = self._resends
        while resends:
            seg, fast = resends[0]
            if not seg.waiting:
                resends.popleft()
                continue
            if not self._room(len(seg.data)):
                return out
            resends.popleft()
            seg.waiting = False
            if fast:
                self.counters.fast_retransmissions += 1
            out.append(self._resend(seg, now))
            if self._reno:
                self._sends += 1
                seg.order = self._sends
        out += self._fill(now)
        return out

    def _room(self, size: int) -> bool:
        """Whether a segment of `size` payload bytes fits in this connection's NIC budget (one
        always does when none of its frames is queued)."""
        budget = self.nic_budget
        return (budget is None or self.nic_bytes == 0
                or self.nic_bytes + size + HEADERS_TCP <= budget)

    def _queued(self, size: int) -> None:
        if self.nic_budget is not None:
            self.nic_bytes += size + HEADERS_TCP

    def _drop_resends(self) -> None:
        for seg, _ in self._resends:
            seg.waiting = False
        self._resends.clear()

    def _fast_retransmit(self) -> None:
        """Queue a resend of each hole that has `dupthresh` SACKed segments above it (once per
        hole); `_output` sends them."""
        sacked_above = 0
        holes: list[tuple[_Outstanding, int]] = []
        reno, dupthresh = self._reno, self.config.dupthresh
        newest = -1                 # "reno": when the dupthresh-th highest SACKed one was sent
        for seg in reversed(self._outstanding):
            if seg.sacked:
                sacked_above += 1
                if reno and sacked_above == dupthresh:
                    newest = seg.order
            elif seg.pending or seg.waiting:
                continue
            elif not seg.fast_done:
                holes.append((seg, sacked_above))
            elif reno and newest > seg.order:
                # its retransmission was lost too: dupthresh segments sent after it arrived
                holes.append((seg, sacked_above))
        for seg, above in reversed(holes):
            if above >= self.config.dupthresh:
                if self._reno and self._acked >= self._recover:
                    self._reduce()
                    self._cwnd = self._ssthresh
                    self._recover = self._next_seq
                    self._fast_recovery = True
                seg.fast_done = True
                seg.waiting = True
                self._resends.append((seg, True))

    # -- "reno" ---------------------------------------------------------------------------------

    def _pipe(self) -> int:
        """RFC 6675's pipe: bytes sent and not cumulatively acknowledged, less the SACKed ones
        and those a timeout deemed lost and not resent yet. (A hole the SACK rule resent counts
        once: it left the network as lost and came back as a retransmission.)"""
        return self._next_seq - self._acked - self._sacked_bytes - self._pending_bytes

    def _reno_fill(self, now: float) -> list[Segment]:
        """What cwnd allows: first what a timeout deemed lost, in order, then new data (within
        `window_bytes` of the oldest unacknowledged byte as well)."""
        out = []
        cwnd = max(int(self._cwnd), self.config.mss)
        pipe = self._pipe()
        pending = self._pending
        while pending:
            seg = pending[0]
            if not seg.pending:
                pending.popleft()
                continue
            if pipe + len(seg.data) > cwnd or not self._room(len(seg.data)):
                return out
            pending.popleft()
            seg.pending = False
            self._pending_bytes -= len(seg.data)
            pipe += len(seg.data)
            out.append(self._resend(seg, now))
            self._sends += 1
            seg.order = self._sends
        window = self.config.window_bytes
        unsent = self._unsent
        while unsent:
            size = len(unsent[0][0])
            if (pipe + size > cwnd or self._next_seq + size - self._acked > window
                    or not self._room(size)):
                break
            data, psh = unsent.popleft()
            seg = _Outstanding(self._next_seq, data, psh, now)
            self._sends += 1
            seg.order = self._sends
            self._next_seq += size
            pipe += size
            self._outstanding.append(seg)
            self._queued(size)
            self.counters.segments_sent += 1
            self.counters.payload_bytes_sent += size
            out.append(Segment(seg.seq, data, psh))
        if out and self.deadline is None:
            self.deadline = now + self._rto
        return out

    def _reno_timeout(self, now: float) -> list[Segment]:
        """cwnd = 1 MSS; every unSACKed outstanding segment is deemed lost and resent as the
        window opens again (slow start), the oldest first."""
        self._reduce()
        self._cwnd = float(self.config.mss)
        self._recover = self._next_seq
        self._fast_recovery = False
        self._pending.clear()
        self._pending_bytes = 0
        for seg in self._outstanding:
            seg.fast_done = False
            if not seg.sacked:
                seg.pending = True
                self._pending.append(seg)
                self._pending_bytes += len(seg.data)
        out = self._reno_fill(now)
        self.deadline = now + self._rto
        return out

    def _grow(self, acked: int, cumulative: int) -> None:
        """Reno's increase for an ACK that acknowledged `acked` new bytes."""
        if self._fast_recovery:
            if cumulative < self._recover:
                return                            # the halved window holds until recovered
            self._fast_recovery = False
        if self._cwnd < self._ssthresh:
            self._cwnd = min(self._cwnd + acked, self._ssthresh)
        else:
            self._cwnd += self.config.mss * acked / self._cwnd

    def _reduce(self) -> None:
        """ssthresh = half the flight (at least 2 MSS); the caller sets cwnd."""
        self._ssthresh = float(max((self._next_seq - self._acked) // 2, 2 * self.config.mss))
        self.counters.window_reductions += 1

    def _resend(self, seg: _Outstanding, now: float) -> Segment:
        self._queued(len(seg.data))
        seg.retransmitted = True
        seg.sent_at = now
        self.counters.segments_sent += 1
        self.counters.payload_bytes_sent += len(seg.data)
        self.counters.retransmissions += 1
        return Segment(seg.seq, seg.data, seg.psh, retransmission=True)

    def _acks_a_resend(self, cumulative: int) -> bool:
        """Whether `cumulative` acknowledges a segment that was sent more than once. Such an
        ACK gives no RTT sample at all (Karn's rule over the ACK, as Linux without
        timestamps). Nor does a segment SACKed earlier: its ACK came then, and the cumulative
        ACK's time is the hole's repair, not the path's (Linux too times only segments neither
        SACKed nor resent). Sampling those made a ring's RTO rto_max after a few losses and, with
        the missing delayed-ACK timer, stalled it at 3 % loss."""
        for seg in self._outstanding:
            if seg.end > cumulative:
                return False
            if seg.retransmitted:
                return True
        return False

    def _unbacked_rto(self) -> float:
        """The RTO without the timeouts' doubling: what new data acknowledged after a timeout
        restores. Karn's rule gives no sample from a retransmitted segment, so without this the
        doubled RTO stayed until a segment sent once was acknowledged, and a flow whose every
        episode ended on a retransmission (a Reno window of two segments losing its second)
        waited rto_max per loss until the ring's stall timer failed it. Linux resets its backoff
        on every valid RTT sample, and with timestamps (on by default) the ACK of new data after
        a retransmission is one."""
        if self._srtt is None:
            return self.config.rto_initial
        return min(max(self._srtt + 4 * self._rttvar, self.config.rto_min), self.config.rto_max)

    def _sample_rtt(self, rtt: float) -> None:
        if self._srtt is None:
            self._srtt, self._rttvar = rtt, rtt / 2
        else:
            self._rttvar = 0.75 * self._rttvar + 0.25 * abs(self._srtt - rtt)
            self._srtt = 0.875 * self._srtt + 0.125 * rtt
        self._rto = min(max(self._srtt + 4 * self._rttvar, self.config.rto_min),
                        self.config.rto_max)


def sender_for(config: TransportConfig, link_bps: float | None) -> ReliableSender:
    """A sender whose frames go into a NIC queue draining at `link_bps` (None: unshaped)."""
    budget = tsq_budget(link_bps, config.mss) if config.small_queues else None
    return ReliableSender(config, budget)


class ReliableReceiver:
    """The receiving half: reorders, delivers in order, decides when to acknowledge."""

    # (slots: the native core reads and writes them at their offsets, native/attrs.c)
    __slots__ = ('config', 'next_expected', 'duplicates', '_early', '_unacked_in_order',
                 '__weakref__')

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

    @property
    def delay_started(self) -> bool:
        """The segment just taken is the first held back since the last ACK: the driver sets
        its delayed-ACK timer `config.delayed_ack` from now (a later segment held back before
        the ACK leaves the timer where it is)."""
        return self._unacked_in_order == 1

    def delayed_ack(self) -> Ack | None:
        """The delayed-ACK timer's expiry: the ACK of the in-order data held back, if any
        still is. Why the timer: without it, a sender whose last segment in flight was held
        back (a Reno window of two segments that lost its second) got no ACK until its RTO,
        and then no RTT sample from the resend, so every loss cost it a backed-off RTO."""
        if not self._unacked_in_order:
            return None
        self._unacked_in_order = 0
        return Ack(self.next_expected)
