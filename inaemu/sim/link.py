"""One direction of a link: serialisation at the link's bandwidth, propagation delay, a drop-tail
FIFO with a byte limit, and seeded random loss.

The model (per direction, as Mininet's TCLink shapes each veth end):
- a frame handed to `send` joins the FIFO unless the bytes already waiting or on the wire plus
  its own exceed `queue_bytes` (then it is dropped and counted: `dropped_queue`);
- it is serialised after the frames ahead of it: it leaves the sender at
  `max(now, busy_until) + len*8/bw` (no serialisation when the link is unshaped, `bw_bps=None`);
- it is lost with probability `loss` (one draw from this direction's own `random.Random` per
  frame, in send order, so a seed fixes every fate); a lost frame still used the wire;
- otherwise it arrives `delay_s` after it left, and `deliver(frame)` runs then.
Only one event per frame is scheduled (its arrival): the FIFO is implied by `busy_until`, and the
backlog is the frames whose serialisation has not finished yet.

A sender that must know when its frame no longer takes room in this queue (TCP Small Queues,
`reliable.py`) passes `on_left` to `send`: it runs with the frame when the frame's serialisation
ends (lost frames too: they used the wire), or at once, as its own event, when the queue was full
and the frame never joined it. Only those frames cost a second event.

A switch's port is a socket in front of that queue (`attach_sender`): the frames waiting or on
the wire are charged to the socket's send buffer (SEND_BUFFER_BYTES, the kernel's default,
FRAME_CHARGE_BYTES per frame beyond its length), and once it is full the socket refuses more:
`writable()` is False and the switch keeps its frames (back-pressure, see switch_node.py). It is
told when the charge has fallen to half the buffer, as the kernel wakes a blocked sender.
Measured on veths behind htb: 99 frames of 1442 bytes fill the default 212,992 bytes.
"""

from __future__ import annotations

import random
import zlib
from collections import deque
from dataclasses import dataclass
from typing import Callable

from inaemu.sim.events import EventLoop

DEFAULT_QUEUE_BYTES = 1000 * 1514   # Linux's default txqueuelen of 1000 full-size frames
SEND_BUFFER_BYTES = 212992          # net.core.wmem_default: a raw socket's send buffer
FRAME_CHARGE_BYTES = 709            # what a frame costs the buffer beyond its length (skb)


@dataclass
class LinkCounters:
    """What one direction saw. `sent_*` counts every frame offered, so
    sent = delivered + lost + dropped_queue (+ frames still in flight)."""

    sent_packets: int = 0
    sent_bytes: int = 0
    delivered_packets: int = 0
    delivered_bytes: int = 0
    lost_packets: int = 0
    dropped_queue: int = 0

    def as_dict(self) -> dict[str, int]:
        return dict(self.__dict__)


def check_direction(src: str, dst: str, *, bw_bps: float | None, delay_s: float, loss: float,
                    queue_bytes: int) -> None:
    """A direction's parameters, or ValueError naming it and what is wrong (both cores)."""
    if bw_bps is not None and bw_bps <= 0:
        raise ValueError(f"{src}->{dst}: bandwidth must be positive, got {bw_bps}")
    if not 0 <= loss <= 1:
        raise ValueError(f"{src}->{dst}: loss must be a probability 0..1, got {loss}")
    if delay_s < 0 or queue_bytes <= 0:
        raise ValueError(f"{src}->{dst}: delay must be >= 0 and the queue positive")


