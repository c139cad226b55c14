"""The forwarding core shared by socket ports and in-process ports (sans-I/O).

It turns packets that arrived on ports into packets to send, and keeps the books:
arrivals -> capture tap -> ingress loss -> pipeline (`switch.receive_batch` under `switch.lock`)
-> egress loss -> egress delay line -> capture tap -> departures.

Nothing here reads a clock or a socket: callers pass `now` (monotonic seconds) and do the I/O.
The switch's egress queues (when a rate is set) hold packets between its ingress and egress;
`next_due()` includes their next departure and `release()` takes what has left them, so a
caller that sleeps until `next_due()` drains them at their rate (the switch reads its own clock,
which must be the caller's).
Packets the pipeline sends to a port nobody bound are counted as `unbound` and dropped (as BMv2
does for a port without an interface). The CPU port is never impaired: it is not a link.
Every loss the impairment model injects is reported to the switch's trace (`link_loss`), when a
trace is attached, so the per-packet log says where each lost frame was; without a trace, and
on ports without impairments, this costs nothing.
"""

from __future__ import annotations

from dataclasses import dataclass
from itertools import repeat
from typing import Iterable, Protocol

from p4switch.ports.impairment import (EGRESS, INGRESS, DelayLine, ImpairmentPlan, LinkImpairment,
                                       PortImpairment)


@dataclass(slots=True)
class PortCounters:
    """Per-port packet counts; `*_lost` are drops injected by the impairment model."""

    rx: int = 0
    tx: int = 0
    rx_lost: int = 0
    tx_lost: int = 0
    tx_errors: int = 0

    def as_text(self) -> str:
        return (f"rx {self.rx} tx {self.tx} lost-in {self.rx_lost} lost-out {self.tx_lost}"
                + (f" tx-errors {self.tx_errors}" if self.tx_errors else ""))


class PacketTap(Protocol):
    """Sees every packet that arrives on or leaves a port (e.g. the pcap writers)."""

    def arrived(self, port: int, data: bytes) -> None: ...

    def departed(self, port: int, data: bytes) -> None: ...


