"""Background traffic for scenarios: cross traffic that shares links with aggregation jobs.

- `BulkFlow`: a TCP bulk transfer (a fixed size, or until `stop()`), `reliable.py`'s transport
  in real Ethernet/IPv4/TCP frames, with Reno congestion control by default.
- `UdpFlow`: constant-bit-rate UDP datagrams, one event per packet interval.
- `Incast`: one `BulkFlow` per source towards one destination, each on its own ports.

Ports (the caller chooses them; every flow needs its own):

- `BulkFlow(port=P)`: data goes from the source's TCP port P+1 to the destination's TCP port P,
  acknowledgements from the destination's P back to the source's P+1 (the ring's 40000 -> 5201
  the same way round). So a bulk flow takes port P on its destination and P+1 on its source.
- `UdpFlow(port=P)`: datagrams from UDP port P to the destination's UDP port P.
- `Incast(base_port=B)`: the i-th source's flow uses P = B + 2 i, so the flows into the one
  destination listen on distinct ports (B, B+2, ...) and each source's acks on B+1, B+3, ...
- A port some listener on that host already has (another flow, a ring worker) is refused
  (`ValueError`), as are the ports of the jobs: TCP 5201 and 40000 (the ring and the collectives'
  transport) and UDP 48879 (INA: the switch program parses it as aggregation traffic). Create
  flows after the jobs' workers (the workers' `listen` would silently take a port over).

What the flows measure: `bytes_delivered` at the receiver (TCP: bytes delivered in order;
UDP: datagram payload bytes), `started_at`/`stopped_at` (virtual seconds), `goodput_mbps()`
(delivered bits over the time the flow ran, up to now while it runs). Payload bytes are zeros,
but every frame has its real length (54 bytes of headers per TCP segment, 42 per datagram).

Ending: a finite `BulkFlow` ends when its last byte is acknowledged; any flow ends at `stop()`;
a `BulkFlow` whose peer stops acknowledging (its host was killed, or the path is gone) ends
after the transport's retries with `error` set (never an exception out of the event loop).
`on_end(flow)` runs once, whichever way it ended. A flow whose own source host is killed just
goes silent (`HostNode.kill` cancels its timers; nothing ends it). After its end a flow
ignores what still arrives for it, so `bytes_delivered` stays as it was at the end, and its
ports are free again.
"""

from __future__ import annotations

from typing import Callable

from inaemu.sim.frames import HEADERS_UDP, PROTO_TCP, PROTO_UDP, TCP_ACK, TCP_PSH
from inaemu.sim.frames import Datagram
from inaemu.sim.host_node import HostNode
from inaemu.sim.reliable import (Ack, ReliableReceiver, Segment, TransportConfig,
                                 TransportTimeout, sender_for)

# the jobs' own ports, refused for background flows
RESERVED_TCP = frozenset({5201, 40000})
RESERVED_UDP = frozenset({48879})
MAX_UDP_PAYLOAD = 1500 - 28                   # an IPv4 MTU of 1500
BULK_TRANSPORT = TransportConfig(congestion="reno", window_bytes=4 << 20)
WRITE_SEGMENTS = 64                           # an unbounded flow writes this many at a time


def _host(net, name: str) -> HostNode:
    try:
        return net.hosts[name]
    except KeyError:
        raise ValueError(f"background flow: no host {name!r} in the network") from None


def _claim(node: HostNode, proto: int, port: int, handler: Callable[[Datagram], None]) -> None:
    reserved = RESERVED_TCP if proto == PROTO_TCP else RESERVED_UDP
    kind = "TCP" if proto == PROTO_TCP else "UDP"
    if not 1 <= port <= 0xFFFF:
        raise ValueError(f"background flow: {kind} port {port} out of range")
    if port in reserved:
        raise ValueError(f"background flow: {kind} port {port} belongs to the jobs")
    if (proto, port) in node.handlers:
        raise ValueError(f"background flow: {node.name} already listens on {kind} port {port}")
    node.listen(proto, port, handler)


