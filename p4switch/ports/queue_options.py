"""`--queue-depth` and `--queue-rate`: the switch's egress queues set from its command line.

Each option takes BMv2's three scopes, as simple_switch_CLI's `set_queue_depth` and
`set_queue_rate` do: `N` (every queue), `PORT:N` (every priority queue of one port) and
`PORT:PRIORITY:N` (one queue). Broader scopes are applied first, so `--queue-rate 1000
--queue-rate 2:100` means 100 pps on port 2 and 1000 elsewhere, in any order on the line.
"""

from __future__ import annotations

from dataclasses import dataclass

from p4switch.ports.errors import PortConfigError

MAX_PORT = 511
MAX_VALUE = 1 << 31


@dataclass(frozen=True)
class QueueSetting:
    value: int
    port: int | None = None
    priority: int | None = None

    @property
    def scope(self) -> int:
        return (self.port is not None) + (self.priority is not None)


@dataclass(frozen=True)
class QueuePlan:
    """Depths (packets) and rates (packets per second) to set on a runtime `Switch`."""

    depths: tuple[QueueSetting, ...] = ()
    rates: tuple[QueueSetting, ...] = ()

    @classmethod
    def from_options(cls, depths: list[str] | None, rates: list[str] | None) -> "QueuePlan":
        return cls(tuple(_parse("--queue-depth", text) for text in depths or ()),
                   tuple(_parse("--queue-rate", text) for text in rates or ()))

    def ports_named(self) -> set[int]:
        return {s.port for s in self.depths + self.rates if s.port is not None}

    def apply(self, switch) -> None:
        """Set the plan on `switch` (after its priority queues are known); a priority beyond
        them is a PortConfigError."""
        try:
            for setting in sorted(self.depths, key=lambda s: s.scope):
                switch.set_queue_depth(setting.value, setting.port, setting.priority)
            for setting in sorted(self.rates, key=lambda s: s.scope):
                switch.set_queue_rate(setting.value, setting.port, setting.priority)
        except Exception as error:
            if not hasattr(error, "code"):      # not the runtime's InvalidArgument
                raise
            raise PortConfigError(f"--queue-depth/--queue-rate: {error}") from None


def _parse(option: str, text: str) -> QueueSetting:
    parts = text.split(":")
    if not 1 <= len(parts) <= 3:
        raise PortConfigError(f"{option} {text}: expected N, PORT:N or PORT:PRIORITY:N")
    numbers = []
    for part in parts:
        try:
            numbers.append(int(part, 10))
        except ValueError:
            raise PortConfigError(f"{option} {text}: '{part}' is not an integer") from None
    *where, value = numbers
    if not 0 <= value < MAX_VALUE:
        raise PortConfigError(f"{option} {text}: {value} is outside 0..{MAX_VALUE - 1}")
    if where and not 0 <= where[0] <= MAX_PORT:
        raise PortConfigError(f"{option} {text}: port {where[0]} is outside 0..{MAX_PORT}")
    if len(where) == 2 and not 0 <= where[1] <= 7:
        raise PortConfigError(f"{option} {text}: priority {where[1]} is outside 0..7")
    return QueueSetting(value, *where)


__all__ = ["QueuePlan", "QueueSetting"]
