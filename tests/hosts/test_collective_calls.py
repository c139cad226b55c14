"""Back-to-back plan all-reduces of different lengths over the same connections (as DDP's
gradient buckets are): the bytes of the next call that arrive with the end of the current one
belong to the next call. Regression for the rhd race in tests/train/test_ddp_hook.py: the
driver kept one session (its own stream decoder and call numbers) per vector length, so a
message of the next bucket read in the same recv() as the current bucket's last one was taken
by the current bucket's session ("message 0 has 2080 values, expected 2405", or "bad magic"
when the recv() ended inside the next message).

The TCP test makes that arrival order certain with a relay between rank 1 and rank 0: it holds
rank 1's last message of a call until rank 1 has sent (part of) its first message of the next
call, then writes both in one send. The sans-I/O tests deliver the same order byte by byte.
"""

from __future__ import annotations

import select
import socket
import threading
import time

import numpy as np
import pytest

from hosts.collective_plan import Recv, Send
from hosts.collective_session import CollectiveCalls, CollectiveSession
from hosts.collectives import plan_for
from hosts.errors import RingProtocolError
from hosts.ring_wire import DTYPES, HEADER, HEADER_BYTES, RingKind, Segment, encode
from hosts.tcp_collective import TcpCollective

LENGTHS = [4810, 4160, 4810, 4160]     # rhd on 2 ranks: halves of 2405 and 2080 values


def vectors(rank: int) -> list[np.ndarray]:
    return [np.arange(length, dtype=np.float32) * (rank + 1) + call
            for call, length in enumerate(LENGTHS)]


def expected() -> list[np.ndarray]:
    return [a + b for a, b in zip(vectors(0), vectors(1))]


def message_sizes(buffer: bytes) -> list[int]:
    """Byte sizes of the whole ring_wire messages at the start of `buffer`."""
    sizes, at = [], 0
    while len(buffer) - at >= HEADER_BYTES:
        _, _, kind, code, _, _, _, _, _, count = HEADER.unpack_from(buffer, at)
        size = HEADER_BYTES + count * (DTYPES[code].itemsize if kind else 0)
        if len(buffer) - at < size:
            break
        sizes.append(size)
        at += size
    return sizes


class HoldingRelay(threading.Thread):
    """Relays one TCP connection (rank 0 -> rank 1's port). Rank 1's messages to rank 0 pass at
    once, except message number `hold` (counting from 1): it is written together with the first
    `extra` bytes (None: all) of the message after it, in one send; the rest of that message
    follows only once rank 0 has sent something again (so rank 0 reads the cut part alone)."""

    def __init__(self, target: int, *, hold: int, extra: int | None):
        super().__init__(daemon=True)
        self.listener = socket.create_server(("127.0.0.1", 0))
        self.port = self.listener.getsockname()[1]
        self.target, self.hold, self.extra = target, hold, extra
        self.stop = threading.Event()

    def _connect(self) -> socket.socket:
        """To rank 1, which may not listen yet."""
        deadline = time.monotonic() + 10
        while True:
            try:
                return socket.create_connection(("127.0.0.1", self.target))
            except ConnectionRefusedError:
                if time.monotonic() > deadline:
                    raise
                time.sleep(0.01)

    def run(self) -> None:
        a, _ = self.listener.accept()
        b = self._connect()
        pending, count, held, tail = b"", 0, b"", b""
        with a, b, self.listener:
            while not self.stop.is_set():
                readable, _, _ = select.select([a, b], [], [], 0.05)
                if a in readable:
                    data = a.recv(1 << 16)
                    if not data:
                        return
                    b.sendall(data)
                    if tail:
                        a.sendall(tail)
                        tail = b""
                if b in readable:
                    data = b.recv(1 << 16)
                    if not data:
                        return
                    pending += data
                for size in message_sizes(pending):
                    message, pending = pending[:size], pending[size:]
                    count += 1
                    if count == self.hold:
                        held = message
                    elif count == self.hold + 1:
                        extra = size if self.extra is None else self.extra
                        a.sendall(held + message[:extra])
                        tail = message[extra:]
                    elif tail:
                        tail += message
                    else:
                        a.sendall(message)


def free_ports(count: int) -> list[int]:
    socks = [socket.create_server(("127.0.0.1", 0)) for _ in range(count)]
    ports = [s.getsockname()[1] for s in socks]
    for s in socks:
        s.close()
    return ports