class LinkDirection:
    """`src` -> `dst` (both "node:port" labels, for traces and reports)."""

    def __init__(self, loop: EventLoop, src: str, dst: str, *, bw_bps: float | None,
                 delay_s: float, loss: float, rng: random.Random,
                 deliver: Callable[[bytes], None], queue_bytes: int = DEFAULT_QUEUE_BYTES):
        check_direction(src, dst, bw_bps=bw_bps, delay_s=delay_s, loss=loss,
                        queue_bytes=queue_bytes)
        self.loop = loop
        self.src = src
        self.dst = dst
        self.seconds_per_byte = 8.0 / bw_bps if bw_bps else 0.0
        self.delay_s = delay_s
        self.loss = loss
        self.rng = rng
        self.deliver = deliver
        self.queue_bytes = queue_bytes
        self.counters = LinkCounters()
        self.up = True              # a link that is down loses everything (a dead host)
        # Capture hooks (set only for traced runs): a frame that will be delivered, and one that
        # this direction lost (randomly, because it is down, or to a full queue).
        self.on_departed: Callable[[bytes], None] | None = None
        self.on_lost: Callable[[bytes], None] | None = None
        self._busy_until = 0.0
        self._backlog: deque[tuple[float, int]] = deque()   # (serialised at, size)
        self._backlog_bytes = 0
        self._send_buffer: int | None = None        # a sender socket's buffer (switch ports)
        self._charged = 0                            # bytes charged to it now
        self._charges: deque[tuple[float, int]] = deque()   # (serialised at, charge)
        self._on_writable: Callable[[], None] | None = None
        self._wake_event = None

    @property
    def delivered_packets(self) -> int:
        """Frames delivered so far (`counters.delivered_packets`; the native core reads it from
        C without making the counters object, which a progress line does for every link)."""
        return self.counters.delivered_packets

    def attach_sender(self, on_writable: Callable[[], None],
                      send_buffer: int = SEND_BUFFER_BYTES) -> None:
        """Make this direction's sender a socket with `send_buffer` bytes: `writable()` says
        whether it takes a frame now, and `on_writable()` runs when a refused sender may go on."""
        if send_buffer <= 0:
            raise ValueError(f"{self.name}: the send buffer must be positive, got {send_buffer}")
        self._send_buffer = send_buffer
        self._on_writable = on_writable

    def writable(self) -> bool:
        """Whether the sender's socket takes a frame now (always, without a socket, or on an
        unshaped link, where nothing waits)."""
        if self._send_buffer is None or not self.seconds_per_byte:
            return True
        self._settle(self.loop.now)
        return self._charged < self._send_buffer

    def wait_writable(self) -> None:
        """Call `on_writable` once the charge has fallen to half the buffer (one pending)."""
        if self._wake_event is not None and self._wake_event.pending:
            return
        half = self._send_buffer // 2
        charged = self._charged
        when = self.loop.now
        for serialised_at, charge in self._charges:
            if charged <= half:
                break
            charged -= charge
            when = serialised_at
        self._wake_event = self.loop.at(when, self._wake)

    def _wake(self) -> None:
        self._wake_event = None
        self._settle(self.loop.now)
        self._on_writable()

    def _settle(self, now: float) -> None:
        charges = self._charges
        while charges and charges[0][0] <= now:
            self._charged -= charges.popleft()[1]

    @property
    def name(self) -> str:
        return f"{self.src}->{self.dst}"

    def transmission_time(self, size: int) -> float:
        return size * self.seconds_per_byte

    def send(self, frame: bytes, on_left: Callable[[bytes], None] | None = None) -> None:
        loop = self.loop
        now = loop.now
        size = len(frame)
        counters = self.counters
        counters.sent_packets += 1
        counters.sent_bytes += size
        per_byte = self.seconds_per_byte
        if per_byte:
            backlog = self._backlog
            while backlog and backlog[0][0] <= now:
                self._backlog_bytes -= backlog.popleft()[1]
            if self._backlog_bytes + size > self.queue_bytes:
                self._drop(frame, "queue-drop")
                if on_left is not None:
                    loop.post(now, on_left, frame)
                return
            busy = self._busy_until
            leaves = (busy if busy > now else now) + size * per_byte
            self._busy_until = leaves
            backlog.append((leaves, size))
            self._backlog_bytes += size
            if self._send_buffer is not None:
                self._settle(now)
                charge = size + FRAME_CHARGE_BYTES
                self._charges.append((leaves, charge))
                self._charged += charge
        else:
            busy = self._busy_until
            leaves = busy if busy > now else now
        if on_left is not None:
            loop.post(leaves, on_left, frame)
        if not self.up or (self.loss and self.rng.random() < self.loss):
            self._drop(frame, "lost")
            return
        if self.on_departed is not None:
            self.on_departed(frame)
        if loop.trace is not None:
            loop.record(f"{self.name} send {size} {zlib.crc32(frame):08x}")
        loop.post(leaves + self.delay_s, self._arrive, frame)

    def _drop(self, frame: bytes, why: str) -> None:
        """A frame this direction lost: at random or down ("lost"), or to a full queue."""
        if why == "lost":
            self.counters.lost_packets += 1
        else:
            self.counters.dropped_queue += 1
        self.loop.record(f"{self.name} {why} {len(frame)}")
        if self.on_lost is not None:
            self.on_lost(frame)

    def _arrive(self, frame: bytes) -> None:
        self.counters.delivered_packets += 1
        self.counters.delivered_bytes += len(frame)
        self.deliver(frame)
