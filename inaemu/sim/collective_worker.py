"""A rank of a plan-based all-reduce (PS, hierarchical ring, double binary tree, halving-
doubling, 2D torus) on a simulated host: `hosts.collective_session.CollectiveSession` over one
`reliable.py` connection to and one from every peer of its plan.

Frames are TCP as the ring's (`ring_worker.py`), on their own ports: data 40002 -> 5202,
acknowledgements back; a frame is matched to its peer by source address. A host's connections
share the ring's 256 KiB of data in flight: each gets `window_bytes / peers` (at least 8
segments), so a rank that talks to 15 peers at once (the parameter server) does not put 15
full windows into its own link's or a switch's drop-tail queue (the transport has no
congestion control). Failures end the rank with an error, never a hang: a peer stops
acknowledging (`TransportTimeout`), a stream holds what the plan does not expect
(`RingProtocolError`), or nothing arrives from any peer for `stall_timeout` seconds while the
rank still waits.
"""

from __future__ import annotations

import dataclasses
from typing import Callable

import numpy as np

from hosts.collective_session import CollectiveSession
from hosts.errors import HostError

from inaemu.sim.frames import PROTO_TCP, TCP_ACK, TCP_PSH, Datagram
from inaemu.sim.host_node import HostNode, WorkerOutcome
from inaemu.sim.reliable import (Ack, ReliableReceiver, Segment, TransportConfig,
                                 TransportTimeout, sender_for)

DATA_PORT = 5202
ACK_PORT = 40002


