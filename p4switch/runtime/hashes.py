"""Hash and checksum algorithms that BMv2 calculations name (`"algo"` in the JSON).

Each takes the input bytes and returns a non-negative int. CRCs are table-driven and parameterised
(width, polynomial, init, reflection, final xor) so the `*_custom` variants can be reconfigured.
"""

from __future__ import annotations

import random
from dataclasses import dataclass
from typing import Callable


def _reflect(value: int, width: int) -> int:
    out = 0
    for _ in range(width):
        out = (out << 1) | (value & 1)
        value >>= 1
    return out


@dataclass(eq=False)
class Crc:
    width: int
    poly: int
    init: int
    xor_out: int
    reflect_in: bool
    reflect_out: bool

    def __post_init__(self) -> None:
        self._table = self._build_table()

    def copy(self) -> Crc:
        return Crc(self.width, self.poly, self.init, self.xor_out, self.reflect_in,
                   self.reflect_out)

    def configure(self, poly: int, init: int, xor_out: int, reflect_in: bool,
                  reflect_out: bool) -> None:
        self.poly, self.init, self.xor_out = poly, init, xor_out
        self.reflect_in, self.reflect_out = reflect_in, reflect_out
        self._table = self._build_table()

    def _build_table(self) -> list[int]:
        top = 1 << (self.width - 1)
        mask = (1 << self.width) - 1
        table = []
        for byte in range(256):
            crc = byte << (self.width - 8) if self.width >= 8 else byte
            for _ in range(8):
                crc = ((crc << 1) ^ self.poly) if crc & top else (crc << 1)
            table.append(crc & mask)
        return table

    def __call__(self, data: bytes) -> int:
        width, table = self.width, self._table
        mask = (1 << width) - 1
        crc = self.init
        shift = width - 8
        for byte in data:
            if self.reflect_in:
                byte = _REFLECT8[byte]
            crc = ((crc << 8) & mask) ^ table[((crc >> shift) ^ byte) & 0xFF]
        if self.reflect_out:
            crc = _reflect(crc, width)
        return crc ^ self.xor_out


_REFLECT8 = [_reflect(b, 8) for b in range(256)]


def csum16(data: bytes) -> int:
    """The Internet checksum (RFC 1071): ones' complement of the ones' complement sum."""
    return csum16_bits(int.from_bytes(data, "big"), len(data) * 8)


def csum16_bits(value: int, nbits: int) -> int:
    """csum16 of `nbits` bits given as an int (zero-padded at the end to 16-bit words).

    Since 2**16 = 1 (mod 0xFFFF), the ones' complement sum of the 16-bit words is the whole
    number modulo 0xFFFF, with 0xFFFF standing for a non-zero multiple; one big-int operation
    instead of a loop over words.
    """
    if not value:
        return 0xFFFF
    value <<= -nbits % 16
    return ~(value % 0xFFFF or 0xFFFF) & 0xFFFF


def xor16(data: bytes) -> int:
    if len(data) % 2:
        data += b"\0"
    out = 0
    for i in range(0, len(data), 2):
        out ^= int.from_bytes(data[i:i + 2], "big")
    return out


def identity(data: bytes) -> int:
    """The input itself as a number (BMv2 keeps the low 64 bits)."""
    return int.from_bytes(data, "big") & 0xFFFFFFFFFFFFFFFF


def _random_hash(data: bytes) -> int:
    return random.getrandbits(64)


def standard_algorithms() -> dict[str, Callable[[bytes], int]]:
    """A fresh set (fresh because the `_custom` CRCs are reconfigurable per switch)."""
    crc16 = Crc(16, 0x8005, 0x0000, 0x0000, True, True)
    crc32 = Crc(32, 0x04C11DB7, 0xFFFFFFFF, 0xFFFFFFFF, True, True)
    return {
        "crc16": crc16,
        "crc32": crc32,
        "crc16_custom": Crc(16, 0x8005, 0x0000, 0x0000, True, True),
        "crc32_custom": Crc(32, 0x04C11DB7, 0xFFFFFFFF, 0xFFFFFFFF, True, True),
        "crcCCITT": Crc(16, 0x1021, 0xFFFF, 0x0000, False, False),
        "crc8": Crc(8, 0x07, 0x00, 0x00, False, False),
        "csum16": csum16,
        "cksum16": csum16,
        "xor16": xor16,
        "identity": identity,
        "random": _random_hash,
    }


# Algorithms that can take the packed bits directly, skipping the bytes round trip.
BITS_VARIANTS = {csum16: csum16_bits}


def bits_to_bytes(value: int, nbits: int) -> bytes:
    """Packed fields (MSB first) as bytes, zero-padded at the end to a whole byte."""
    pad = -nbits % 8
    return (value << pad).to_bytes((nbits + pad) // 8, "big")