def _release(node: HostNode, proto: int, port: int, handler: Callable[[Datagram], None]) -> None:
    if node.handlers.get((proto, port)) == handler:
        del node.handlers[(proto, port)]


class _Flow:
    """What both kinds of flow share: hosts, times, delivered bytes, the end."""

    def __init__(self, net, src: str, dst: str, on_end):
        if src == dst:
            raise ValueError(f"background flow: source and destination are both {src!r}")
        self.net = net
        self.loop = net.loop
        self.src, self.dst = src, dst
        self.src_node, self.dst_node = _host(net, src), _host(net, dst)
        self.on_end = on_end
        self.bytes_delivered = 0
        self.started_at: float | None = None
        self.stopped_at: float | None = None
        self.error: str | None = None

    @property
    def running(self) -> bool:
        return self.started_at is not None and self.stopped_at is None

    def goodput_mbps(self) -> float:
        """Delivered Mbit/s over the time the flow ran (until now while it runs)."""
        if self.started_at is None:
            return 0.0
        end = self.stopped_at if self.stopped_at is not None else self.loop.now
        elapsed = end - self.started_at
        return self.bytes_delivered * 8 / elapsed / 1e6 if elapsed > 0 else 0.0

    def stop(self) -> None:
        """End the flow now (nothing more is sent or counted); no-op once ended."""
        if self.started_at is None:
            raise RuntimeError("background flow: stop() before start()")
        self._end(None)

    def _end(self, error: str | None) -> None:
        if self.stopped_at is not None:
            return
        self.stopped_at = self.loop.now
        self.error = error
        self._close()
        if self.on_end is not None:
            self.on_end(self)

    def _close(self) -> None:
        raise NotImplementedError


