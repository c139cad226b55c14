"""Seeded per-port loss and delay: the link impairments `inaemu switch --loss/--delay-ms` apply.

Sans-I/O: nothing here reads a clock or touches a socket; callers pass `now` in.

Rules:
- Loss is a probability per direction. A packet arriving on a port is dropped before the
  pipeline with probability `loss`; a packet leaving on a port is dropped after the pipeline with
  the same probability, independently.
- Every (seed, port, direction) has its own `random.Random`, seeded from a string so the sequence
  is the same in every process and Python run (string seeds do not depend on PYTHONHASHSEED). A
  port's decisions therefore depend only on how many packets crossed it in that direction, not on
  traffic on other ports.
- Delay applies on egress: a packet leaving on a port with `delay_s > 0` is held in a `DelayLine`
  and released when due; packets on one port keep their order.
"""

from __future__ import annotations

import heapq
import math
import random
from dataclasses import dataclass

from p4switch.ports.errors import PortConfigError

INGRESS = "in"
EGRESS = "out"


@dataclass(frozen=True, kw_only=True, slots=True)
class LinkImpairment:
    """What one port does to its packets: loss probability per direction, egress delay."""

    loss: float = 0.0
    delay_s: float = 0.0

    def __post_init__(self) -> None:
        if not (isinstance(self.loss, (int, float)) and 0.0 <= self.loss <= 1.0):
            raise PortConfigError(f"loss must be a probability in [0, 1], got {self.loss!r}")
        if not (isinstance(self.delay_s, (int, float)) and math.isfinite(self.delay_s)
                and self.delay_s >= 0.0):
            raise PortConfigError(f"delay must be a finite number >= 0, got {self.delay_s!r}")

    @property
    def is_null(self) -> bool:
        return self.loss == 0.0 and self.delay_s == 0.0


NO_IMPAIRMENT = LinkImpairment()


class PortImpairment:
    """The stateful side of a `LinkImpairment` on one port: its two seeded loss streams."""

    def __init__(self, spec: LinkImpairment, *, seed: int, port: int) -> None:
        self.spec = spec
        self.port = port
        self._ingress_rng = random.Random(f"inaemu-loss:{seed}:{port}:{INGRESS}")
        self._egress_rng = random.Random(f"inaemu-loss:{seed}:{port}:{EGRESS}")

    @property
    def delay_s(self) -> float:
        return self.spec.delay_s

    def drop_on_ingress(self) -> bool:
        """Whether the next packet arriving on this port is lost."""
        return self.spec.loss > 0.0 and self._ingress_rng.random() < self.spec.loss

    def drop_on_egress(self) -> bool:
        """Whether the next packet leaving on this port is lost."""
        return self.spec.loss > 0.0 and self._egress_rng.random() < self.spec.loss


class DelayLine:
    """Packets held until a due time; pops them in due order (FIFO among equal times)."""

    def __init__(self) -> None:
        self._heap: list[tuple[float, int, int, bytes]] = []
        self._sequence = 0

    def __len__(self) -> int:
        return len(self._heap)

    def hold(self, due: float, port: int, data: bytes) -> None:
        heapq.heappush(self._heap, (due, self._sequence, port, data))
        self._sequence += 1

    def next_due(self) -> float | None:
        """When the earliest held packet is due, or None when nothing is held."""
        return self._heap[0][0] if self._heap else None

    def release(self, now: float) -> list[tuple[int, bytes]]:
        """Remove and return every packet due at or before `now`, as (port, bytes)."""
        released = []
        heap = self._heap
        while heap and heap[0][0] <= now:
            _, _, port, data = heapq.heappop(heap)
            released.append((port, data))
        return released

    def drain(self) -> list[tuple[int, bytes]]:
        """Remove and return everything still held (used when shutting down)."""
        held = [(port, data) for _, _, port, data in sorted(self._heap)]
        self._heap.clear()
        return held


@dataclass(frozen=True, slots=True)
class ImpairmentPlan:
    """The impairments of all ports: a default and per-port overrides (from the CLI)."""

    default: LinkImpairment = NO_IMPAIRMENT
    per_port: tuple[tuple[int, LinkImpairment], ...] = ()

    def for_port(self, port: int) -> LinkImpairment:
        for number, spec in self.per_port:
            if number == port:
                return spec
        return self.default

    @classmethod
    def from_options(cls, loss: list[str] | None, delay_ms: list[str] | None) -> "ImpairmentPlan":
        """Build a plan from `--loss` and `--delay-ms` values: `X` for all ports, `PORT:X` for one."""
        default_loss, port_loss = _split_option("--loss", loss or [])
        default_delay, port_delay = _split_option("--delay-ms", delay_ms or [])
        base = LinkImpairment(loss=default_loss if default_loss is not None else 0.0,
                              delay_s=(default_delay or 0.0) / 1000.0)
        ports = sorted(set(port_loss) | set(port_delay))
        per_port = tuple(
            (port, LinkImpairment(loss=port_loss.get(port, base.loss),
                                  delay_s=port_delay.get(port, base.delay_s * 1000.0) / 1000.0))
            for port in ports)
        return cls(default=base, per_port=per_port)

    def ports_named(self) -> list[int]:
        return [port for port, _ in self.per_port]


def _split_option(option: str, values: list[str]) -> tuple[float | None, dict[int, float]]:
    default: float | None = None
    per_port: dict[int, float] = {}
    for text in values:
        port_text, sep, value_text = text.rpartition(":")
        number = _parse_number(option, text, value_text)
        if sep:
            port = _parse_port(option, text, port_text)
            if port in per_port:
                raise PortConfigError(f"{option} {text}: port {port} given twice")
            per_port[port] = number
        else:
            if default is not None:
                raise PortConfigError(f"{option} {text}: a value for all ports was already given")
            default = number
    for port, number in per_port.items():
        _check_range(option, f"{port}:{number:g}", number)
    if default is not None:
        _check_range(option, f"{default:g}", default)
    return default, per_port


def _parse_number(option: str, text: str, value_text: str) -> float:
    try:
        value = float(value_text)
    except ValueError:
        raise PortConfigError(f"{option} {text}: '{value_text}' is not a number") from None
    if not math.isfinite(value):
        raise PortConfigError(f"{option} {text}: '{value_text}' is not a finite number")
    return value


def _check_range(option: str, text: str, value: float) -> None:
    if option == "--loss" and not 0.0 <= value <= 1.0:
        raise PortConfigError(f"{option} {text}: loss must be a probability in [0, 1]")
    if option == "--delay-ms" and value < 0.0:
        raise PortConfigError(f"{option} {text}: delay must be >= 0 ms")


def _parse_port(option: str, text: str, port_text: str) -> int:
    if not port_text.isdigit() or int(port_text) > 511:
        raise PortConfigError(f"{option} {text}: '{port_text}' is not a port number (0..511)")
    return int(port_text)
