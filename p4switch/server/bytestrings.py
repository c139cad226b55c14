"""P4Runtime binary strings <-> Python ints.

Clients send big-endian byte strings. Like BMv2's server we accept both the canonical form (no
leading zero bytes) and padded forms with extra leading zeros; a value that needs more than the
declared bit width is refused with INVALID_ARGUMENT (BMv2's code for it), and so is an empty
string (the spec's rule; it catches fields the client forgot to set). Replies always use the
canonical form (shortest, at least one byte).
"""

from __future__ import annotations

from .errors import INVALID_ARGUMENT, RequestError


def decode(data: bytes, bitwidth: int, what: str) -> int:
    """The unsigned value of `data`, checked to fit `bitwidth` bits; `what` names it in errors."""
    if not data:
        raise RequestError(INVALID_ARGUMENT, f"{what}: empty byte string")
    value = int.from_bytes(data, "big")
    if bitwidth > 0 and value >> bitwidth:
        raise RequestError(
            INVALID_ARGUMENT, f"{what}: value 0x{data.hex()} does not fit in {bitwidth} bits"
        )
    return value


def encode(value: int) -> bytes:
    """The canonical byte string of a non-negative int."""
    if value < 0:
        raise ValueError(f"negative value {value} has no P4Runtime byte string")
    return value.to_bytes(max(1, (value.bit_length() + 7) // 8), "big")