class CollectiveWorker:
    def __init__(self, node: HostNode, session: CollectiveSession, algo: str,
                 peer_ips: dict[int, bytes], vector: np.ndarray, transport: TransportConfig,
                 stall_timeout: float, on_end: Callable[["CollectiveWorker"], None], *,
                 data_port: int = DATA_PORT, ack_port: int = ACK_PORT):
        self.algo = algo
        self.data_port, self.ack_port = data_port, ack_port   # per call in a scenario
        self.node = node
        self.session = session
        self.vector = vector
        self.stall_timeout = stall_timeout
        self.on_end = on_end
        self.outcome = WorkerOutcome()
        self._started = False
        self._early: list = []       # in-order data that arrived before start()
        self.peer_ips = peer_ips
        self.peer_of = {ip: peer for peer, ip in peer_ips.items()}
        window = max(8 * transport.mss, transport.window_bytes // max(1, len(peer_ips)))
        per_peer = dataclasses.replace(transport, window_bytes=window)
        self.senders = {p: sender_for(per_peer, node.uplink_bps) for p in peer_ips}
        self._on_left = {p: (lambda frame, p=p: self._left(p, frame)) for p in peer_ips}
        self.receivers = {p: ReliableReceiver(per_peer) for p in peer_ips}
        self._rto_timers = {p: node.timer(lambda p=p: self._on_rto(p)) for p in peer_ips}
        self._stall_timer = node.timer(self._on_stall)
        self._delack_timers = {p: node.timer(lambda p=p: self._on_delayed_ack(p))
                               for p in peer_ips}
        node.listen(PROTO_TCP, data_port, self._on_data)
        node.listen(PROTO_TCP, ack_port, self._on_ack)

    @property
    def state(self) -> str:
        return self.session.state.value

    @property
    def retransmissions(self) -> int:
        return sum(s.counters.retransmissions for s in self.senders.values())

    def start(self) -> None:
        """Begin the call, then take what peers sent before (see RingWorker.start)."""
        self._started = True
        try:
            out = self.session.start(self.vector)
        except HostError as error:
            self._end(str(error))
            return
        self._write(out)
        early, self._early = self._early, []
        for peer, data in early:
            if self.outcome.finished:
                return
            try:
                out = self.session.receive(peer, data)
            except HostError as error:
                self._end(str(error))
                return
            self._write(out)
        self._check_done()

    def _write(self, out: list[tuple[int, bytes]]) -> None:
        now = self.node.loop.now
        for peer, data in out:
            self._transmit(peer, self.senders[peer].write(data, now))

    def _transmit(self, peer: int, segments: list[Segment]) -> None:
        node = self.node
        ip = self.peer_ips[peer]
        sender = self.senders[peer]
        on_left = self._on_left[peer] if sender.throttles else None
        for seg in segments:
            flags = TCP_ACK | (TCP_PSH if seg.psh else 0)
            node.send_frame(node.addressing.tcp_frame(ip, self.ack_port, self.data_port, seg.seq, 0,
                                                      flags,
                                                      b"", seg.data, node.next_ident()),
                            on_left)
        self._rto_timers[peer].set(sender.deadline)

    def _left(self, peer: int, frame: bytes) -> None:
        """A data frame to `peer` left the host's NIC queue: TCP Small Queues may release
        more."""
        if self.node.alive:
            self._transmit(peer, self.senders[peer].on_left(len(frame), self.node.loop.now))

    def _on_ack(self, datagram: Datagram) -> None:
        peer = self.peer_of.get(datagram.src_ip)
        if peer is None:
            self.node.counters.ignored += 1
            return
        self._transmit(peer, self.senders[peer].on_ack(Ack.of(datagram.ack, datagram.options),
                                                       self.node.loop.now))

    def _on_rto(self, peer: int) -> None:
        try:
            segments = self.senders[peer].on_timeout(self.node.loop.now)
        except TransportTimeout as error:
            if not self.outcome.finished:
                self._end(f"rank {self.session.rank}: rank {peer} stopped acknowledging: "
                          f"{error}")
            return
        self._transmit(peer, segments)

    def _on_data(self, datagram: Datagram) -> None:
        peer = self.peer_of.get(datagram.src_ip)
        if peer is None:
            self.node.counters.ignored += 1
            return
        receiver = self.receivers[peer]
        data, ack = receiver.on_segment(
            Segment(datagram.seq, datagram.payload, bool(datagram.flags & TCP_PSH)))
        if ack is not None:
            self._send_ack(peer, ack)
        elif receiver.delay_started:
            self._delack_timers[peer].set(self.node.loop.now + receiver.config.delayed_ack)
        if not data or self.outcome.finished:
            return
        if not self._started:        # the socket buffer holds it until the rank starts
            self._early.append((peer, data))
            return
        try:
            out = self.session.receive(peer, data)
        except HostError as error:
            self._end(str(error))
            return
        self._write(out)
        self._check_done()

    def _check_done(self) -> None:
        if self.outcome.finished:
            return
        if self.session.done:
            self._end(None)
        else:
            self._stall_timer.set(self.node.loop.now + self.stall_timeout)

    def _on_stall(self) -> None:
        if not self.outcome.finished:
            self._end(f"rank {self.session.rank}: nothing from any peer for "
                      f"{self.stall_timeout:g} s (state {self.state}); a peer died or is "
                      f"unreachable")

    def _on_delayed_ack(self, peer: int) -> None:
        ack = self.receivers[peer].delayed_ack()
        if ack is not None:
            self._send_ack(peer, ack)

    def _send_ack(self, peer: int, ack) -> None:
        node = self.node
        node.send_frame(node.addressing.tcp_frame(self.peer_ips[peer], self.data_port,
                                                  self.ack_port, 0, ack.cumulative, TCP_ACK,
                                                  ack.options(), b"", node.next_ident()))

    def close(self) -> None:
        """Release the host's ports and timers once every rank has its sum."""
        for timer in (*self._rto_timers.values(), *self._delack_timers.values(),
                      self._stall_timer):
            self.node.drop_timer(timer)
        self.node.unlisten(PROTO_TCP, self.data_port, self._on_data)
        self.node.unlisten(PROTO_TCP, self.ack_port, self._on_ack)

    def abort(self, reason: str) -> None:
        self._end(reason)

    def _end(self, error: str | None) -> None:
        self._stall_timer.cancel()
        outcome = self.outcome
        outcome.finished_at = self.node.loop.now
        outcome.error = error
        outcome.retransmissions = self.retransmissions
        if error is None:
            outcome.result = self.session.result
        else:
            for timer in self._rto_timers.values():
                timer.cancel()
        self.on_end(self)


def plan_worker(net, workers: tuple[str, ...], rank: int, algo: str, vector: np.ndarray,
                transport: TransportConfig, stall_timeout: float, accumulate: str,
                on_end: Callable[["CollectiveWorker"], None], *, data_port: int = DATA_PORT,
                ack_port: int = ACK_PORT) -> CollectiveWorker:
    """Rank `rank` of a job on hosts `workers` (in rank order) running `algo`'s plan; the
    hierarchical ring groups ranks by the switch their host hangs off (topology-aware)."""
    from hosts.collectives import plan_for
    topology = net.topology
    n = len(workers)
    blocks: dict[str, list[int]] = {}
    for r, host in enumerate(workers):
        blocks.setdefault(topology.host_link(host).node, []).append(r)
    plan = plan_for(algo, rank, n, vector.size, switch_blocks=list(blocks.values()))
    session = CollectiveSession(rank=rank, n=n, plan=plan, length=vector.size,
                                accumulate=accumulate)
    from inaemu.sim.frames import ip_bytes
    ips = {p: ip_bytes(topology.host(workers[p]).ip) for p in session.peers}
    return CollectiveWorker(net.hosts[workers[rank]], session, algo, ips, vector, transport,
                            stall_timeout, on_end, data_port=data_port, ack_port=ack_port)
