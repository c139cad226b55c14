"""What an InaSession is given, checked before it starts: one clear UsageError per bad value,
so a misconfigured worker fails at once instead of sending what the switch would drop."""

from __future__ import annotations

from . import quantize as qz
from .errors import UsageError


def check_int(name: str, value, low: int, high: int) -> int:
    if isinstance(value, bool) or not isinstance(value, int) or not low <= value <= high:
        raise UsageError(f"{name} must be an integer in [{low}, {high}], got {value!r}")
    return value


def check_encoding(fmt, scaling, divisor, n: int) -> tuple[str, str, int]:
    """The job's lane format, scaling and quantization divisor (None: n, overflow-free)."""
    if fmt not in qz.FORMAT_BITS:
        raise UsageError(f"fmt must be one of {', '.join(qz.FORMAT_BITS)}, got {fmt!r}")
    if scaling not in qz.SCALINGS:
        raise UsageError(f"scaling must be one of {', '.join(qz.SCALINGS)}, got {scaling!r}")
    divisor = n if divisor is None else divisor
    if isinstance(divisor, bool) or not isinstance(divisor, int) or not 1 <= divisor <= n:
        raise UsageError(f"divisor must be an integer from 1 to n ({n}), got {divisor!r}")
    if fmt == "int32" and divisor != n:
        raise UsageError("divisor < n needs int16 or int8 lanes (int32 sums are not checked "
                         "for overflow by the switch)")
    try:
        qz.format_limit(fmt, n)
    except ValueError as error:
        raise UsageError(str(error)) from None
    return fmt, scaling, divisor


def is_seconds(value) -> bool:
    return not isinstance(value, bool) and isinstance(value, (int, float)) and value > 0
