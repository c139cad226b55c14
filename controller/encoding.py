"""Values to P4Runtime byte strings and back.

P4Runtime 1.x sends every match value and action parameter as a big-endian byte string in its
canonical form: no leading zero bytes, and zero as a single zero byte. Callers may give an int,
a dotted IPv4 address, a colon-separated MAC address, or raw bytes; all are checked against the
field's bit width so a too-wide value fails here, with the field named, not on the switch.
"""

from __future__ import annotations

import ipaddress
import re

from controller.errors import EncodingError

Value = int | str | bytes

_MAC_RE = re.compile(r"^[0-9a-fA-F]{1,2}(:[0-9a-fA-F]{1,2}){5}$")
_OCTET = r"(25[0-5]|2[0-4][0-9]|1[0-9][0-9]|[1-9]?[0-9])"
_IPV4_RE = re.compile(rf"^{_OCTET}(\.{_OCTET}){{3}}$")     # no leading zeros, as ipaddress


def to_int(value: Value, *, where: str = "value") -> int:
    """An int from an int, a decimal/0x string, an IPv4 or MAC address string, or raw bytes."""
    if isinstance(value, bool):
        raise EncodingError(f"{where}: expected a number or an address, got {value!r}")
    if isinstance(value, int):
        if value < 0:
            raise EncodingError(f"{where}: negative value {value}")
        return value
    if isinstance(value, (bytes, bytearray)):
        return int.from_bytes(value, "big")
    if isinstance(value, str):
        text = value.strip()
        if _MAC_RE.match(text):
            return int("".join(f"{int(part, 16):02x}" for part in text.split(":")), 16)
        if text.count(".") == 3:
            if _IPV4_RE.match(text):    # the usual dotted quad, without ipaddress's ~15 us
                a, b, c, d = text.split(".")
                return int(a) << 24 | int(b) << 16 | int(c) << 8 | int(d)
            try:
                return int(ipaddress.IPv4Address(text))
            except ValueError:
                raise EncodingError(f"{where}: {value!r} is not an IPv4 address") from None
        try:
            number = int(text, 0)
        except ValueError:
            raise EncodingError(f"{where}: cannot read {value!r} as a number, IPv4 or MAC "
                                "address") from None
        return to_int(number, where=where)
    raise EncodingError(f"{where}: expected a number or an address, got {type(value).__name__}")


def encode(value: Value, bitwidth: int, *, where: str = "value") -> bytes:
    """The canonical P4Runtime byte string for `value` in a `bitwidth`-bit field."""
    number = to_int(value, where=where)
    if bitwidth > 0 and number >> bitwidth:
        raise EncodingError(f"{where}: {value!r} does not fit in {bitwidth} bits")
    return canonical(number)


def canonical(number: int) -> bytes:
    return number.to_bytes(max(1, (number.bit_length() + 7) // 8), "big")


def decode(data: bytes) -> int:
    """The unsigned integer a P4Runtime byte string holds (canonical or padded)."""
    return int.from_bytes(data, "big")


def format_mac(number: int) -> str:
    return ":".join(f"{b:02x}" for b in number.to_bytes(6, "big"))
