"""The packet driver: one event loop moving packets between socket ports and the runtime.

Why one thread: the pipeline runs under `switch.lock` anyway, and a single loop that blocks in
`epoll` costs no CPU while idle, so many switches share a laptop. Per wake-up it drains every
readable port without blocking (bounded per port, for fairness), runs all arrivals as one batch
through the `Forwarder`, and sends what comes out. Its only timers are the delay line and the
switch's egress queues (when a drain rate is set): `epoll` gets a timeout only while a delayed
or queued packet is waiting, until the next one is due, so a draining queue costs one wake-up
per departure time (epoll rounds up to whole milliseconds: a fast queue leaves in small bursts)
and an empty one costs nothing.

Back-pressure: a port whose socket is full (a shaped link's qdisc holds as many frames as the
kernel's default send buffer pays for) refuses frames; they are kept, in order, in the
`OutputStage` (output.py), the loop waits for that socket to become writable (EPOLLOUT, asked
for only while it is blocked), and the switch is told how much room the stage has left, so its
egress queues stop draining and fill as simple_switch's do behind its blocking send. Nothing is
dropped for a full socket; `tx_errors` counts only frames the kernel lost (interface down).

Other threads (P4Runtime packet-out, signal handlers) talk to the loop through `packet_out()`
and `stop()`, which queue work and wake it through an eventfd.
"""

from __future__ import annotations

import math
import os
import select
import sys
import time
from collections import deque
from typing import Callable, Protocol

from p4switch.ports.forwarding import Forwarder, group_by_port
from p4switch.ports.output import CAPACITY, OutputStage

DEFAULT_BATCH_LIMIT = 64


class SocketPort(Protocol):
    port: int

    def fileno(self) -> int: ...

    def receive_batch(self, limit: int) -> list[bytes]: ...

    def send(self, data: bytes) -> bool: ...

    # optional: `transmit(frames) -> (taken, failed)`: one call for many frames, stopping
    # where the socket is full (the frames from `taken` on are kept and sent when writable)


class PortBundle(Protocol):
    """Any number of ports behind one descriptor (simple_switch's `--packet-in` socket,
    p4switch/ports/packetin_socket.py): packets come tagged with their port, and a port that
    no `SocketPort` has is sent through the bundle. Its sends never push back."""

    def fileno(self) -> int: ...

    def receive_tagged(self, limit: int) -> list[tuple[int, list[bytes]]]: ...

    def transmit_port(self, port: int, frames: list[bytes]) -> tuple[int, int]: ...


