"""The aggregation header (docs/protocol.md §1), defined once: kinds, flag bits, lane formats and
the field layout as data.

Everything that reads or writes the header derives from this module: the hosts' codec
(`hosts/ina_wire.py`), the host aggregator (`hosts/fallback.py`), the trace's decoder
(`inaemu/trace/events.py`), the Scapy layer (`inaemu/trace/scapy_ina.py`) and the Wireshark
dissector, which is generated from it (`python -m inaemu.trace.wireshark >
scripts/wireshark/ina.lua`; a test checks the committed file is that output). The P4 program
cannot import Python: `tests/hosts/test_ina_header.py` checks `p4src/ina_headers.p4inc`'s
`header ina_t` and `p4src/ina.p4`'s kind and flag constants against this module.

Standard library only, so that anything may import it cheaply.
"""

from __future__ import annotations

import enum
import struct

INA_UDP_PORT = 48879            # 0xBEEF, source and destination


class Kind(enum.IntEnum):
    """The `kind` byte."""

    CONTRIB = 0         # worker -> switch: a contribution
    RESULT = 1          # switch -> workers: the sum
    MAX_CONTRIB = 2     # the scale round (§5): a worker's block maxima
    MAX_RESULT = 3      # the scale round: their maxima
    QUERY = 4           # worker -> switch: is my contribution to this cell there? (§3.1)
    NACK = 5            # switch -> worker: no, send it again


# The header alone, no values (UDP length 8 + HEADER_BYTES).
HEADER_ONLY_KINDS = frozenset((Kind.QUERY, Kind.NACK))
# Kinds that travel toward an aggregator (a switch, its parent, or a host aggregator); the
# others travel toward the workers (or a child switch).
UPWARD_KINDS = frozenset((Kind.CONTRIB, Kind.MAX_CONTRIB, Kind.QUERY))
CONTRIBUTION_KINDS = frozenset((Kind.CONTRIB, Kind.MAX_CONTRIB))
MAX_ROUND_KINDS = frozenset((Kind.MAX_CONTRIB, Kind.MAX_RESULT))


class Format(enum.IntEnum):
    """The lane format code in the flags' format bits (docs/formats.md); 3 is refused."""

    INT32 = 0           # one signed 32-bit value per lane
    INT16 = 1           # two per lane, the first in the high half
    INT8 = 2            # four per lane


# The `flags` byte: (name, mask, label). Bits 6-7 are zero.
FLAG_FIELDS = (
    ("ver", 0x01, "Version"),                       # which of the slot's two cells
    ("retx", 0x02, "Retransmission"),               # CONTRIB/QUERY: resent; RESULT: waited
                                                    # for a recovery (no RTT sample, §3)
    ("format", 0x0C, "Lane format"),                # a Format code
    ("overflow", 0x10, "Overflow"),                 # a packed sum of the cell overflowed (§5.3)
    ("next", 0x20, "Next use claimed"),             # hashed sharing (§3.3): CONTRIB: claim a
                                                    # cell for the slot's next use; RESULT:
                                                    # claimed
)
FLAG_VER, FLAG_RETX, FLAG_FORMAT, FLAG_OVERFLOW, FLAG_NEXT = \
    (mask for _, mask, _ in FLAG_FIELDS)
FORMAT_SHIFT = (FLAG_FORMAT & -FLAG_FORMAT).bit_length() - 1     # 2
KNOWN_FLAGS = FLAG_VER | FLAG_RETX | FLAG_FORMAT | FLAG_OVERFLOW | FLAG_NEXT


def format_flags(code: int) -> int:
    """The flag bits of lane format `code` (a Format): 0x00, 0x04 or 0x08."""
    return (int(code) << FORMAT_SHIFT) & FLAG_FORMAT


# The header's fields in wire order, (name, bits), big-endian; `p4src/ina_headers.p4inc`'s
# `header ina_t` has the same names and widths. The values (k 32-bit lanes) follow it.
LAYOUT = (
    ("kind", 8),
    ("flags", 8),
    ("job", 16),
    ("worker", 8),      # CONTRIB: the sender's id; RESULT: the receiver's
    ("pad", 8),         # zero
    ("slot", 16),
    ("chunk", 32),
    ("count", 16),      # RESULT: how many contributions the values sum
    ("bmax", 16),       # a block's max |x| as bfloat16, rounded up (§5.2)
)
FIELD_NAMES = tuple(name for name, _ in LAYOUT)
FIELD_BITS = dict(LAYOUT)
FIELD_OFFSETS = {}                      # name -> byte offset in the header
_offset = 0
for _name, _bits in LAYOUT:
    FIELD_OFFSETS[_name] = _offset
    _offset += _bits // 8
del _offset, _name, _bits
_STRUCT_CODES = {8: "B", 16: "H", 32: "I"}
HEADER_FORMAT = "!" + "".join(_STRUCT_CODES[bits] for _, bits in LAYOUT)
HEADER = struct.Struct(HEADER_FORMAT)   # unpacks to the LAYOUT fields, in order
HEADER_BYTES = HEADER.size              # 16
FIELD_MAX = {name: (1 << bits) - 1 for name, bits in LAYOUT}
LANE_BITS = 32
MIN_K, MAX_K = 4, 364       # 364: IPv4 20 + UDP 8 + header 16 + 4k = 1500 (MTU)


def numpy_fields() -> list[tuple[str, str]]:
    """The header as numpy structured-dtype fields (name, big-endian unsigned type code)."""
    return [(name, "u1" if bits == 8 else f">u{bits // 8}") for name, bits in LAYOUT]
