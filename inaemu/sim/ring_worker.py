"""A ring all-reduce rank on a simulated host: `hosts.ring_session.RingSession` over two
`reliable.py` connections (data to the right neighbour, data from the left one).

Segments are real Ethernet/IPv4/TCP frames routed by the switch: data from port 40000 to port
5201, acknowledgements back from 5201 to 40000, a SACK option (RFC 2018 layout, after two NOPs)
on acknowledgements of out-of-order data. The rank's time is when it holds the result; its
transport keeps running afterwards so the right neighbour still gets every byte.

Failures end the rank with an error, never a hang: the right neighbour stops acknowledging
(`TransportTimeout` after the transport's retries), the stream from the left is not what the
ring expects (`RingProtocolError`), or nothing arrives from the left for `stall_timeout`
seconds while the rank still waits for it (the left neighbour died).
"""

from __future__ import annotations

from typing import Callable

import numpy as np

from hosts.errors import HostError
from hosts.ring_session import RingSession, RingState

from inaemu.sim.frames import PROTO_TCP, TCP_ACK, TCP_PSH, Datagram
from inaemu.sim.host_node import HostNode, WorkerOutcome
from inaemu.sim.reliable import (Ack, ReliableReceiver, Segment, TransportConfig,
                                 TransportTimeout, _Outstanding, sender_for)

DATA_PORT = 5201
ACK_PORT = 40000
# On a native host each segment, ACK, NIC-queue departure and write runs in C (native/
# ringpath.c, docs/sim-native.md "The ring's per-segment path in C") over this worker's own objects,
# calling the methods below for what it leaves to them (a rank not started, whole messages
# for the session, timer expiries, Reno's sender); False keeps it all in Python.
NATIVE_PATH = True


