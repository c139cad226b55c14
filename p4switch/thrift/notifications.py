"""BMv2's notifications socket: a nanomsg PUB socket (`--notifications-addr`, by default
`ipc:///tmp/bmv2-<device id>-notifications.ipc`, what `bm_mgmt_get_info` names) on which
simple_switch publishes learning notifications to any number of SUB sockets.

`NotificationsSocket.publish` only queues: the socket's thread accepts subscribers, checks each
one's greeting (a SUB socket), and sends every queued message to every subscriber. Like a PUB
socket, it keeps nothing for later: a message published while no one subscribes is gone, and a
subscriber that does not read for `SEND_TIMEOUT_S` is dropped.
"""

from __future__ import annotations

import os
import select
import socket
import threading
from collections import deque

from p4switch.ports import sp
from p4switch.ports.sp_listener import Listener

SEND_TIMEOUT_S = 1.0
READ_BYTES = 4096


def default_address(device_id: int) -> str:
    return f"ipc:///tmp/bmv2-{device_id}-notifications.ipc"


class NotificationsSocket:
    def __init__(self, address: str) -> None:
        self.address = address
        self._listener: Listener | None = None
        self._subscribers: dict[socket.socket, sp.SPConnection] = {}
        self._queue: deque[bytes] = deque()
        self._lock = threading.Lock()
        self._wake = os.eventfd(0, os.EFD_NONBLOCK | os.EFD_CLOEXEC)
        self._stopping = False
        self._thread: threading.Thread | None = None
        self.published = 0
        self.subscribers_dropped = 0

    def start(self) -> None:
        """Bind (PortError if the address cannot be had) and serve in a thread."""
        self._listener = Listener(self.address, "--notifications-addr")
        self._thread = threading.Thread(target=self._run, name="notifications", daemon=True)
        self._thread.start()

    def publish(self, message: bytes) -> None:
        with self._lock:
            self._queue.append(message)
        os.eventfd_write(self._wake, 1)

    def close(self) -> None:
        if self._stopping:
            return
        self._stopping = True
        os.eventfd_write(self._wake, 1)
        if self._thread is not None:
            self._thread.join(timeout=5.0)
        for conn in list(self._subscribers):
            conn.close()
        self._subscribers.clear()
        if self._listener is not None:
            self._listener.close()
        os.close(self._wake)

    def _run(self) -> None:
        listener = self._listener.socket
        while not self._stopping:
            readable, _, _ = select.select([listener, self._wake, *self._subscribers], [], [])
            if self._stopping:
                break
            if listener in readable:
                self._accept(listener)
            for conn in readable:
                if conn in self._subscribers:
                    self._read(conn)
            if self._wake in readable:
                os.eventfd_read(self._wake)
                self._send_queued()

    def _accept(self, listener: socket.socket) -> None:
        try:
            conn, _ = listener.accept()
        except OSError:
            return
        framing = sp.SPConnection(self._listener.transport, protocol=sp.PUB_V0)
        conn.settimeout(SEND_TIMEOUT_S)
        try:
            conn.sendall(framing.greeting())
        except OSError:
            conn.close()
            return
        self._subscribers[conn] = framing

    def _read(self, conn: socket.socket) -> None:
        """A subscriber sends only its greeting; its end, or bytes that are no SUB greeting,
        drop it."""
        try:
            data = conn.recv(READ_BYTES)
            if data:
                self._subscribers[conn].receive(data)
                return
        except (OSError, sp.SPProtocolError):
            pass
        self._drop(conn)

    def _send_queued(self) -> None:
        with self._lock:
            messages = list(self._queue)
            self._queue.clear()
        for message in messages:
            self.published += 1
            for conn, framing in list(self._subscribers.items()):
                if not framing.greeted:
                    continue        # not yet known to be a subscriber
                try:
                    conn.sendall(framing.frame(message))
                except OSError:
                    self.subscribers_dropped += 1
                    self._drop(conn)

    def _drop(self, conn: socket.socket) -> None:
        self._subscribers.pop(conn, None)
        conn.close()


__all__ = ["NotificationsSocket", "default_address"]
