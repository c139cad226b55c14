"""Runs a `CollectiveSession` (PS, hierarchical ring, double binary tree, halving-doubling, 2D
torus) over TCP: one connection per pair of ranks (a full mesh: which pairs a plan uses depends
on the vector's length, known only at the call; a session per length is built then). The calls
of every length share the connections, so one `CollectiveCalls` decodes them and hands each
message to its call: a peer's next call may begin in the same read as the end of this one.

Set-up: every rank listens on its `peers[rank]` port; for each higher rank it
connects (retrying until `connect_timeout`, the peer may not listen yet) and sends a HELLO
(job, rank, n); connections from lower-ranked peers are accepted and named by their HELLO.
A call moves bytes with a non-blocking select loop over every connection (sending and
receiving at once, so nothing can deadlock on full buffers) until the session is done and
every byte it produced is sent. The same failure rules as the ring (hosts/tcp_driver.py): a
peer closing before the call is done or a socket error is `PeerFailed`; no byte moving for
`idle_timeout`, or the hard deadline, is `AllreduceTimeout`.
"""

from __future__ import annotations

import select
import socket
import time

import numpy as np

from .collective_session import CollectiveCalls
from .errors import AllreduceTimeout, PeerFailed, RingProtocolError
from .ring_wire import HEADER_BYTES, Hello, StreamDecoder, encode
from .scheduling import yielding_to_the_switch
from .tcp_driver import CONNECT_RETRY, READ_SIZE, limit_receive_window, listen


