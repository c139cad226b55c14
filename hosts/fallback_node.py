"""The host aggregator (hosts/fallback.py) on a simulated host (`inaemu.sim.host_node.HostNode`).

The simulator's counterpart of hosts/fallback_udp.py: it listens on the host's UDP port, feeds
each datagram to the aggregator and sends the replies to the workers' port 48879. Unlike the
simulated worker sessions (which cost no time), a host aggregator is a process serving every
fallback packet of its job, so it gets a service time per packet like the simulated switch's
(`per_packet_s` a received packet, `per_copy_s` a packet sent; FIFO, one at a time): without
it, moving work from the switch to a host would look free.

The node is used through its methods only (`listen`, `send_frame`, `addressing.udp_frame`,
`next_ident`, `loop.at`, `loop.now`), so this module imports nothing from the simulator.
"""

from __future__ import annotations

from .fallback import FALLBACK_PORT, VIA_SWITCH, FallbackAggregator
from .fallback_tier import VIA_PARENT
from .ina_header import INA_UDP_PORT

PROTO_UDP = 17
HOST_PER_PACKET_S = 17e-6     # as the simulated switch (inaemu/sim/switch_node.SwitchCost)
HOST_PER_COPY_S = 2e-6


class SimFallbackServer:
    """One job's host aggregator on a simulated host."""

    def __init__(self, node, aggregator: FallbackAggregator, worker_ips: list[bytes], *,
                 port: int = FALLBACK_PORT, per_packet_s: float = HOST_PER_PACKET_S,
                 per_copy_s: float = HOST_PER_COPY_S, switch_ip: bytes | None = None,
                 parent_ip: bytes | None = None, local_delivery: bool = True):
        """`switch_ip`: the aggregator address replies meant for VIA_SWITCH go to;
        `parent_ip`: a tier's parent aggregator address (VIA_PARENT, hosts/fallback_tier.py).
        `worker_ips[i]` is member i's address: a worker's, or a child switch's aggregator's.
        `local_delivery`: a reply to this host's own address is delivered here, as the kernel
        does (False: it goes out on the link, as before issue 31's last part; for comparison)."""
        if len(worker_ips) != aggregator.n:
            raise ValueError(f"{len(worker_ips)} worker addresses for a job of {aggregator.n}")
        self.node = node
        self.aggregator = aggregator
        self.worker_ips = list(worker_ips)
        self.switch_ip = switch_ip
        self.parent_ip = parent_ip
        self.port = port
        self.per_packet_s, self.per_copy_s = per_packet_s, per_copy_s
        self.busy_until = 0.0
        self.busy_s = 0.0          # total service time (utilisation = busy_s / run time)
        self.bytes_in = self.bytes_out = 0     # UDP payload bytes received and sent
        self.local_delivery = local_delivery
        self.local_deliveries = 0              # replies to a member on this host (loopback)
        self._timer = None                     # the loop event of the aggregator's deadline
        self._timer_at: float | None = None
        self._closed = False
        node.listen(PROTO_UDP, port, self._on_datagram)

    def close(self) -> None:
        """Stop listening (the job ended) and the timers; replies already scheduled still
        leave."""
        self.node.unlisten(PROTO_UDP, self.port, self._on_datagram)
        self._closed = True
        if self._timer is not None:
            self._timer.cancel()
            self._timer = None

    def _on_datagram(self, datagram) -> None:
        self.bytes_in += len(datagram.payload)
        self._serve(self.aggregator.receive(datagram.payload, self.node.loop.now),
                    self.per_packet_s)

    def _on_timer(self) -> None:
        self._timer = self._timer_at = None
        if not self._closed:
            self._serve(self.aggregator.expire(self.node.loop.now), 0.0)

    def _serve(self, replies: list[tuple[int, bytes]], work_s: float) -> None:
        """Queue the replies behind the work in progress, then re-arm the timer."""
        start = max(self.node.loop.now, self.busy_until)
        self.bytes_out += sum(len(payload) for _, payload in replies)
        service = work_s + self.per_copy_s * len(replies)
        self.busy_until = start + service
        self.busy_s += service
        if replies:
            self.node.loop.at(self.busy_until, self._send, replies)
        deadline = self.aggregator.next_deadline()
        if deadline is not None and not self._closed and (
                self._timer_at is None or deadline < self._timer_at):
            if self._timer is not None:
                self._timer.cancel()
            self._timer_at = deadline
            self._timer = self.node.loop.at(deadline, self._on_timer)

    def _send(self, replies: list[tuple[int, bytes]]) -> None:
        node = self.node
        own_ip = node.addressing.ip
        for worker, payload in replies:
            to = self.switch_ip if worker == VIA_SWITCH else \
                self.parent_ip if worker == VIA_PARENT else self.worker_ips[worker]
            frame = node.addressing.udp_frame(to, self.port, INA_UDP_PORT, payload,
                                              node.next_ident())
            if to == own_ip and self.local_delivery:
                # a member on this very host (a tier's aggregator sits on one of its workers'
                # hosts): the kernel delivers to a local address without the wire (loopback),
                # as on Mininet; sent out, it would cross the host's link twice
                self.local_deliveries += 1
                node.receive(frame)
            else:
                node.send_frame(frame)
