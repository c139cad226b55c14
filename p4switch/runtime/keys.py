"""Value objects of the table API: match keys, table descriptions, entries.

One key object per key field, in the table's key order. They validate what they can on their own
(non-negative ints); width checks need the table and happen in `tables.py`.
"""

from __future__ import annotations

from dataclasses import dataclass

from .errors import InvalidArgument


def _check_int(name: str, value: object) -> None:
    if not isinstance(value, int) or isinstance(value, bool) or value < 0:
        raise InvalidArgument(f"{name} must be a non-negative int, got {value!r}")


@dataclass(frozen=True)
class ExactKey:
    value: int

    def __post_init__(self) -> None:
        _check_int("exact key value", self.value)


@dataclass(frozen=True)
class LpmKey:
    value: int
    prefix_len: int

    def __post_init__(self) -> None:
        _check_int("lpm key value", self.value)
        _check_int("lpm prefix length", self.prefix_len)


@dataclass(frozen=True)
class TernaryKey:
    value: int
    mask: int

    def __post_init__(self) -> None:
        _check_int("ternary key value", self.value)
        _check_int("ternary key mask", self.mask)


@dataclass(frozen=True)
class RangeKey:
    low: int
    high: int

    def __post_init__(self) -> None:
        _check_int("range low", self.low)
        _check_int("range high", self.high)


@dataclass(frozen=True)
class OptionalKey:
    value: int | None

    def __post_init__(self) -> None:
        if self.value is not None:
            _check_int("optional key value", self.value)


MatchKey = ExactKey | LpmKey | TernaryKey | RangeKey | OptionalKey

KEY_CLASS_FOR_MATCH_TYPE = {
    "exact": ExactKey,
    "valid": ExactKey,
    "lpm": LpmKey,
    "ternary": TernaryKey,
    "range": RangeKey,
    "optional": OptionalKey,
}


@dataclass(frozen=True)
class TableInfo:
    name: str
    keys: tuple[tuple[str, str, int], ...]  # (field name, match type, bit width)
    actions: tuple[str, ...]
    max_size: int
    const: bool
    action_profile: str | None
    with_counters: bool
    direct_meters: str | None
    default: tuple[str, tuple[int, ...]]


@dataclass(frozen=True)
class TableEntry:
    handle: int
    keys: tuple[MatchKey, ...]
    action: str | None
    params: tuple[int, ...]
    priority: int | None
    member: int | None = None
    group: int | None = None
