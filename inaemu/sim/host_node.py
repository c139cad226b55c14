"""A simulated host: one interface, IPv4 framing, timers, and the worker application it runs.

The worker applications on top (`ina_worker.py`, `ring_worker.py`) are thin drivers around the
hosts' sans-I/O cores, as the socket drivers are (hosts/udp_driver.py, hosts/tcp_driver.py):
they feed packets and timer expiries in and put the returned payloads on the wire; a host only
moves frames, dispatches them by (protocol, port) and keeps timers.

A TCP sender that keeps its share of the uplink's queue small (TCP Small Queues, reliable.py)
passes `on_left` with its frames and is told when each has left the queue; nothing else waits.

A host that is `kill()`ed stops sending and ignores everything it receives (its timers are
cancelled): that is how a test makes a worker die mid-run.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Callable

import numpy as np

from inaemu.sim.events import Event, EventLoop
from inaemu.sim.frames import Addressing, Datagram, parse
from inaemu.sim.link import LinkDirection


class Timer:
    """One re-armable deadline on the event loop.

    Sessions move their next deadline on almost every packet, mostly later. So a later deadline
    keeps the event already in the heap, which re-arms itself for the real deadline when it comes
    up early; only an earlier deadline schedules a new event. (Same firing times, far fewer heap
    operations.)
    """

    # (slots: the native core reads and writes them at their offsets, native/attrs.c)
    __slots__ = ('loop', 'action', '_event', 'deadline')

    def __init__(self, loop: EventLoop, action: Callable[[], None]):
        self.loop = loop
        self.action = action
        self._event: Event | None = None
        self.deadline: float | None = None

    def set(self, deadline: float | None) -> None:
        self.deadline = deadline
        if deadline is None:
            return
        event = self._event
        if event is not None and event.pending and event.time <= deadline:
            return
        if event is not None:
            event.cancel()
        self._event = self.loop.at(deadline, self._fire)

    def cancel(self) -> None:
        if self._event is not None:
            self._event.cancel()
            self._event = None
        self.deadline = None

    def _fire(self) -> None:
        self._event = None
        deadline = self.deadline
        if deadline is None:
            return
        if self.loop.now < deadline:
            self._event = self.loop.at(deadline, self._fire)
            return
        self.deadline = None
        self.action()


@dataclass
class HostCounters:
    """Frame-level traffic of a host (bytes are whole Ethernet frames)."""

    frames_sent: int = 0
    bytes_sent: int = 0
    frames_received: int = 0
    bytes_received: int = 0
    ignored: int = 0


class HostNode:
    """A host with its link towards the switch (`uplink`, set by the network)."""

    timer_class = Timer     # what `timer` makes (the native core's hosts: hosttimer.c's)

    def __init__(self, loop: EventLoop, name: str, addressing: Addressing):
        self.loop = loop
        self.name = name
        self.addressing = addressing
        self.uplink: LinkDirection | None = None
        self.alive = True
        self.counters = HostCounters()
        self.handlers: dict[tuple[int, int], Callable[[Datagram], None]] = {}
        self.timers: set[Timer] = set()
        self._ident = 0

    def timer(self, action: Callable[[], None]) -> Timer:
        timer = self.timer_class(self.loop, action)
        self.timers.add(timer)
        return timer

    def listen(self, proto: int, port: int, handler: Callable[[Datagram], None]) -> None:
        self.handlers[(proto, port)] = handler

    def unlisten(self, proto: int, port: int, handler: Callable[[Datagram], None]) -> None:
        """Stop delivering to `handler`; a later listener on the same port keeps its place."""
        if self.handlers.get((proto, port)) == handler:
            del self.handlers[(proto, port)]

    def drop_timer(self, timer: Timer) -> None:
        """Cancel a timer for good and forget it (an app that has ended releases its own, or a
        long scenario would keep every call's apps alive through them)."""
        timer.cancel()
        self.timers.discard(timer)

    def send_frame(self, frame: bytes, on_left: Callable[[bytes], None] | None = None) -> None:
        """Hand `frame` to the uplink's queue; `on_left(frame)` when it no longer takes room
        there (link.py), for a TCP sender that keeps its share of the queue small."""
        if not self.alive or self.uplink is None:
            return
        self.counters.frames_sent += 1
        self.counters.bytes_sent += len(frame)
        self.uplink.send(frame, on_left)

    @property
    def uplink_bps(self) -> float | None:
        """The uplink's rate in bit/s (None: unshaped, or no uplink)."""
        uplink = self.uplink
        if uplink is None or not uplink.seconds_per_byte:
            return None
        return 8.0 / uplink.seconds_per_byte

    def next_ident(self) -> int:
        self._ident = (self._ident + 1) & 0xFFFF
        return self._ident

    def receive(self, frame: bytes) -> None:
        """The `deliver` callback of the link arriving at this host."""
        if not self.alive:
            return
        self.counters.frames_received += 1
        self.counters.bytes_received += len(frame)
        datagram = parse(frame)
        if datagram is None or datagram.dst_ip != self.addressing.ip:
            self.counters.ignored += 1
            return
        handler = self.handlers.get((datagram.proto, datagram.dport))
        if handler is None:
            self.counters.ignored += 1
            return
        handler(datagram)

    def kill(self) -> None:
        """Stop responding: no more sends, receptions or timers."""
        self.alive = False
        for timer in self.timers:
            timer.cancel()


@dataclass(slots=True)
class WorkerOutcome:
    """How a worker's all-reduce ended; `finished_at` is virtual seconds (None: still running)."""

    finished_at: float | None = None
    error: str | None = None
    result: np.ndarray | None = None
    retransmissions: int = 0
    extra: dict = field(default_factory=dict)

    @property
    def finished(self) -> bool:
        return self.finished_at is not None