class PacketDriver:
    """Runs `forwarder` over `ports` until `stop()`; CPU-port output goes to `packet_in`."""

    def __init__(self, forwarder: Forwarder, ports: list[SocketPort], *,
                 packet_in: Callable[[bytes], None] | None = None,
                 bundle: PortBundle | None = None,
                 batch_limit: int = DEFAULT_BATCH_LIMIT,
                 clock: Callable[[], float] = time.monotonic,
                 output_capacity: int = CAPACITY) -> None:
        self.forwarder = forwarder
        self.ports = {port.port: port for port in ports}
        self.packet_in = packet_in
        self.bundle = bundle
        self.batch_limit = batch_limit
        self.clock = clock
        self.packet_in_errors = 0
        self.packet_outs_dropped = 0
        self._packet_outs: deque[bytes] = deque()
        self._stopping = False
        self._wake_fd = os.eventfd(0, os.EFD_NONBLOCK | os.EFD_CLOEXEC)
        # port number -> transmit(frames) -> (taken, failed): one call per port and turn
        self._senders = {number: _transmitter(port) for number, port in self.ports.items()}
        self._by_fd: dict[int, SocketPort | PortBundle | None] = {}   # epoll's fd -> port
        self.output = OutputStage(output_capacity)
        self._epoll: select.epoll | None = None
        self._room_told: int | None = None     # the output room the switch was last given

    # -- called from other threads ---------------------------------------------------------------
    def packet_out(self, data: bytes) -> None:
        """Inject `data` into the pipeline as arriving on the CPU port (thread-safe).

        Without a CPU port there is nowhere for it to arrive: it is counted and dropped.
        """
        if self.forwarder.cpu_port is None:
            self.packet_outs_dropped += 1
            return
        self._packet_outs.append(bytes(data))
        self._wake()

    def stop(self) -> None:
        """Ask the loop to return (thread-safe; safe in a signal handler)."""
        self._stopping = True
        self._wake()

    def _wake(self) -> None:
        try:
            os.eventfd_write(self._wake_fd, 1)
        except (BlockingIOError, OSError):
            pass                 # counter saturated or closed: the loop is awake or gone anyway

    # -- the loop ---------------------------------------------------------------------------------
    def run(self) -> None:
        """Move packets until `stop()`. Exceptions from the pipeline propagate (BMv2 aborts)."""
        epoll = select.epoll()
        try:
            self._by_fd = {self._wake_fd: None}
            for port in self.ports.values():
                self._by_fd[port.fileno()] = port
            if self.bundle is not None:
                self._by_fd[self.bundle.fileno()] = self.bundle
            for fd in self._by_fd:
                epoll.register(fd, select.EPOLLIN)
            self._epoll = epoll
            while not self._stopping:
                self._turn(epoll)
        finally:
            self._epoll = None
            epoll.close()

    def _turn(self, epoll: select.epoll) -> None:
        """One wake-up: wait for frames (or the next due packet), then run and send them.
        (epoll directly: the selectors module's bookkeeping cost ~1 us per wake-up.)"""
        due = self.forwarder.next_due()
        if due is None:
            timeout = -1.0
        else:               # whole milliseconds up, as epoll has them: no early wake-ups
            timeout = math.ceil(max(0.0, due - self.clock()) * 1e3) * 1e-3
        received: list[tuple[int, list[bytes]]] = []     # (port, its frames), in turn
        limit, by_fd = self.batch_limit, self._by_fd
        release = due is not None   # nothing was held before: nothing can be due now ...
        for fd, events in epoll.poll(timeout):
            port = by_fd[fd]
            if port is None:
                self._drain_wake_fd()
                continue
            if port is self.bundle:
                received += port.receive_tagged(limit)
                continue
            if events & select.EPOLLOUT:
                self._writable(port)
                release = True      # ... unless a port took frames: room for the queues
            if events != select.EPOLLOUT:
                frames = port.receive_batch(limit)
                if frames:
                    received.append((port.port, frames))
        if self._packet_outs:
            outs = []
            while self._packet_outs:
                outs.append(self._packet_outs.popleft())
            received.append((self.forwarder.cpu_port, outs))
        now = self.clock()
        if release:
            self._send(self.forwarder.release(now))
        if received:
            if self.bundle is not None:     # one socket for every port: keep the order
                self._send(self.forwarder.forward(
                    [(port, data) for port, frames in received for data in frames], now))
            else:
                self._send_by_port(self.forwarder.forward_received(received, now))

    def _drain_wake_fd(self) -> None:
        try:
            os.eventfd_read(self._wake_fd)
        except BlockingIOError:
            pass

    def _send(self, departures: list[tuple[int, bytes]]) -> None:
        """Send departures, per port in their order, one call per port; through a bundle,
        which carries every port, each run of one port's frames in turn, so the order across
        ports is kept too."""
        if not departures:
            return
        if self.bundle is None:
            self._send_by_port(group_by_port(departures))
            return
        start = 0
        for index in range(1, len(departures) + 1):
            if index == len(departures) or departures[index][0] != departures[start][0]:
                port = departures[start][0]
                self._send_by_port({port: [data for _, data in departures[start:index]]})
                start = index

    def _send_by_port(self, by_port: dict[int, list[bytes]]) -> None:
        """Send each port's frames in their order (CPU-port frames go to packet_in)."""
        cpu_port = self.forwarder.cpu_port
        if self.packet_in is not None and cpu_port in by_port:
            for data in by_port.pop(cpu_port):
                self._deliver_packet_in(data)
        senders, output = self._senders, self.output
        waiting = output.waiting
        for number, frames in by_port.items():
            sender = senders.get(number) or self._bundle_sender(number)
            if sender is None:
                self.forwarder.counters[number].tx_errors += len(frames)
                continue
            if waiting:                  # something waits: these go behind it
                output.append(number, frames)
                continue
            taken, failed = sender(frames)
            if failed:
                self.forwarder.counters[number].tx_errors += failed
            if taken < len(frames):      # the socket is full: keep the rest, wait for it
                output.append(number, frames[taken:])
                output.taken(0, blocked=True)
                self._watch_writable(number, True)
        if waiting or self._room_told is not None:
            self._flush_output()

    # -- back-pressure ----------------------------------------------------------------------------
    def _writable(self, port: SocketPort) -> None:
        """EPOLLOUT on a blocked port: send what waits for it (and behind it)."""
        self._watch_writable(port.port, False)
        self.output.writable(port.port)
        self._flush_output()

    def _flush_output(self) -> None:
        """Send from the head of the output stage until it is empty or a port blocks, then
        tell the switch how much room its egress may use now."""
        output, senders = self.output, self._senders
        while True:
            run = output.head_run()
            if run is None:
                break
            number, frames = run
            taken, failed = (senders.get(number) or self._bundle_sender(number))(frames)
            if failed:
                self.forwarder.counters[number].tx_errors += failed
            blocked = taken < len(frames)
            output.taken(taken, blocked=blocked)
            if blocked:
                self._watch_writable(number, True)
                break
        room = output.room()
        if room is not None or self._room_told is not None:
            # told every time: the switch spends its room as it admits packets
            self._room_told = room
            self.forwarder.set_output_room(room)

    def _bundle_sender(self, number: int) -> Callable[[list[bytes]], tuple[int, int]] | None:
        """Port `number`'s sender through the bundle, or None without one."""
        bundle = self.bundle
        if bundle is None:
            return None
        return lambda frames: bundle.transmit_port(number, frames)

    def _watch_writable(self, number: int, on: bool) -> None:
        epoll = self._epoll
        port = self.ports.get(number)
        if epoll is None or port is None:
            return
        events = select.EPOLLIN | select.EPOLLOUT if on else select.EPOLLIN
        epoll.modify(port.fileno(), events)

    def _deliver_packet_in(self, data: bytes) -> None:
        try:
            self.packet_in(data)
        except Exception as error:  # a broken control channel must not stop the data plane
            self.packet_in_errors += 1
            if self.packet_in_errors == 1:
                print(f"inaemu switch: packet-in to the P4Runtime server failed: {error!r}",
                      file=sys.stderr, flush=True)

    def close(self) -> None:
        """Release the wake-up eventfd (ports are closed by their owner)."""
        if self._wake_fd >= 0:
            os.close(self._wake_fd)
            self._wake_fd = -1


def _transmitter(port: SocketPort) -> Callable[[list[bytes]], tuple[int, int]]:
    """(frames) -> (taken, failed): the port's own `transmit`, or one `send` per frame for
    ports that never block (in-process and test ports: a refused frame is lost)."""
    transmit = getattr(port, "transmit", None)
    if transmit is not None:
        return transmit
    send = port.send
    return lambda frames: (len(frames), sum(not send(data) for data in frames))
