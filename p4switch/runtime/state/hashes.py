"""Hash and checksum algorithms that BMv2 calculations name (`"algo"` in the JSON).

Each takes the input bytes and returns a non-negative int. CRCs are table-driven and parameterised
(width, polynomial, init, reflection, final xor) so the `*_custom` variants can be reconfigured;
everything a call needs (tables, start register, whether to reflect the result) is prepared when
the parameters are set, and zlib's CRC-32 / binascii's CRC-CCITT run in C where they apply.
"""

from __future__ import annotations

import binascii
import random
from dataclasses import dataclass
from functools import lru_cache
from typing import Callable


def _reflect_byte(byte: int) -> int:
    out = 0
    for bit in range(8):
        if byte >> bit & 1:
            out |= 0x80 >> bit
    return out


_REFLECT8 = bytes(_reflect_byte(b) for b in range(256))  # bytes.translate table


def reflect(value: int, width: int) -> int:
    """`value`'s low `width` bits in reverse order, through the byte table (no bit loop)."""
    nbytes = (width + 7) // 8
    flipped = int.from_bytes(value.to_bytes(nbytes, "little").translate(_REFLECT8), "big")
    return flipped >> (nbytes * 8 - width)


@lru_cache(maxsize=None)
def _msb_first_table(width: int, poly: int) -> tuple[int, ...]:
    """Register after shifting one byte in, for CRCs that take bits most significant first."""
    top, mask = 1 << (width - 1), (1 << width) - 1
    table = []
    for byte in range(256):
        crc = byte << (width - 8)
        for _ in range(8):
            crc = ((crc << 1) ^ poly) if crc & top else (crc << 1)
        table.append(crc & mask)
    return tuple(table)


@lru_cache(maxsize=None)
def _lsb_first_table(width: int, poly: int) -> tuple[int, ...]:
    """The same for reflected input: the register is kept reflected, so it shifts right."""
    reflected_poly = reflect(poly, width)
    table = []
    for byte in range(256):
        crc = byte
        for _ in range(8):
            crc = (crc >> 1) ^ reflected_poly if crc & 1 else crc >> 1
        table.append(crc)
    return tuple(table)


def _c_advance(width: int, poly: int, reflect_in: bool):
    """zlib's CRC-32 and binascii's CRC-CCITT run in C; they advance the same register."""
    if (width, poly, reflect_in) == (32, 0x04C11DB7, True):
        return lambda register, data: binascii.crc32(data, register ^ 0xFFFFFFFF) ^ 0xFFFFFFFF
    if (width, poly, reflect_in) == (16, 0x1021, False):
        return lambda register, data: binascii.crc_hqx(data, register)
    return None


def _table_advance(width: int, poly: int, reflect_in: bool):
    if reflect_in:
        table = _lsb_first_table(width, poly)

        def advance(crc: int, data: bytes) -> int:
            for byte in data:
                crc = table[(crc ^ byte) & 0xFF] ^ (crc >> 8)
            return crc
    else:
        table = _msb_first_table(width, poly)
        shift, mask = width - 8, (1 << width) - 1

        def advance(crc: int, data: bytes) -> int:
            for byte in data:
                crc = table[((crc >> shift) ^ byte) & 0xFF] ^ ((crc << 8) & mask)
            return crc
    return advance


CACHED_INPUTS = 1 << 14     # results a CRC keeps by input (an ECMP hash sees few 5-tuples)


@dataclass(eq=False)
class Crc:
    """A CRC with the usual Rocksoft parameters (width >= 8), reconfigurable in place because
    generated code holds the object (simple_switch_CLI's set_crc16_parameters).

    With reflected input the register is kept reflected, so neither input bytes nor the result
    need reflecting in the common case (reflect_in == reflect_out); tables are built once per
    (width, poly) and shared.

    Results are kept by input (`CACHED_INPUTS` of them, all dropped when full or reconfigured):
    a CRC without a C routine (CRC-16, the fat-tree's ECMP hash) is a Python loop over the
    bytes, ~1-2 us for a 5-tuple, and a switch hashes the same few flows' 5-tuples again and
    again (347,760 calls in a 64-rank ring of 4 MiB each)."""
    width: int
    poly: int
    init: int
    xor_out: int
    reflect_in: bool
    reflect_out: bool

    def __post_init__(self) -> None:
        if self.width < 8:
            raise ValueError(f"CRC width {self.width} < 8 is not supported")
        self._prepare()

    def copy(self) -> Crc:
        return Crc(self.width, self.poly, self.init, self.xor_out, self.reflect_in,
                   self.reflect_out)

    def configure(self, poly: int, init: int, xor_out: int, reflect_in: bool,
                  reflect_out: bool) -> None:
        self.poly, self.init, self.xor_out = poly, init, xor_out
        self.reflect_in, self.reflect_out = reflect_in, reflect_out
        self._prepare()

    def _prepare(self) -> None:
        width, reflect_in = self.width, self.reflect_in
        self._advance = _c_advance(width, self.poly, reflect_in) or \
            _table_advance(width, self.poly, reflect_in)
        self._start = reflect(self.init, width) if reflect_in else self.init
        # a reflected register already is the reflected result
        self._flip_out = reflect_in != self.reflect_out
        self._results: dict[bytes, int] = {}

    def c_source(self, name: str) -> str:
        """This CRC as a C function `u64 name(const unsigned char *data, size_t n)` over the
        same byte table, start, output reflection and xor as `__call__` (the switch runtime's
        generated C hashes with it; tests/runtime/test_native_hash.py holds them equal)."""
        width, reflect_in = self.width, self.reflect_in
        table = _lsb_first_table(width, self.poly) if reflect_in else \
            _msb_first_table(width, self.poly)
        start = reflect(self.init, width) if reflect_in else self.init
        mask = (1 << width) - 1
        step = "c = T[(c ^ d[i]) & 0xFF] ^ (c >> 8);" if reflect_in else \
            f"c = T[((c >> {width - 8}) ^ d[i]) & 0xFF] ^ ((c << 8) & {mask}ULL);"
        flip = (f"    {{ u64 r = 0; for (int b = 0; b < {width}; b++) r = (r << 1) | ((c >> b) & 1);"
                " c = r; }\n") if reflect_in != self.reflect_out else ""
        rows = ",\n    ".join(", ".join(f"{v}ULL" for v in table[i:i + 8])
                              for i in range(0, 256, 8))
        return (f"static u64 {name}(const unsigned char *d, size_t n) {{\n"
                f"    static const u64 T[256] = {{\n    {rows}}};\n"
                f"    u64 c = {start}ULL;\n"
                f"    for (size_t i = 0; i < n; i++) {step}\n"
                f"{flip}"
                f"    return c ^ {self.xor_out}ULL;\n}}\n")

    def __call__(self, data: bytes) -> int:
        results = self._results
        if type(data) is bytes:
            kept = results.get(data)
            if kept is not None:
                return kept
        crc = self._advance(self._start, data)
        if self._flip_out:
            crc = reflect(crc, self.width)
        crc ^= self.xor_out
        if type(data) is bytes:
            if len(results) >= CACHED_INPUTS:
                results.clear()
            results[data] = crc
        return crc


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
    """The input itself as a number: BMv2 reads its first 8 bytes (of a longer input, the
    leading ones, not the low 64 bits)."""
    return int.from_bytes(data[:8], "big")


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
