"""Runs a RingSession over TCP: one connection to the right neighbour, one from the left.

Set-up: listen first, then connect to the right neighbour (retrying until the connect deadline,
since it may not listen yet), send a HELLO, then accept the left neighbour and check its HELLO
(job, rank, ring size). A call moves bytes with a non-blocking select loop (sending and receiving
at once, so large segments cannot deadlock the ring).

Failure rules, so no rank ever hangs: the left neighbour closing or resetting before the call is
done is `PeerFailed`; the right one closing is `PeerFailed` as soon as there is something left to
send it; any socket error is `PeerFailed`; no byte moving for `idle_timeout` seconds is
`AllreduceTimeout`, and so is the call's hard deadline. A failing rank closes both connections,
so its neighbours fail at once too and the failure travels around the ring.
"""

from __future__ import annotations

import select
import socket
import time
from typing import Callable

import numpy as np

from .errors import AllreduceTimeout, PeerFailed, RingProtocolError
from .ring_session import RingSession
from .ring_wire import HEADER_BYTES, Hello, StreamDecoder
from .scheduling import yielding_to_the_switch

CONNECT_RETRY = 0.05
READ_SIZE = 1 << 20
# The receive buffer of every data connection, set before listen/connect (the window scale is
# agreed in the handshake). It caps a flow's bytes in flight, as the simulator's transport
# model does (inaemu/sim/reliable.py: window_bytes is this): left to autotuning (up to
# tcp_rmem's 6 MiB) a flow could fill the 1000-frame queue of its shaped link, its
# acknowledgements then waited behind the next rank's full queue (1.2 s at 10 Mbit/s) and
# CUBIC, after each loss, took seconds to open its window again. Measured with ResNet-50's
# ring over 16 ranks at 10 Mbit/s on Mininet: 206.6 s with autotuning, 198.5 s with this.
RECEIVE_WINDOW = 256 * 1024


def limit_receive_window(sock: socket.socket) -> None:
    """Cap what the peer may have in flight to this socket (see RECEIVE_WINDOW)."""
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, RECEIVE_WINDOW)


def listen(address: str = "0.0.0.0", port: int = 0) -> socket.socket:
    """A listening socket for the left neighbour (port 0: any free port)."""
    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    limit_receive_window(sock)           # accepted connections inherit it
    try:
        sock.bind((address, port))
        sock.listen(4)
    except OSError as error:
        sock.close()
        raise PeerFailed(f"cannot listen on {address}:{port}: {error.strerror}") from None
    return sock


