"""The `--packet-in ADDR` socket: every switch port behind one nanomsg PAIR socket, as BMv2's.

`PacketInSocket` binds `ipc://PATH` (a Unix socket) or `tcp://HOST:PORT` and takes one peer at
a time, as a PAIR socket does: a second peer that connects while one is there is closed at once
(simple_switch ignores it), and after the peer leaves the next one is taken. The wire format is
`sp.py`'s, the messages `packetin.py`'s.

For the packet driver it is a *port bundle*: one descriptor for many port numbers. A reader
thread reads the peer, answers its requests, and queues its packets (at most `capacity`; then it
stops reading, and the peer's sends wait, as they do on a full nanomsg socket); `fileno()` is an
eventfd readable while packets wait, and `receive_tagged` hands them over as (port, frames) runs
in arrival order. `transmit_port` sends the frames the switch emits as PACKET_OUT messages on
the driver's thread; while no peer is connected they wait (as simple_switch's sends wait for a
peer), at most `capacity` of them, and later ones are dropped and counted.
"""

from __future__ import annotations

import os
import select
import socket
import threading
from collections import deque
from typing import Callable

from p4switch.ports import sp
from p4switch.ports.packetin import PacketInEndpoint, packet_out
from p4switch.ports.sp_listener import Listener, parse_address

QUEUE_CAPACITY = 1024
SEND_POLL_S = 0.5           # how often a blocked send looks at `interrupt()`
READ_BYTES = 1 << 16


