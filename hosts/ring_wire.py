"""Messages of the ring all-reduce and their framing over a byte stream (TCP).

Every message is a 24-byte header, then `count` big-endian floats:

    magic "IR" (2) | version 2 (1) | kind (1) | dtype (1) | pad 0 (1) | step u16 |
    call u32 | index u32 | offset u32 | count u32 | values

kind 0 HELLO (the first message on a connection: `call` = job, `step` = ring size n, `index` =
the sender's rank, no values), 1 REDUCE_SCATTER and 2 ALL_GATHER (`call` = the call number,
`step`, `index` = the segment, `offset` = where in the segment the values start: a segment
travels as slices, so that a rank forwards a slice as soon as it has it). Version 1 (until
2026-11-28) had no offset: a segment was one message. dtype 0 float32, 1 float64 (the accumulator of the ring).
`StreamDecoder` takes bytes in any chunking and returns whole messages; a header that cannot be
ours raises `RingProtocolError` at once (so garbage never makes it wait for a huge body).
"""

from __future__ import annotations

import enum
import struct
from dataclasses import dataclass

import numpy as np

from .errors import RingProtocolError

MAGIC = b"IR"
VERSION = 2
HEADER = struct.Struct("!2sBBBBHIIII")
HEADER_BYTES = HEADER.size     # 24
MAX_VALUES = 1 << 28           # 1 GiB of float32: a larger count is garbage, not a segment
DTYPES = {0: np.dtype(">f4"), 1: np.dtype(">f8")}
DTYPE_CODES = {np.dtype(np.float32): 0, np.dtype(np.float64): 1}


class RingKind(enum.IntEnum):
    HELLO = 0
    REDUCE_SCATTER = 1
    ALL_GATHER = 2


@dataclass(frozen=True, kw_only=True)
class Hello:
    """Who is on the other end of a connection: checked before any data flows."""

    job: int
    rank: int
    n: int

    def __post_init__(self) -> None:
        if not 0 <= self.job <= 0xFFFFFFFF or not 1 <= self.n <= 0xFFFF or \
                not 0 <= self.rank < self.n:
            raise ValueError(f"bad hello: job {self.job}, rank {self.rank}, n {self.n}")


@dataclass(frozen=True, kw_only=True, eq=False)
class Segment:
    """One ring step's data: values of segment `index` of the vector from `offset` on, in the
    accumulator's dtype."""

    kind: RingKind
    call: int
    step: int
    index: int
    values: np.ndarray
    offset: int = 0

    def __post_init__(self) -> None:
        if self.kind not in (RingKind.REDUCE_SCATTER, RingKind.ALL_GATHER):
            raise ValueError(f"a segment's kind is REDUCE_SCATTER or ALL_GATHER, not {self.kind}")
        if not 0 <= self.call <= 0xFFFFFFFF or not 0 <= self.step <= 0xFFFF or \
                not 0 <= self.index <= 0xFFFFFFFF or not 0 <= self.offset <= 0xFFFFFFFF:
            raise ValueError(f"call {self.call}, step {self.step}, index {self.index} or "
                             f"offset {self.offset} out of range")
        if self.values.ndim != 1 or self.values.dtype.newbyteorder("=") not in DTYPE_CODES:
            raise ValueError(f"values must be a 1-D float32/float64 array, "
                             f"got {self.values.dtype}")
        if self.values.size > MAX_VALUES:
            raise ValueError(f"a segment holds at most {MAX_VALUES} values")


def encode(message: Hello | Segment) -> bytes:
    """The bytes of one message."""
    if isinstance(message, Hello):
        return HEADER.pack(MAGIC, VERSION, RingKind.HELLO, 0, 0, message.n, message.job,
                           message.rank, 0, 0)
    code = DTYPE_CODES[message.values.dtype.newbyteorder("=")]
    header = HEADER.pack(MAGIC, VERSION, message.kind, code, 0, message.step, message.call,
                         message.index, message.offset, message.values.size)
    return header + message.values.astype(DTYPES[code], copy=False).tobytes()


class StreamDecoder:
    """Reassembles messages from a byte stream."""

    # (slots: the native core reads and writes them at their offsets, native/attrs.c)
    __slots__ = ('_buffer', '_header')

    def __init__(self) -> None:
        self._buffer = bytearray()
        self._header: tuple | None = None

    @property
    def buffered(self) -> int:
        return len(self._buffer)

    def feed(self, data: bytes) -> list[Hello | Segment]:
        self._buffer += data
        messages = []
        while True:
            if self._header is None:
                if len(self._buffer) < HEADER_BYTES:
                    return messages
                self._header = self._check_header(HEADER.unpack_from(self._buffer))
            magic, version, kind, code, pad, step, call, index, offset, count = self._header
            size = HEADER_BYTES + count * (DTYPES[code].itemsize if kind else 0)
            if len(self._buffer) < size:
                return messages
            if kind != RingKind.HELLO:
                # the values straight out of the buffer, byte-swapped into their own array:
                # one copy (a bytes() of the body first took two more); the view is gone
                # before the buffer is cut
                values = np.frombuffer(self._buffer, dtype=DTYPES[code], count=count,
                                       offset=HEADER_BYTES).astype(DTYPES[code].newbyteorder("="))
            del self._buffer[:size]
            self._header = None
            if kind == RingKind.HELLO:
                try:
                    messages.append(Hello(job=call, rank=index, n=step))
                except ValueError as error:
                    raise RingProtocolError(str(error)) from None
            else:
                messages.append(Segment(kind=RingKind(kind), call=call, step=step, index=index,
                                        values=values, offset=offset))

    @staticmethod
    def _check_header(header: tuple) -> tuple:
        magic, version, kind, code, pad, step, call, index, offset, count = header
        if magic != MAGIC:
            raise RingProtocolError(f"bad magic {magic!r}: not a ring message")
        if version != VERSION:
            raise RingProtocolError(f"ring message version {version}, expected {VERSION}")
        if kind not in RingKind._value2member_map_:
            raise RingProtocolError(f"unknown ring message kind {kind}")
        if code not in DTYPES or pad:
            raise RingProtocolError(f"unknown dtype code {code} or non-zero padding")
        if kind == RingKind.HELLO and (count or offset or code):
            # a HELLO has no values, so no dtype either: encode() writes 0 there
            raise RingProtocolError("a HELLO carries no values (count, offset and dtype 0)")
        if count > MAX_VALUES:
            raise RingProtocolError(f"a segment of {count} values is larger than allowed")
        return header