class Forwarder:
    """Moves packets between ports and a switch runtime, applying the impairment plan."""

    def __init__(self, switch, ports: Iterable[int], *, plan: ImpairmentPlan = ImpairmentPlan(),
                 seed: int = 0, cpu_port: int | None = None, tap: PacketTap | None = None,
                 every_port: bool = False) -> None:
        """`every_port`: every port number is bound (a port bundle, simple_switch's
        `--packet-in`), each counted from its first packet; else only `ports` are."""
        self.switch = switch
        self.cpu_port = cpu_port
        self.tap = tap
        self.ports = sorted(set(ports))
        self.counters: dict[int, PortCounters] = (_EveryPortCounters() if every_port else {})
        for port in self.ports:
            self.counters[port] = PortCounters()
        if cpu_port is not None:
            self.counters.setdefault(cpu_port, PortCounters())
        self.unbound = 0
        self._impairments: dict[int, PortImpairment] = {}
        for port in self.ports:
            spec: LinkImpairment = plan.for_port(port)
            if not spec.is_null and port != cpu_port:
                self._impairments[port] = PortImpairment(spec, seed=seed, port=port)
        self._delay_line = DelayLine()
        # test doubles without egress queues have no queue_next_due
        self._queue_due = getattr(switch, "queue_next_due", None)

    # -- arrivals -------------------------------------------------------------------------------
    def forward(self, arrivals: list[tuple[int, bytes]], now: float) -> list[tuple[int, bytes]]:
        """Run packets that arrived on ports; return those to send now as (port, bytes).

        Packets delayed by the plan are held and come out of `release()` when due.
        """
        counters, impairments, tap = self.counters, self._impairments, self.tap
        if not impairments and tap is None:
            return self._forward_plain(arrivals)
        admitted = []
        for port, data in arrivals:
            port_counters = counters.get(port)
            if port_counters is not None:
                port_counters.rx += 1
            if tap is not None:
                tap.arrived(port, data)
            impairment = impairments.get(port)
            if impairment is not None and impairment.drop_on_ingress():
                port_counters.rx_lost += 1
                self._report_loss(port, INGRESS, data)
                continue
            admitted.append((port, data))
        if not admitted:
            return []
        with self.switch.lock:
            outputs = self.switch.receive_batch(admitted)
        return self._egress(outputs, now)

    def _forward_plain(self, arrivals: list[tuple[int, bytes]]) -> list[tuple[int, bytes]]:
        """`forward` without impairments or a tap (the common case): only the books."""
        counters = self.counters
        for port, _ in arrivals:
            port_counters = counters.get(port)
            if port_counters is not None:
                port_counters.rx += 1
        with self.switch.lock:
            outputs = self.switch.receive_batch(arrivals)
        counted = 0
        for port, _ in outputs:
            port_counters = counters.get(port)
            if port_counters is None:
                break
            port_counters.tx += 1
            counted += 1
        else:
            return outputs
        departures = outputs[:counted]     # an output to an unbound port: dropped, counted
        for port, data in outputs[counted:]:
            port_counters = counters.get(port)
            if port_counters is None:
                self.unbound += 1
            else:
                port_counters.tx += 1
                departures.append((port, data))
        return departures

    def forward_received(self, received: list[tuple[int, list[bytes]]],
                         now: float) -> dict[int, list[bytes]]:
        """`forward` for arrivals as socket ports deliver them, each port's frames together
        ((port, frames) in arrival order), with the departures per port (each port's in their
        order; ports in the order of their first departure): what a driver sends, one call per
        port. The same books and outputs as `forward`; without impairments or a tap, each
        batch is counted once and no (port, bytes) list is built twice."""
        if self._impairments or self.tap is not None:
            return group_by_port(self.forward(
                [(port, data) for port, frames in received for data in frames], now))
        counters = self.counters
        items: list[tuple[int, bytes]] = []
        for port, frames in received:
            port_counters = counters.get(port)
            if port_counters is not None:
                port_counters.rx += len(frames)
            items += zip(repeat(port), frames)
        with self.switch.lock:
            outputs = self.switch.receive_batch(items)
        departures = group_by_port(outputs)
        unbound = []
        for port, frames in departures.items():
            port_counters = counters.get(port)
            if port_counters is None:
                unbound.append(port)
            else:
                port_counters.tx += len(frames)
        for port in unbound:                # outputs to unbound ports: dropped, counted
            self.unbound += len(departures.pop(port))
        return departures

    def _egress(self, outputs: list[tuple[int, bytes]], now: float) -> list[tuple[int, bytes]]:
        departures = []
        counters, impairments = self.counters, self._impairments
        for port, data in outputs:
            port_counters = counters.get(port)
            if port_counters is None:
                self.unbound += 1
                continue
            impairment = impairments.get(port)
            if impairment is not None:
                if impairment.drop_on_egress():
                    port_counters.tx_lost += 1
                    self._report_loss(port, EGRESS, data)
                    continue
                if impairment.delay_s > 0.0:
                    self._delay_line.hold(now + impairment.delay_s, port, data)
                    continue
            departures.append((port, data))
        return self._depart(departures)

    def _report_loss(self, port: int, direction: str, data: bytes) -> None:
        trace = getattr(self.switch, "trace", None)     # test doubles may have no trace
        if trace is not None:
            trace.link_loss(port, direction, data)

    def _depart(self, departures: list[tuple[int, bytes]]) -> list[tuple[int, bytes]]:
        counters, tap = self.counters, self.tap
        for port, data in departures:
            counters[port].tx += 1
            if tap is not None:
                tap.departed(port, data)
        return departures

    # -- delayed and queued packets -------------------------------------------------------------
    def next_due(self) -> float | None:
        """When the next delayed packet or egress-queue departure is due (seconds), or None."""
        due = self._delay_line.next_due()
        if self._queue_due is not None:
            queued = self._queue_due()
            if queued is not None and (due is None or queued < due):
                due = queued
        return due

    def release(self, now: float) -> list[tuple[int, bytes]]:
        """Packets now due (out of the switch's egress queues, then out of the delay line),
        to send as (port, bytes)."""
        departures = []
        if self._queue_due is not None:
            queued = self._queue_due()
            if queued is not None and queued <= now:
                departures = self._egress(self.switch.release_queued(), now)
        if self._delay_line.next_due() is None:
            return departures
        return departures + self._depart(self._delay_line.release(now))

    def set_output_room(self, room: int | None) -> None:
        """Pass the ports' back-pressure to the switch: how many packets its egress may still
        hand over (None: no bound). Test doubles without egress queues ignore it."""
        set_room = getattr(self.switch, "set_output_room", None)
        if set_room is not None:
            set_room(room)

    @property
    def held(self) -> int:
        """How many delayed packets are waiting."""
        return len(self._delay_line)

    def discard_held(self) -> int:
        """Forget delayed packets and packets in egress queues at shutdown; how many."""
        queued = self.switch.discard_queued() if self._queue_due is not None else 0
        return len(self._delay_line.drain()) + queued

    # -- reporting ------------------------------------------------------------------------------
    def summary_lines(self, names: dict[int, str] | None = None) -> list[str]:
        """One line per port (and one for unbound output), for the exit summary."""
        names = names or {}
        lines = []
        for port in sorted(self.counters):
            label = names.get(port) or ("cpu" if port == self.cpu_port else "-")
            lines.append(f"port {port} ({label}): {self.counters[port].as_text()}")
        if self.unbound:
            lines.append(f"dropped to unbound ports: {self.unbound}")
        if self._queue_due is not None:
            drops = self.switch.queue_drops()
            if drops:
                lines.append("egress queue full, dropped: " + ", ".join(
                    f"port {port} {count}" for port, count in sorted(drops.items())))
        return lines


class _EveryPortCounters(dict):
    """Port -> counters where every port is bound: a port's counters appear with its first
    packet, through `get` as through indexing."""

    def get(self, port, default=None):
        counters = dict.get(self, port)
        if counters is None:
            counters = self[port] = PortCounters()
        return counters

    def __missing__(self, port):
        counters = self[port] = PortCounters()
        return counters


def group_by_port(departures: list[tuple[int, bytes]]) -> dict[int, list[bytes]]:
    """(port, bytes) departures as port -> frames, each port's in their order (ports in the
    order of their first departure)."""
    by_port: dict[int, list[bytes]] = {}
    for port, data in departures:
        frames = by_port.get(port)
        if frames is None:
            by_port[port] = [data]
        else:
            frames.append(data)
    return by_port


__all__ = ["Forwarder", "PortCounters", "PacketTap", "group_by_port"]