class TcpCollective:
    def __init__(self, algo: str, *, rank: int, n: int, job: int, peers: list[tuple[str, int]],
                 accumulate: str = "float32", bind_address: str = "0.0.0.0",
                 connect_timeout: float = 20.0, idle_timeout: float = 10.0,
                 switch_blocks: list[list[int]] | None = None):
        self.algo, self.rank, self.n, self.job = algo, rank, n, job
        self.switch_blocks = switch_blocks     # ranks by their switch (hierarchical ring)
        self.accumulate, self.idle_timeout = accumulate, idle_timeout
        # `session.counters` (over every call of every length) is what hosts/api.py reads
        self.session = CollectiveCalls(rank=rank, n=n, plan_for=self._plan,
                                       accumulate=accumulate)
        self._socks: dict[int, socket.socket] = {}
        needed = set(range(n)) - {rank}
        listener = listen(bind_address, peers[rank][1]) if needed else None
        if listener is not None:
            listener.listen(max(4, n))     # every lower rank connects at once
        deadline = time.monotonic() + connect_timeout
        try:
            for peer in sorted(p for p in needed if p > rank):
                self._socks[peer] = self._connect(peers[peer], deadline, peer)
                self._socks[peer].sendall(encode(Hello(job=job, rank=rank, n=n)))
            while len(self._socks) < len(needed):
                remaining = deadline - time.monotonic()
                if remaining <= 0 or not select.select([listener], [], [], remaining)[0]:
                    missing = sorted(needed - set(self._socks))
                    raise PeerFailed(f"rank {rank}: ranks {missing} did not connect within "
                                     f"{connect_timeout:g} s")
                conn, _ = listener.accept()
                peer = self._read_hello(conn, deadline)
                if peer not in needed or peer in self._socks:
                    conn.close()
                    raise PeerFailed(f"rank {rank}: unexpected connection from rank {peer}")
                self._socks[peer] = conn
        except (OSError, RingProtocolError) as error:
            self.close()
            raise PeerFailed(f"rank {rank}: set-up failed: {error}") from None
        except PeerFailed:
            self.close()
            raise
        finally:
            if listener is not None:
                listener.close()
        for sock in self._socks.values():
            sock.setblocking(False)
            sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)

    def _connect(self, address: tuple[str, int], deadline: float, peer: int) -> socket.socket:
        while True:
            sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
            limit_receive_window(sock)   # data flows both ways on these connections
            try:
                sock.connect(address)
                return sock
            except OSError as error:
                sock.close()
                if time.monotonic() > deadline:
                    raise PeerFailed(f"rank {self.rank}: cannot connect to rank {peer} "
                                     f"at {address[0]}:{address[1]}: {error.strerror}") from None
                time.sleep(CONNECT_RETRY)

    def _read_hello(self, conn: socket.socket, deadline: float) -> int:
        decoder, data = StreamDecoder(), b""
        conn.settimeout(max(0.1, deadline - time.monotonic()))
        while len(data) < HEADER_BYTES:
            chunk = conn.recv(HEADER_BYTES - len(data))
            if not chunk:
                raise PeerFailed(f"rank {self.rank}: a peer closed before its HELLO")
            data += chunk
        (hello,) = decoder.feed(data)
        if not isinstance(hello, Hello) or hello.job != self.job or hello.n != self.n:
            raise PeerFailed(f"rank {self.rank}: bad HELLO {hello}")
        conn.settimeout(None)
        return hello.rank

    def _plan(self, length: int):
        from .collectives import plan_for
        return plan_for(self.algo, self.rank, self.n, length, switch_blocks=self.switch_blocks)

    def allreduce(self, vector: np.ndarray, *, timeout: float) -> np.ndarray:
        with yielding_to_the_switch():
            return self._call(self.session, vector, timeout)

    def _call(self, session: CollectiveCalls, vector: np.ndarray,
              timeout: float) -> np.ndarray:
        outgoing = {p: bytearray() for p in self._socks}
        for peer, data in session.start(vector):
            outgoing[peer] += data
        hard = time.monotonic() + timeout
        moved = time.monotonic()
        peer_of = {sock.fileno(): p for p, sock in self._socks.items()}
        try:
            while not (session.done and not any(outgoing.values())):
                now = time.monotonic()
                if now > hard:
                    raise AllreduceTimeout(f"rank {session.rank}: call deadline of {timeout:g} s")
                if now - moved > self.idle_timeout:
                    raise AllreduceTimeout(f"rank {session.rank}: no byte moved for "
                                           f"{self.idle_timeout:g} s")
                readers = list(self._socks.values())
                writers = [self._socks[p] for p, b in outgoing.items()
                           if b and p in self._socks]
                readable, writable, _ = select.select(readers, writers, [], 0.2)
                for sock in writable:
                    peer = peer_of[sock.fileno()]
                    sent = sock.send(outgoing[peer])
                    del outgoing[peer][:sent]
                    moved = time.monotonic()
                for sock in readable:
                    peer = peer_of[sock.fileno()]
                    data = sock.recv(READ_SIZE)
                    if not data:
                        if not session.expects_from(peer) and not outgoing[peer]:
                            self._socks.pop(peer).close()     # it is done with us
                            continue
                        raise PeerFailed(f"rank {session.rank}: rank {peer} closed its "
                                         f"connection before the call was done")
                    moved = time.monotonic()
                    for dest, out in session.receive(peer, data):
                        outgoing[dest] += out
        except OSError as error:
            self.close()
            raise PeerFailed(f"rank {session.rank}: socket error: {error.strerror}") from None
        except (PeerFailed, AllreduceTimeout, RingProtocolError):
            self.close()
            raise
        return session.result

    def close(self) -> None:
        for sock in self._socks.values():
            try:
                sock.close()
            except OSError:
                pass
        self._socks = {}


def open_collective(config, algo: str) -> TcpCollective:
    """A `TcpCollective` for an `AllreduceConfig` (hosts/api.py): rank = worker, peers from
    `config.peers`; the hierarchical ring groups ranks by `config.switch_blocks` (the ranks
    under each switch, from the topology) or, without them, by `grid_groups`."""
    c = config
    if len(c.peers) != c.n:
        from .errors import ConfigError
        raise ConfigError(f"config.peers: {algo} needs one 'host:port' per worker ({c.n}), got "
                          f"{len(c.peers)}")
    return TcpCollective(algo, rank=c.worker, n=c.n, job=c.job,
                         peers=[c.peer(r) for r in range(c.n)], accumulate=c.accumulate,
                         bind_address=c.bind_address, connect_timeout=c.connect_timeout,
                         idle_timeout=c.idle_timeout,
                         switch_blocks=[list(b) for b in c.switch_blocks] or None)