@pytest.mark.parametrize("extra", [None, 7, HEADER_BYTES + 100])
def test_next_calls_message_arriving_with_the_last_one_goes_to_the_next_call(extra) -> None:
    ports = free_ports(2)
    relay = HoldingRelay(ports[1], hold=2, extra=extra)     # rhd, 2 ranks: 2 messages a call
    relay.start()
    results: dict[int, object] = {}

    def run(rank: int, peers: list[int]) -> None:
        try:
            c = TcpCollective("rhd", rank=rank, n=2, job=9, bind_address="127.0.0.1",
                              peers=[("127.0.0.1", p) for p in peers], connect_timeout=10,
                              idle_timeout=10)
            try:
                results[rank] = [c.allreduce(v, timeout=20) for v in vectors(rank)]
            finally:
                c.close()
        except Exception as error:             # reported by the assertion below
            results[rank] = error

    threads = [threading.Thread(target=run, args=(0, [ports[0], relay.port])),
               threading.Thread(target=run, args=(1, ports))]
    for t in threads:
        t.start()
    for t in threads:
        t.join(60)
    relay.stop.set()
    for rank in range(2):
        assert isinstance(results.get(rank), list), f"rank {rank}: {results.get(rank)!r}"
        for got, want in zip(results[rank], expected()):
            assert np.array_equal(got, want)


def run_in_memory(split_at: int) -> list[list[np.ndarray]]:
    """Two `CollectiveCalls` ranks. Rank 1's messages to rank 0 are delivered at once, except
    its second (the last of call 0), held until it has sent the third (call 1's first): the
    two are then delivered as two chunks cut at byte `split_at` of their bytes."""
    ranks = [CollectiveCalls(rank=r, n=2, plan_for=lambda length, r=r: plan_for("rhd", r, 2,
                                                                                 length))
             for r in range(2)]
    results: list[list[np.ndarray]] = [[], []]
    to_one: list[bytes] = []
    from_one: list[bytes] = []          # rank 1's messages to rank 0, in order
    delivered = 0                       # how many of them rank 0 has had

    def post(rank: int, out) -> None:
        for _, data in out:
            (from_one if rank == 1 else to_one).append(data)

    for rank in range(2):
        post(rank, ranks[rank].start(vectors(rank)[0]))
    while [len(r) for r in results] != [len(LENGTHS)] * 2:
        progress = False
        while to_one:
            post(1, ranks[1].receive(0, to_one.pop(0)))
            progress = True
        if delivered < len(from_one) and delivered != 1:
            post(0, ranks[0].receive(1, from_one[delivered]))
            delivered += 1
            progress = True
        elif delivered == 1 and len(from_one) >= 3:
            merged = from_one[1] + from_one[2]
            for chunk in (merged[:split_at], merged[split_at:]):
                if chunk:
                    post(0, ranks[0].receive(1, chunk))
            delivered = 3
            progress = True
        for rank in range(2):
            if ranks[rank].done and len(results[rank]) == ranks[rank].calls - 1:
                results[rank].append(ranks[rank].result)
                if len(results[rank]) < len(LENGTHS):
                    post(rank, ranks[rank].start(vectors(rank)[len(results[rank])]))
                progress = True
        assert progress, "stuck"
    return results


def test_in_memory_every_cut_of_the_merged_bytes() -> None:
    sizes = [HEADER_BYTES + 4 * 2405, HEADER_BYTES + 4 * 2080]
    for split_at in [0, 1, HEADER_BYTES - 1, sizes[0] - 1, sizes[0], sizes[0] + 5,
                     sizes[0] + HEADER_BYTES, sum(sizes) - 1]:
        results = run_in_memory(split_at)
        for rank in range(2):
            assert len(results[rank]) == len(LENGTHS)
            for got, want in zip(results[rank], expected()):
                assert np.array_equal(got, want), (split_at, rank)


def test_a_repeated_message_is_an_error_not_a_second_reduction() -> None:
    plan = [Send(1, 0, 4), Recv(1, 4, 8, reduce=True), Recv(1, 0, 4, reduce=False)]
    s = CollectiveSession(rank=0, n=2, plan=plan, length=8)
    s.start(np.ones(8, dtype=np.float32))
    first = encode(Segment(kind=RingKind.ALL_GATHER, call=0, step=0, index=0,
                           values=np.ones(4, dtype=np.float32)))
    s.receive(1, first)
    with pytest.raises(RingProtocolError, match="twice"):
        s.receive(1, first)


def test_a_message_two_calls_ahead_is_an_error() -> None:
    calls = CollectiveCalls(rank=0, n=2, plan_for=lambda length: plan_for("rhd", 0, 2, length))
    calls.start(np.ones(8, dtype=np.float32))
    ahead = encode(Segment(kind=RingKind.ALL_GATHER, call=2, step=0, index=0,
                           values=np.ones(4, dtype=np.float32)))
    with pytest.raises(RingProtocolError, match="call 2"):
        calls.receive(1, ahead)
