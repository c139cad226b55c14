"""Stateful externs: register arrays, counter arrays and meter arrays (BMv2 semantics).

Their storage is what generated code indexes directly (registers' and meters' lists, counters'
uint64 array); control-plane operations mutate it in place so the compiled code keeps seeing
the live state.
"""

from __future__ import annotations

import numpy as np

from ..errors import InvalidArgument, NotFound, ResourceExhausted
from .regbanks import BankColumn

GREEN, YELLOW, RED = 0, 1, 2


class RegisterArray:
    def __init__(self, name: str, size: int, bitwidth: int):
        self.name = name
        self.size = size
        self.bitwidth = bitwidth
        self.mask = (1 << bitwidth) - 1
        self.cells = [0] * size

    def check_index(self, index: int) -> None:
        if not isinstance(index, int) or not 0 <= index < self.size:
            raise InvalidArgument(f"register '{self.name}': index {index!r} out of range "
                                  f"[0, {self.size})")

    def write(self, index: int, value: int) -> None:
        self.check_index(index)
        if not isinstance(value, int) or value < 0 or value > self.mask:
            raise InvalidArgument(f"register '{self.name}': value {value!r} does not fit in "
                                  f"{self.bitwidth} bits")
        self.cells[index] = value

    def reset(self) -> None:
        self.cells[:] = [0] * self.size


class CounterArray:
    """Packets and bytes per index (BMv2 counters always count both), 64 bits each and
    wrapping as BMv2's do. Both live in one (size, 2) uint64 array, `cells`, that the
    generated code (Python and C) adds to in place: a count is two integer additions in C,
    where Python ints made two new objects per packet. `packets` and `bytes` read and write
    its columns as sequences of ints."""

    def __init__(self, name: str, size: int, direct_table: str | None = None):
        self.name = name
        self.size = size
        self.direct_table = direct_table
        self.cells = np.zeros((size, 2), np.uint64)
        self.packets = BankColumn(self.cells, 0)
        self.bytes = BankColumn(self.cells, 1)

    def check_index(self, index: int) -> None:
        if not isinstance(index, int) or not 0 <= index < self.size:
            raise InvalidArgument(f"counter '{self.name}': index {index!r} out of range "
                                  f"[0, {self.size})")

    def reset(self) -> None:
        self.cells[:] = 0


class Meter:
    """An n-rate meter (BMv2's trTCM when n = 2): one token bucket per rate, peak checked first.

    Rates are units per microsecond and bursts are units, units being bytes or packets. An
    unconfigured meter marks everything GREEN, as BMv2 does.
    """

    __slots__ = ("rates", "tokens", "last_us")

    def __init__(self) -> None:
        self.rates: list[tuple[float, int]] | None = None
        self.tokens: list[float] = []
        self.last_us = 0.0

    def configure(self, rates: list[tuple[float, int]], now_us: float) -> None:
        self.rates = [(float(r), int(b)) for r, b in rates]
        self.tokens = [float(b) for _, b in self.rates]
        self.last_us = now_us

    def execute(self, units: int, now_us: float) -> int:
        rates = self.rates
        if rates is None:
            return GREEN
        elapsed = max(0.0, now_us - self.last_us)
        self.last_us = now_us
        tokens = self.tokens
        for i, (rate, burst) in enumerate(rates):
            tokens[i] = min(float(burst), tokens[i] + elapsed * rate)
        color = GREEN
        for i in range(len(rates) - 1, -1, -1):
            if tokens[i] < units:
                color = i + 1
                break
        for i in range(color, len(rates)):
            tokens[i] -= units
        return color


class MeterArray:
    def __init__(self, name: str, size: int, unit: str, rate_count: int,
                 direct_table: str | None = None, result_slot: int | None = None):
        self.name = name
        self.size = size
        self.unit = unit  # "bytes" | "packets"
        self.rate_count = rate_count
        self.direct_table = direct_table
        self.result_slot = result_slot
        self.meters = [Meter() for _ in range(size)]

    def check_index(self, index: int) -> None:
        if not isinstance(index, int) or not 0 <= index < self.size:
            raise InvalidArgument(f"meter '{self.name}': index {index!r} out of range "
                                  f"[0, {self.size})")

    def check_rates(self, rates) -> list[tuple[float, int]]:
        try:
            pairs = [(float(r), int(b)) for r, b in rates]
        except (TypeError, ValueError):
            raise InvalidArgument(f"meter '{self.name}': rates must be [(rate, burst), ...]") \
                from None
        if len(pairs) != self.rate_count:
            raise InvalidArgument(f"meter '{self.name}' needs {self.rate_count} rates, "
                                  f"got {len(pairs)}")
        if any(r < 0 or b < 0 for r, b in pairs):
            raise InvalidArgument(f"meter '{self.name}': rates and bursts must be >= 0")
        if any(pairs[i][0] > pairs[i + 1][0] for i in range(len(pairs) - 1)):
            raise InvalidArgument(f"meter '{self.name}': rates must not decrease "
                                  "(committed first, then peak)")
        return pairs


class ParseValueSet:
    """A parser value set: (value, mask) pairs the control plane adds, in the set's bit width."""

    def __init__(self, name: str, bitwidth: int, max_size: int | None = None):
        self.name = name
        self.bitwidth = bitwidth
        self.max_size = max_size
        self.entries: list[tuple[int, int]] = []

    def _normalise(self, value: int, mask: int | None) -> tuple[int, int]:
        full = (1 << self.bitwidth) - 1
        mask = full if mask is None else mask
        for what, x in (("value", value), ("mask", mask)):
            if not isinstance(x, int) or x < 0 or x > full:
                raise InvalidArgument(f"parse value set '{self.name}': {what} {x!r} does not "
                                      f"fit in {self.bitwidth} bits")
        return value & mask, mask

    def add(self, value: int, mask: int | None = None) -> None:
        item = self._normalise(value, mask)
        if item not in self.entries:
            if self.max_size is not None and len(self.entries) >= self.max_size:
                raise ResourceExhausted(f"parse value set '{self.name}' is full")
            self.entries.append(item)

    def remove(self, value: int, mask: int | None = None) -> None:
        item = self._normalise(value, mask)
        if item not in self.entries:
            raise NotFound(f"parse value set '{self.name}' has no {value:#x}/{item[1]:#x}")
        self.entries.remove(item)

    def matches(self, key: int, transition_mask: int) -> bool:
        for value, mask in self.entries:
            m = mask & transition_mask
            if key & m == value & m:
                return True
        return False