class TcpRing:
    """Rank `session.rank`'s two ring connections; `allreduce` may be called many times."""

    def __init__(self, session: RingSession, *, job: int, listener: socket.socket | None,
                 right: tuple[str, int], connect_timeout: float, idle_timeout: float,
                 clock: Callable[[], float] = time.monotonic):
        self.session, self.job = session, job
        self.idle_timeout, self.clock = idle_timeout, clock
        self.left_rank = (session.rank - 1) % session.n
        self.right_rank = (session.rank + 1) % session.n
        self._right_address = right
        self._right: socket.socket | None = None
        self._left: socket.socket | None = None
        self._right_closed = False
        if session.n > 1 and listener is None:
            raise PeerFailed("a ring of more than one rank needs a listening socket")
        try:
            if session.n > 1:
                deadline = clock() + connect_timeout
                self._right = self._connect_right(deadline)
                self._left = self._accept_left(listener, deadline)
        except BaseException:
            self.close()
            raise
        finally:
            if listener is not None:
                listener.close()

    def close(self) -> None:
        for sock in (self._left, self._right):
            if sock is not None:
                sock.close()
        self._left = self._right = None

    def __enter__(self) -> "TcpRing":
        return self

    def __exit__(self, *exc) -> None:
        self.close()

    # ---- set-up -----------------------------------------------------------------------------

    def _connect_right(self, deadline: float) -> socket.socket:
        host, port = self._right_address
        last = "no attempt"
        while True:
            remaining = deadline - self.clock()
            if remaining <= 0:
                raise PeerFailed(f"rank {self.session.rank}: cannot connect to the right "
                                 f"neighbour rank {self.right_rank} at {host}:{port}: {last}")
            try:
                # the kernel retransmits a lost SYN; a per-attempt timeout of its initial RTO
                # (1 s) gave up just as the retried SYN's answer came, closing a connected
                # socket the neighbour had already accepted (a refused one returns at once)
                sock = socket.create_connection((host, port), timeout=remaining)
            except OSError as error:
                last = error.strerror or str(error)
                time.sleep(min(CONNECT_RETRY, max(0.0, deadline - self.clock())))
                continue
            sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
            sock.settimeout(max(0.01, deadline - self.clock()))
            try:
                sock.sendall(self.session.hello(self.job))
            except OSError as error:
                sock.close()
                last = error.strerror or str(error)
                continue
            return sock

    def _accept_left(self, listener: socket.socket, deadline: float) -> socket.socket:
        """The left neighbour's connection, from its HELLO. A connection closed before its
        HELLO is one its sender gave up on (it connects again): it is dropped, and accepting
        goes on until the deadline."""
        abandoned = ""
        while True:
            remaining = deadline - self.clock()
            readable, _, _ = select.select([listener], [], [], max(0.0, remaining))
            if not readable:
                raise PeerFailed(f"rank {self.session.rank}: the left neighbour rank "
                                 f"{self.left_rank} did not connect in time{abandoned}")
            sock, peer = listener.accept()
            sock.settimeout(max(0.01, deadline - self.clock()))
            header = b""
            try:
                while len(header) < HEADER_BYTES:
                    data = sock.recv(HEADER_BYTES - len(header))
                    if not data:
                        break
                    header += data
            except OSError as error:
                sock.close()
                raise PeerFailed(f"rank {self.session.rank}: no HELLO from {peer[0]}:{peer[1]}: "
                                 f"{error.strerror or error}") from None
            if len(header) < HEADER_BYTES:
                sock.close()
                abandoned = (f" ({peer[0]}:{peer[1]} closed the connection before sending "
                             "its HELLO)")
                continue
            break
        try:
            (hello,) = StreamDecoder().feed(header)
        except RingProtocolError as error:
            sock.close()
            raise RingProtocolError(f"rank {self.session.rank}: {peer[0]}:{peer[1]} is not a "
                                    f"ring peer: {error}") from None
        expected = Hello(job=self.job, rank=self.left_rank, n=self.session.n)
        if hello != expected:
            sock.close()
            raise RingProtocolError(f"rank {self.session.rank}: expected {expected} from the "
                                    f"left neighbour, {peer[0]}:{peer[1]} sent {hello}")
        sock.setblocking(False)
        self._right.setblocking(False)
        return sock

    # ---- a call -----------------------------------------------------------------------------

    def allreduce(self, vector: np.ndarray, *, timeout: float) -> np.ndarray:
        if self.session.n > 1 and self._left is None:
            raise PeerFailed(f"rank {self.session.rank}: the ring connections are closed")
        try:
            with yielding_to_the_switch():
                return self._run(vector, timeout)
        except BaseException:
            self.close()         # neighbours see the connections close and fail at once
            raise

    def _run(self, vector: np.ndarray, timeout: float) -> np.ndarray:
        rank = self.session.rank
        hard_deadline = self.clock() + timeout
        out = bytearray(self.session.start(vector))
        last_progress = self.clock()
        while not (self.session.done and not out):
            if out and self._right_closed:
                raise PeerFailed(f"rank {rank}: the right neighbour rank {self.right_rank} "
                                 "closed its connection before the call was done")
            now = self.clock()
            if now >= hard_deadline:
                raise AllreduceTimeout(f"rank {rank}: ring all-reduce not finished after "
                                       f"{timeout:g} s")
            if now - last_progress >= self.idle_timeout:
                raise AllreduceTimeout(f"rank {rank}: no progress for {self.idle_timeout:g} s "
                                       f"(left neighbour rank {self.left_rank} silent)")
            wait = min(hard_deadline, last_progress + self.idle_timeout) - now
            readers = [self._left] + ([] if self._right_closed else [self._right])
            writers = [self._right] if out else []
            readable, writable, _ = select.select(readers, writers, [], max(0.0, wait))
            if self._left in readable:
                out += self._read_left()
                last_progress = self.clock()
            if self._right in readable:
                self._check_right()
                last_progress = self.clock()
            if self._right in writable and out:
                sent = self._io(self._right.send, out, "send to", self.right_rank)
                del out[:sent]
                last_progress = self.clock()
        return self.session.result

    def _read_left(self) -> bytes:
        data = self._io(self._left.recv, READ_SIZE, "receive from", self.left_rank)
        if data is None:
            return b""
        if not data:
            if self.session.done:
                return b""
            raise PeerFailed(f"rank {self.session.rank}: the left neighbour rank "
                             f"{self.left_rank} closed its connection before the call was done")
        return self.session.receive(data)

    def _check_right(self) -> None:
        """The right neighbour never sends: readable means it closed (or broke the protocol)."""
        data = self._io(self._right.recv, 1, "receive from", self.right_rank)
        if data == b"":
            self._right_closed = True
        elif data:
            raise RingProtocolError(f"rank {self.session.rank}: the right neighbour rank "
                                    f"{self.right_rank} sent data on the ring's forward link")

    def _io(self, operation, argument, what: str, peer: int):
        try:
            return operation(argument)
        except (BlockingIOError, InterruptedError):
            return None if what.startswith("receive") else 0
        except OSError as error:
            raise PeerFailed(f"rank {self.session.rank}: cannot {what} neighbour rank {peer}: "
                             f"{error.strerror or error}") from None