class PacketInSocket:
    """BMv2's packet-in socket on `address`; `start()` binds and starts the reader."""

    def __init__(self, address: str, *, capacity: int = QUEUE_CAPACITY,
                 log: Callable[[str], None] = lambda line: None) -> None:
        self.address = address
        self.transport, _ = parse_address(address)
        self.capacity = capacity
        self.log = log
        self.endpoint = PacketInEndpoint()
        self._listener: Listener | None = None
        self._peer: socket.socket | None = None
        self._framing: sp.SPConnection | None = None
        self._send_lock = threading.Lock()        # the reader's replies, the driver's packets
        self._condition = threading.Condition()
        self._queue: deque[tuple[int, bytes]] = deque()
        self._ready_fd = os.eventfd(0, os.EFD_NONBLOCK | os.EFD_CLOEXEC)
        self._stop_fd = os.eventfd(0, os.EFD_NONBLOCK | os.EFD_CLOEXEC)
        self._signalled = False
        self._stopping = False
        self._interrupted = False      # a send waiting for a peer that reads nothing gives up
        self._thread: threading.Thread | None = None
        self._held: deque[tuple[bytes, bool]] = deque()   # (message, is a packet): no peer yet
        self.packets_in = 0
        self.packets_out = 0
        self.dropped_no_peer = 0
        self.peers = 0
        self.peers_refused = 0
        self.protocol_errors = 0
        self._closed = False

    # -- start and stop ---------------------------------------------------------------------------
    def start(self) -> None:
        """Bind and listen (PortError if the address cannot be had), then read in a thread."""
        self._listener = Listener(self.address, "--packet-in")
        self._thread = threading.Thread(target=self._run, name="packet-in", daemon=True)
        self._thread.start()

    def close(self) -> None:
        """Stop the reader, close the sockets, remove the IPC file this socket made; safe
        twice."""
        if self._closed:
            return
        self._closed = True
        with self._condition:
            self._stopping = True
            self._condition.notify_all()
        os.eventfd_write(self._stop_fd, 1)
        peer = self._peer
        if peer is not None:
            try:
                peer.shutdown(socket.SHUT_RDWR)      # a driver blocked in a send returns
            except OSError:
                pass
        if self._thread is not None:
            self._thread.join(timeout=5.0)
        if self._listener is not None:
            self._listener.close()
        for fd in (self._ready_fd, self._stop_fd):
            os.close(fd)

    # -- the reader thread ------------------------------------------------------------------------
    def _run(self) -> None:
        listener = self._listener.socket
        while not self._stopping:
            fds = [listener, self._stop_fd] + ([self._peer] if self._peer is not None else [])
            readable, _, _ = select.select(fds, [], [])
            if self._stopping:
                break
            if listener in readable:
                self._accept()
            if self._peer is not None and self._peer in readable:
                self._read_peer()
        self._drop_peer()

    def _accept(self) -> None:
        try:
            conn, _ = self._listener.socket.accept()
        except OSError:
            return
        if self._peer is not None:               # a PAIR socket has one peer
            self.peers_refused += 1
            conn.close()
            return
        conn.setsockopt(socket.SOL_SOCKET, socket.SO_KEEPALIVE, 1)
        conn.settimeout(SEND_POLL_S)          # sends wake up to see `interrupt()`
        framing = sp.SPConnection(self.transport)
        try:
            conn.sendall(framing.greeting())
        except OSError:
            conn.close()
            return
        with self._send_lock:
            self._peer, self._framing = conn, framing

    def _read_peer(self) -> None:
        peer, framing = self._peer, self._framing
        try:
            data = peer.recv(READ_BYTES)
        except TimeoutError:
            return                           # nothing after all (select said readable)
        except OSError:
            data = b""
        if not data:
            self._drop_peer()
            return
        was_greeted = framing.greeted
        try:
            messages = framing.receive(data)
        except sp.SPProtocolError as error:
            self.protocol_errors += 1
            self.log(f"packet-in {self.address}: {error}; connection closed")
            self._drop_peer()
            return
        if framing.greeted and not was_greeted:
            self.peers += 1
            self._send_held()
        for message in messages:
            handled = self.endpoint.handle(message)
            if handled.packet is not None:
                self._enqueue(handled.packet)
            elif handled.reply is not None:
                self._send_messages([handled.reply], packets=False)
            elif handled.problem is not None:
                self.log(f"packet-in {self.address}: {handled.problem}; message ignored")

    def _drop_peer(self) -> None:
        with self._send_lock:
            peer, self._peer, self._framing = self._peer, None, None
        if peer is not None:
            peer.close()

    def _enqueue(self, packet: tuple[int, bytes]) -> None:
        with self._condition:
            while len(self._queue) >= self.capacity and not self._stopping:
                self._condition.wait()       # the driver takes some: the peer's sends wait
            self._queue.append(packet)
            self.packets_in += 1
            if not self._signalled:
                self._signalled = True
                os.eventfd_write(self._ready_fd, 1)

    # -- the driver's side ------------------------------------------------------------------------
    def fileno(self) -> int:
        return self._ready_fd

    def receive_tagged(self, limit: int) -> list[tuple[int, list[bytes]]]:
        """Up to `limit` waiting packets as (port, frames) runs, in arrival order."""
        runs: list[tuple[int, list[bytes]]] = []
        with self._condition:
            queue = self._queue
            for _ in range(min(limit, len(queue))):
                port, frame = queue.popleft()
                if runs and runs[-1][0] == port:
                    runs[-1][1].append(frame)
                else:
                    runs.append((port, [frame]))
            if not queue and self._signalled:
                self._signalled = False
                try:
                    os.eventfd_read(self._ready_fd)
                except BlockingIOError:
                    pass
            self._condition.notify_all()
        return runs

    def transmit_port(self, port: int, frames: list[bytes]) -> tuple[int, int]:
        """Send `frames` as PACKET_OUT on `port`: (taken, failed); all are taken (held while
        no peer is connected)."""
        self._send_messages([packet_out(port, frame) for frame in frames], packets=True)
        return len(frames), 0

    def _send_messages(self, messages: list[bytes], *, packets: bool) -> None:
        with self._send_lock:
            framing = self._framing
            if framing is None or not framing.greeted:
                room = max(self.capacity - len(self._held), 0)
                self._held.extend((message, packets) for message in messages[:room])
                self.dropped_no_peer += max(len(messages) - room, 0)
                return
            self._write(framing, messages, len(messages) if packets else 0)

    def _send_held(self) -> None:
        """A peer has greeted: what waited for one goes first, in order."""
        with self._send_lock:
            held, self._held = self._held, deque()
            if held and self._framing is not None:
                self._write(self._framing, [message for message, _ in held],
                            sum(packets for _, packets in held))

    def _write(self, framing: sp.SPConnection, messages: list[bytes], packets: int) -> None:
        """Under the send lock: the messages to the peer, whole, waiting while it reads
        nothing (as BMv2's send waits) until `interrupt()`."""
        data = memoryview(b"".join(framing.frame(m) for m in messages))
        while data:
            try:
                data = data[self._peer.send(data):]
            except TimeoutError:
                if self._interrupted:
                    return
            except OSError:
                return                   # the peer left: the reader sees it and drops it
        self.packets_out += packets

    def interrupt(self) -> None:
        """The switch is stopping: a send blocked on a peer that reads nothing gives up (any
        thread; a signal handler too)."""
        self._interrupted = True

    # -- the end ----------------------------------------------------------------------------------
    def port_table(self) -> list[tuple[int, str, bool]]:
        """The ports the peer added: (port, "N/A", up), as BMv2 lists them."""
        return [(port, "N/A", up) for port, up in sorted(self.endpoint.ports.items())]

    def status_line(self) -> str:
        text = (f"packet-in {self.address}: {self.packets_in} packets in, "
                f"{self.packets_out} out, {self.peers} peer{'s' if self.peers != 1 else ''}")
        extra = []
        if self.endpoint.refused:
            extra.append(f"{self.endpoint.refused} messages refused")
        if self.protocol_errors:
            extra.append(f"{self.protocol_errors} connections closed for protocol errors")
        if self.peers_refused:
            extra.append(f"{self.peers_refused} connections refused while a peer was connected")
        if self.dropped_no_peer:
            extra.append(f"{self.dropped_no_peer} packets out dropped with no peer")
        if self._held:
            extra.append(f"{len(self._held)} packets out never delivered (no peer)")
        return text + ("; " + ", ".join(extra) if extra else "")


__all__ = ["PacketInSocket", "parse_address"]
