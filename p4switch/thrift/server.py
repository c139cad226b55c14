"""The Thrift runtime server's sockets: one thread accepts, one thread per client connection.

All the protocol is `connection.RuntimeConnection`'s; this only moves bytes. The calls of all
connections are serialized by the switch's lock (taken in `RuntimeService.call`), the lock the
packet path and the P4Runtime server take too.
"""

from __future__ import annotations

import os
import socket
import threading
from collections.abc import Callable

from p4switch.thrift.binary import ProtocolError
from p4switch.thrift.connection import RuntimeConnection


class ThriftServerError(Exception):
    """The server could not start (the port is taken, the address is not this host's)."""


class ThriftRuntimeServer:
    def __init__(self, service, host: str = "0.0.0.0", port: int = 9090,
                 log: Callable[[str], None] | None = None):
        self.service = service
        self.host = host
        self.port = port
        self.log = log or (lambda line: None)
        self._listener: socket.socket | None = None
        self._clients: set[socket.socket] = set()
        self._lock = threading.Lock()
        self._stopping = False

    def start(self) -> int:
        """Listen and serve in the background; the port (the one bound, if 0 was asked)."""
        try:
            if self.host in ("0.0.0.0", "") and socket.has_dualstack_ipv6():
                # every address, IPv6 and IPv4, as BMv2's Thrift server listens
                listener = socket.create_server(("", self.port), family=socket.AF_INET6,
                                                dualstack_ipv6=True)
            else:
                listener = socket.create_server((self.host, self.port))
        except OSError as e:
            why = os.strerror(e.errno) if e.errno else str(e)
            raise ThriftServerError(f"cannot serve Thrift on {self.host}:{self.port}: "
                                    f"{why}") from None
        self._listener = listener
        self.port = listener.getsockname()[1]
        threading.Thread(target=self._accept, name="thrift-accept", daemon=True).start()
        return self.port

    def stop(self) -> None:
        self._stopping = True
        if self._listener is not None:
            try:
                self._listener.shutdown(socket.SHUT_RDWR)
            except OSError:
                pass
            self._listener.close()
        with self._lock:
            clients = list(self._clients)
        for sock in clients:
            try:
                sock.shutdown(socket.SHUT_RDWR)
            except OSError:
                pass

    def _accept(self) -> None:
        while not self._stopping:
            try:
                sock, peer = self._listener.accept()
            except OSError:
                return
            with self._lock:
                self._clients.add(sock)
            threading.Thread(target=self._serve, args=(sock, peer), name="thrift-client",
                             daemon=True).start()

    def _serve(self, sock: socket.socket, peer) -> None:
        connection = RuntimeConnection(self.service, self.log)
        try:
            while True:
                data = sock.recv(65536)
                if not data:
                    return
                reply = connection.receive(data)
                if reply:
                    sock.sendall(reply)
        except ProtocolError as e:
            self.log(f"thrift: closing the connection from {peer[0]}:{peer[1]}: {e}")
        except OSError:
            return
        finally:
            with self._lock:
                self._clients.discard(sock)
            sock.close()
