"""Sizes ("8MiB") and durations ("5ms") as scenario files and scripts write them: the one
definition of their units, used by the file reader and the Python API alike."""

from __future__ import annotations

import math
import re
from decimal import Decimal

from inaemu.scenario.model import ScenarioError

SIZE_UNITS = {"B": 1, "KB": 10**3, "kB": 10**3, "MB": 10**6, "GB": 10**9, "TB": 10**12,
              "KiB": 2**10, "MiB": 2**20, "GiB": 2**30, "TiB": 2**40}
DURATION_UNITS = {"ns": Decimal("1e-9"), "us": Decimal("1e-6"), "µs": Decimal("1e-6"),
                  "ms": Decimal("1e-3"), "s": Decimal(1), "min": Decimal(60)}
NUMBER = r"[-+]?(?:\d+(?:\.\d*)?|\.\d+)(?:[eE][-+]?\d+)?"
_SIZE = re.compile(r"\s*(\d+(?:\.\d*)?|\.\d+)\s*([A-Za-z]+)?\s*$")
_DURATION = re.compile(rf"\s*({NUMBER})\s*([A-Za-zµ]+)?\s*$")


def parse_duration(value, unit: Decimal = Decimal(1)) -> float:
    """A number (of `unit`s: seconds by default) or a string with a unit, as a number of
    `unit`s; ValueError says why not."""
    if isinstance(value, bool):
        raise ValueError(f"expected a duration, got {value!r}")
    if isinstance(value, (int, float)):
        if not math.isfinite(value):
            raise ValueError(f"expected a finite duration, got {value!r}")
        amount = float(value)
    elif isinstance(value, str):
        match = _DURATION.match(value)
        if not match or (match.group(2) and match.group(2) not in DURATION_UNITS):
            raise ValueError(f"expected a duration like '5ms' (units "
                             f"{', '.join(DURATION_UNITS)}), got {value!r}")
        factor = DURATION_UNITS[match.group(2)] / unit if match.group(2) else Decimal(1)
        amount = float(Decimal(match.group(1)) * factor)
    else:
        raise ValueError(f"expected a duration, got {value!r}")
    if amount < 0:
        raise ValueError(f"a duration cannot be negative, got {value!r}")
    return amount


def parse_size(value) -> int:
    """Whole bytes from an integer or a string with a unit; ValueError says why not."""
    if isinstance(value, bool):
        raise ValueError(f"expected a size in bytes, got {value!r}")
    if isinstance(value, int):
        return value
    if isinstance(value, float):
        if not math.isfinite(value) or not value.is_integer():
            raise ValueError(f"must be whole bytes, got {value!r}")
        return int(value)
    if not isinstance(value, str):
        raise ValueError(f"expected a size in bytes, got {value!r}")
    match = _SIZE.match(value)
    if not match or (match.group(2) and match.group(2) not in SIZE_UNITS):
        raise ValueError(f"expected bytes or a size like '8MiB' (units "
                         f"{', '.join(SIZE_UNITS)}), got {value!r}")
    amount = Decimal(match.group(1)) * SIZE_UNITS[match.group(2) or "B"]
    if amount != amount.to_integral_value():
        raise ValueError(f"must be whole bytes, {value!r} is {amount} bytes")
    return int(amount)


def size_text(size: int) -> str | int:
    """The shortest exact form of a size ("8MiB"), or the integer."""
    for unit in ("TiB", "GiB", "MiB", "KiB"):
        if size >= SIZE_UNITS[unit] and size % SIZE_UNITS[unit] == 0:
            return f"{size // SIZE_UNITS[unit]}{unit}"
    return size


def duration_s(value, where: str) -> float:
    try:
        return parse_duration(value)
    except ValueError as error:
        raise ScenarioError(where, str(error)) from None


def size_bytes(value, where: str) -> int:
    try:
        return parse_size(value)
    except ValueError as error:
        raise ScenarioError(where, str(error)) from None
