"""The aggregation packet's UDP payload (docs/protocol.md §1): one frozen dataclass, encode, decode.

Layout (big-endian): kind u8, flags u8 (bit 0 ver, bit 1 retx), job u16, worker u8, pad u8,
slot u16, chunk u32, count u8, pad u24, then k signed 32-bit values. k is a multiple of 4 from
4 to 256 (the P4 program's INA_K). `InaPacket` validates every field on construction, so an
encoded packet is always well formed; `decode` of anything else raises `WireError` with the
reason, never a bare struct or index error.
"""

from __future__ import annotations

import enum
import struct
from dataclasses import dataclass

import numpy as np

INA_UDP_PORT = 48879
HEADER = struct.Struct("!BBHBBHIB3x")
HEADER_BYTES = HEADER.size          # 16
MIN_K, MAX_K = 4, 256
FLAG_VER, FLAG_RETX = 0x01, 0x02
_INT32_MIN, _INT32_MAX = -(2**31), 2**31 - 1


class Kind(enum.IntEnum):
    CONTRIB = 0
    RESULT = 1
    MAX_CONTRIB = 2
    MAX_RESULT = 3


class WireError(ValueError):
    """A payload that is not a well-formed aggregation packet; `reason` says why."""

    def __init__(self, reason: str):
        super().__init__(f"malformed aggregation packet: {reason}")
        self.reason = reason


def check_k(k: int) -> int:
    """k as validated values-per-packet (a multiple of 4 from 4 to 256)."""
    if isinstance(k, bool) or not isinstance(k, int) or not MIN_K <= k <= MAX_K or k % 4:
        raise ValueError(f"k must be a multiple of 4 from {MIN_K} to {MAX_K}, got {k!r}")
    return k


def payload_bytes(k: int) -> int:
    """UDP payload length of a packet with k values."""
    return HEADER_BYTES + 4 * k


def _check_uint(name: str, value: int, bits: int) -> None:
    if isinstance(value, bool) or not isinstance(value, int) or not 0 <= value < 1 << bits:
        raise ValueError(f"{name} must be an integer in [0, {(1 << bits) - 1}], got {value!r}")


@dataclass(frozen=True, kw_only=True)
class InaPacket:
    """One aggregation packet; values are Python ints in the int32 range."""

    kind: Kind
    job: int
    worker: int
    slot: int
    chunk: int
    values: tuple[int, ...]
    ver: int = 0
    retx: bool = False
    count: int = 0

    def __post_init__(self) -> None:
        try:
            object.__setattr__(self, "kind", Kind(self.kind))
        except ValueError:
            raise ValueError(f"kind must be one of {[int(k) for k in Kind]}, got {self.kind!r}")
        _check_uint("job", self.job, 16)
        _check_uint("worker", self.worker, 8)
        _check_uint("slot", self.slot, 16)
        _check_uint("chunk", self.chunk, 32)
        _check_uint("count", self.count, 8)
        _check_uint("ver", self.ver, 1)
        if not isinstance(self.retx, bool):
            raise ValueError(f"retx must be a bool, got {self.retx!r}")
        values = tuple(self.values)
        check_k(len(values))
        if not set(map(type, values)) <= {int}:     # C-speed: this runs for every packet
            raise ValueError("values must be Python ints")
        if min(values) < _INT32_MIN or max(values) > _INT32_MAX:
            raise ValueError("values must fit in a signed 32-bit integer")
        object.__setattr__(self, "values", values)

    @property
    def k(self) -> int:
        return len(self.values)


def encode(packet: InaPacket) -> bytes:
    """The UDP payload of `packet`."""
    flags = packet.ver | (FLAG_RETX if packet.retx else 0)
    header = HEADER.pack(packet.kind, flags, packet.job, packet.worker, 0, packet.slot,
                         packet.chunk, packet.count)
    return header + np.array(packet.values, dtype=">i4").tobytes()


def decode(payload: bytes, k: int | None = None) -> InaPacket:
    """Parse a UDP payload; with `k` given, the length must match it exactly."""
    data = bytes(payload)
    if len(data) < HEADER_BYTES:
        raise WireError(f"{len(data)} bytes, shorter than the {HEADER_BYTES}-byte header")
    body = len(data) - HEADER_BYTES
    if k is not None and body != 4 * k:
        raise WireError(f"{len(data)} bytes, expected {payload_bytes(k)} for k={k}")
    if body % 16 or not MIN_K * 4 <= body <= MAX_K * 4:
        raise WireError(f"{body} bytes of values is not k*4 for k a multiple of 4 in "
                        f"[{MIN_K}, {MAX_K}]")
    kind, flags, job, worker, pad, slot, chunk, count = HEADER.unpack_from(data)
    if kind not in Kind._value2member_map_:
        raise WireError(f"unknown kind {kind}")
    if flags & ~(FLAG_VER | FLAG_RETX):
        raise WireError(f"unknown flag bits 0x{flags:02x}")
    if pad or any(data[13:16]):
        raise WireError("padding bytes are not zero")
    values = np.frombuffer(data, dtype=">i4", offset=HEADER_BYTES)
    return InaPacket(kind=Kind(kind), job=job, worker=worker, slot=slot, chunk=chunk,
                     values=tuple(values.tolist()), ver=flags & FLAG_VER,
                     retx=bool(flags & FLAG_RETX), count=count)


def with_retx(payload: bytes) -> bytes:
    """The same encoded packet with the `retx` flag set (a retransmission)."""
    return payload[:1] + bytes([payload[1] | FLAG_RETX]) + payload[2:]