class RingWorker:
    algo = "ring"

    # (slots: the native core reads and writes them at their offsets, native/attrs.c)
    __slots__ = ('node', 'data_port', 'ack_port', 'session', 'right_ip', 'left_ip', 'vector',
                 'sink', 'stall_timeout', 'on_end', 'outcome', '_started', '_early', 'sender',
                 'receiver', '_rto_timer', '_stall_timer', '_delack_timer', '_data_handler',
                 '_ack_handler', '_left_handler', '_write', '__weakref__')

    def __init__(self, node: HostNode, session: RingSession, right_ip: bytes, left_ip: bytes,
                 vector: np.ndarray, transport: TransportConfig, stall_timeout: float,
                 on_end: Callable[["RingWorker"], None], *, data_port: int = DATA_PORT,
                 ack_port: int = ACK_PORT, sink: Callable | None = None):
        self.node = node
        # a scenario runs successive calls on their own port pairs, so a late segment of one
        # call's stream can never be taken for the next call's bytes
        self.data_port, self.ack_port = data_port, ack_port
        self.session = session
        self.right_ip = right_ip
        self.left_ip = left_ip
        # `vector`: the rank's input, or with `sink` its source (streamed: RingSession.start)
        self.vector = vector
        self.sink = sink
        self.stall_timeout = stall_timeout
        self.on_end = on_end
        self.outcome = WorkerOutcome()
        self._started = False
        self._early: list = []       # in-order data that arrived before start()
        self.sender = sender_for(transport, node.uplink_bps)
        self.receiver = ReliableReceiver(transport)
        self._rto_timer = node.timer(self._on_rto)
        self._stall_timer = node.timer(self._on_stall)
        self._delack_timer = node.timer(self._on_delayed_ack)
        path_class = getattr(node, "ring_path_class", None) if NATIVE_PATH else None
        path = None if path_class is None else path_class(
            self, _Outstanding, (RingState.REDUCE_SCATTER, RingState.ALL_GATHER))
        # the handlers, kept so that close() unlistens the very same ones
        self._data_handler = self._on_data if path is None else path.on_data
        self._ack_handler = self._on_ack if path is None else path.on_ack
        self._left_handler = self._on_left if path is None else path.on_left
        self._write = self._write_python if path is None else path.write
        node.listen(PROTO_TCP, data_port, self._data_handler)
        node.listen(PROTO_TCP, ack_port, self._ack_handler)

    @property
    def state(self) -> str:
        return self.session.state.value

    def start(self) -> None:
        """Begin the call: send this rank's first data, then take what the left neighbour
        sent before (a rank created early, as a scenario does at an iteration's start, has
        its transport up: a neighbour that starts sooner is acknowledged and buffered, as a
        kernel's socket buffer would, not dropped into a 200 ms retransmission)."""
        self._started = True
        try:
            out = self.session.start(self.vector, sink=self.sink)
        except HostError as error:
            self._end(str(error))
            return
        self._write(out)
        early, self._early = self._early, []
        for data in early:
            if self.outcome.finished:
                return
            try:
                out = self.session.receive(data)
            except HostError as error:
                self._end(str(error))
                return
            self._write(out)
        self._check_done()

    # -- the stream to the right -----------------------------------------------------------------

    def _write_python(self, data: bytes) -> None:
        """Append `data` to the stream to the right (`_write`: this, or its C on a native
        host)."""
        if data:
            self._transmit(self.sender.write(data, self.node.loop.now))

    def _transmit(self, segments: list[Segment]) -> None:
        node = self.node
        on_left = self._left_handler if self.sender.throttles else None
        for seg in segments:
            flags = TCP_ACK | (TCP_PSH if seg.psh else 0)
            node.send_frame(node.addressing.tcp_frame(self.right_ip, self.ack_port, self.data_port,
                                                      seg.seq,
                                                      0, flags, b"", seg.data, node.next_ident()),
                            on_left)
        self._rto_timer.set(self.sender.deadline)

    def _on_left(self, frame: bytes) -> None:
        """A data frame left the host's NIC queue: TCP Small Queues may release more."""
        if self.node.alive:
            self._transmit(self.sender.on_left(len(frame), self.node.loop.now))

    def _on_ack(self, datagram: Datagram) -> None:
        if datagram.src_ip != self.right_ip:
            self.node.counters.ignored += 1
            return
        self._transmit(self.sender.on_ack(Ack.of(datagram.ack, datagram.options),
                                          self.node.loop.now))

    def _on_rto(self) -> None:
        try:
            segments = self.sender.on_timeout(self.node.loop.now)
        except TransportTimeout as error:
            if not self.outcome.finished:
                self._end(f"rank {self.session.rank}: the right neighbour stopped "
                          f"acknowledging: {error}")
            return
        self._transmit(segments)

    # -- the stream from the left ----------------------------------------------------------------

    def _on_data(self, datagram: Datagram) -> None:
        if datagram.src_ip != self.left_ip:
            self.node.counters.ignored += 1
            return
        data, ack = self.receiver.on_segment(
            Segment(datagram.seq, datagram.payload, bool(datagram.flags & TCP_PSH)))
        if ack is not None:
            self._send_ack(ack)
        elif self.receiver.delay_started:
            self._delack_timer.set(self.node.loop.now + self.receiver.config.delayed_ack)
        if not data or self.outcome.finished:
            return
        if not self._started:        # the socket buffer holds it until the rank starts
            self._early.append(data)
            return
        self._deliver(data)

    def _deliver(self, data: bytes) -> None:
        """In-order bytes from the left for the started session, and what follows from them."""
        try:
            out = self.session.receive(data)
        except HostError as error:
            self._end(str(error))
            return
        self._write(out)
        self._check_done()

    def _on_delayed_ack(self) -> None:
        ack = self.receiver.delayed_ack()
        if ack is not None:
            self._send_ack(ack)

    def _send_ack(self, ack: Ack) -> None:
        node = self.node
        node.send_frame(node.addressing.tcp_frame(self.left_ip, self.data_port, self.ack_port,
                                                  0,
                                                  ack.cumulative, TCP_ACK, ack.options(), b"",
                                                  node.next_ident()))

    def _check_done(self) -> None:
        if self.outcome.finished:
            return
        if self.session.done:
            self._end(None)
        else:
            self._stall_timer.set(self.node.loop.now + self.stall_timeout)

    def _on_stall(self) -> None:
        if not self.outcome.finished:
            self._end(f"rank {self.session.rank}: nothing from the left neighbour for "
                      f"{self.stall_timeout:g} s (state {self.state}); it died or is unreachable")

    def close(self) -> None:
        """Release the host's ports and timers once every rank has its sum (nothing this
        rank still has unacknowledged is needed then)."""
        for timer in (self._rto_timer, self._stall_timer, self._delack_timer):
            self.node.drop_timer(timer)
        self.node.unlisten(PROTO_TCP, self.data_port, self._data_handler)
        self.node.unlisten(PROTO_TCP, self.ack_port, self._ack_handler)

    def abort(self, reason: str) -> None:
        """End now with `reason` as the error (the host died)."""
        self._end(reason)

    def _end(self, error: str | None) -> None:
        self._stall_timer.cancel()
        outcome = self.outcome
        outcome.finished_at = self.node.loop.now
        outcome.error = error
        outcome.retransmissions = self.sender.counters.retransmissions
        if error is None:
            outcome.result = self.session.result
        else:
            self._rto_timer.cancel()
        self.on_end(self)