class BulkFlow(_Flow):
    """A TCP bulk transfer from host `src` to host `dst` (names in `net.hosts`): `size_bytes`,
    or until `stop()` when None. Data to the destination's TCP `port`, acknowledgements to the
    source's `port + 1`. `completed` once every byte was acknowledged."""

    def __init__(self, net, src: str, dst: str, *, size_bytes: int | None = None, port: int,
                 transport: TransportConfig = BULK_TRANSPORT,
                 on_end: Callable[["BulkFlow"], None] | None = None):
        super().__init__(net, src, dst, on_end)
        if size_bytes is not None and (isinstance(size_bytes, bool) or size_bytes < 1):
            raise ValueError(f"bulk flow: size_bytes must be >= 1 or None, got {size_bytes!r}")
        self.size_bytes = size_bytes
        self.port = port
        self.transport = transport
        self.sender = sender_for(transport, self.src_node.uplink_bps)
        self.receiver = ReliableReceiver(transport)
        self.completed = False
        self._written = 0
        self._src_ip = self.src_node.addressing.ip
        self._dst_ip = self.dst_node.addressing.ip
        _claim(self.dst_node, PROTO_TCP, port, self._on_data)
        try:
            _claim(self.src_node, PROTO_TCP, port + 1, self._on_ack)
        except ValueError:
            _release(self.dst_node, PROTO_TCP, port, self._on_data)
            raise
        self._rto_timer = self.src_node.timer(self._on_rto)
        self._delack_timer = self.dst_node.timer(self._on_delayed_ack)

    @property
    def ack_port(self) -> int:
        return self.port + 1

    @property
    def bytes_acked(self) -> int:
        return self.sender.acked

    def start(self) -> None:
        if self.started_at is not None:
            raise RuntimeError("bulk flow: already started")
        self.started_at = self.loop.now
        self._top_up()

    # -- the source --------------------------------------------------------------------------------

    def _top_up(self) -> None:
        """Keep data queued behind the window: the whole size at once is fine for small flows,
        an unbounded one writes WRITE_SEGMENTS at a time."""
        sender = self.sender
        chunk = WRITE_SEGMENTS * self.transport.mss
        while self.running and self._written - (sender.acked + sender.in_flight) < chunk:
            size = chunk if self.size_bytes is None else \
                min(chunk, self.size_bytes - self._written)
            if size <= 0:
                return
            self._written += size
            self._transmit(sender.write(bytes(size), self.loop.now))

    def _transmit(self, segments: list[Segment]) -> None:
        node = self.src_node
        frame = node.addressing.tcp_frame
        on_left = self._on_left if self.sender.throttles else None
        for seg in segments:
            flags = TCP_ACK | (TCP_PSH if seg.psh else 0)
            node.send_frame(frame(self._dst_ip, self.port + 1, self.port, seg.seq, 0, flags, b"",
                                  seg.data, node.next_ident()), on_left)
        self._rto_timer.set(self.sender.deadline)

    def _on_left(self, frame: bytes) -> None:
        """A data frame left the source's NIC queue: TCP Small Queues may release more."""
        if self.running and self.src_node.alive:
            self._transmit(self.sender.on_left(len(frame), self.loop.now))
            self._top_up()

    def _on_ack(self, datagram: Datagram) -> None:
        if datagram.src_ip != self._dst_ip or datagram.sport != self.port or not self.running:
            self.src_node.counters.ignored += 1
            return
        self._transmit(self.sender.on_ack(Ack.of(datagram.ack, datagram.options),
                                          self.loop.now))
        if self.size_bytes is not None and self.sender.acked >= self.size_bytes:
            self.completed = True
            self._end(None)
            return
        self._top_up()

    def _on_rto(self) -> None:
        if not self.running:
            return
        try:
            segments = self.sender.on_timeout(self.loop.now)
        except TransportTimeout as error:
            self._end(f"bulk flow {self.src}->{self.dst} port {self.port}: the destination "
                      f"stopped acknowledging: {error}")
            return
        self._transmit(segments)

    # -- the destination ---------------------------------------------------------------------------

    def _on_data(self, datagram: Datagram) -> None:
        if datagram.src_ip != self._src_ip or datagram.sport != self.port + 1 or not self.running:
            self.dst_node.counters.ignored += 1
            return
        data, ack = self.receiver.on_segment(
            Segment(datagram.seq, datagram.payload, bool(datagram.flags & TCP_PSH)))
        self.bytes_delivered += len(data)
        if ack is not None:
            self._send_ack(ack)
        elif self.receiver.delay_started:
            self._delack_timer.set(self.dst_node.loop.now + self.receiver.config.delayed_ack)

    def _on_delayed_ack(self) -> None:
        ack = self.receiver.delayed_ack()
        if ack is not None and self.running:
            self._send_ack(ack)

    def _send_ack(self, ack) -> None:
        node = self.dst_node
        node.send_frame(node.addressing.tcp_frame(self._src_ip, self.port, self.port + 1, 0,
                                                  ack.cumulative, TCP_ACK, ack.options(), b"",
                                                  node.next_ident()))

    def _close(self) -> None:
        self._rto_timer.cancel()
        self._delack_timer.cancel()
        _release(self.dst_node, PROTO_TCP, self.port, self._on_data)
        _release(self.src_node, PROTO_TCP, self.port + 1, self._on_ack)

    def __repr__(self) -> str:
        return (f"BulkFlow({self.src}->{self.dst}, port {self.port}, "
                f"{self.bytes_delivered} bytes delivered)")


class UdpFlow(_Flow):
    """Constant-bit-rate UDP from `src` to `dst`'s `port` (from the same port): one datagram of
    `payload` bytes every payload·8/rate seconds, so `rate_mbps` is the payload bit rate (as
    iperf's -b counts it; the wire carries 42 header bytes more per datagram), until `stop()`."""

    def __init__(self, net, src: str, dst: str, *, rate_mbps: float, payload: int = 1472,
                 port: int, on_end: Callable[["UdpFlow"], None] | None = None):
        super().__init__(net, src, dst, on_end)
        if isinstance(rate_mbps, bool) or not rate_mbps > 0:
            raise ValueError(f"udp flow: rate_mbps must be positive, got {rate_mbps!r}")
        if isinstance(payload, bool) or not 1 <= payload <= MAX_UDP_PAYLOAD:
            raise ValueError(f"udp flow: payload must be 1..{MAX_UDP_PAYLOAD} bytes, "
                             f"got {payload!r}")
        self.rate_mbps = rate_mbps
        self.payload = payload
        self.port = port
        self.interval = payload * 8 / (rate_mbps * 1e6)
        self.packets_sent = 0
        self.packets_delivered = 0
        self._data = bytes(payload)
        self._dst_ip = self.dst_node.addressing.ip
        self._src_ip = self.src_node.addressing.ip
        _claim(self.dst_node, PROTO_UDP, port, self._on_datagram)
        self._timer = self.src_node.timer(self._tick)

    @property
    def frame_bytes(self) -> int:
        return HEADERS_UDP + self.payload

    def start(self) -> None:
        if self.started_at is not None:
            raise RuntimeError("udp flow: already started")
        self.started_at = self.loop.now
        self._tick()

    def _tick(self) -> None:
        if not self.running:
            return
        node = self.src_node
        node.send_frame(node.addressing.udp_frame(self._dst_ip, self.port, self.port, self._data,
                                                  node.next_ident()))
        self.packets_sent += 1
        # from the start time, so the rate does not drift with rounding
        self._timer.set(self.started_at + self.packets_sent * self.interval)

    def _on_datagram(self, datagram: Datagram) -> None:
        if datagram.src_ip != self._src_ip or datagram.sport != self.port or not self.running:
            self.dst_node.counters.ignored += 1
            return
        self.packets_delivered += 1
        self.bytes_delivered += len(datagram.payload)

    def _close(self) -> None:
        self._timer.cancel()
        _release(self.dst_node, PROTO_UDP, self.port, self._on_datagram)

    def __repr__(self) -> str:
        return (f"UdpFlow({self.src}->{self.dst}, port {self.port}, {self.rate_mbps:g} Mbit/s, "
                f"{self.bytes_delivered} bytes delivered)")


class Incast:
    """Every host of `sources` sends a `BulkFlow` of `size_bytes` (None: until `stop()`) to
    `dst` at once; source i uses port `base_port + 2 i` (acks to the next port up).
    `on_end(incast)` runs when the last flow has ended."""

    def __init__(self, net, sources, dst: str, size_bytes: int | None = None, *,
                 base_port: int, transport: TransportConfig = BULK_TRANSPORT,
                 on_end: Callable[["Incast"], None] | None = None):
        sources = list(sources)
        if not sources:
            raise ValueError("incast: no sources")
        if len(set(sources)) != len(sources):
            raise ValueError("incast: a source appears twice")
        self.dst = dst
        self.on_end = on_end
        self.flows: list[BulkFlow] = []
        try:
            for i, src in enumerate(sources):
                self.flows.append(BulkFlow(net, src, dst, size_bytes=size_bytes,
                                           port=base_port + 2 * i, transport=transport,
                                           on_end=self._flow_ended))
        except ValueError:
            for flow in self.flows:
                flow._close()
            raise

    def start(self) -> None:
        for flow in self.flows:
            flow.start()

    def stop(self) -> None:
        for flow in self.flows:
            if flow.running:
                flow.stop()

    @property
    def done(self) -> bool:
        return all(flow.stopped_at is not None for flow in self.flows)

    @property
    def bytes_delivered(self) -> int:
        return sum(flow.bytes_delivered for flow in self.flows)

    @property
    def errors(self) -> list[str]:
        return [flow.error for flow in self.flows if flow.error is not None]

    def _flow_ended(self, _flow: BulkFlow) -> None:
        if self.done and self.on_end is not None:
            self.on_end(self)
