"""The aggregation packet's UDP payload (docs/protocol.md §1): one frozen dataclass, encode, decode.

The header (kinds, flags, field layout) is defined in `ina_header.py` and re-exported here:
kind u8, flags u8 (ver, retx, the lane format, overflow, next), job u16, worker u8, pad u8, slot u16,
chunk u32, count u16, bmax u16, then k 32-bit lanes, each one int32, two int16 or four int8
values (docs/formats.md). k is a multiple of 4 from 4 to 364 (the P4 program's INA_K). QUERY
and NACK (§3.1) are the header alone, no values. `InaPacket` validates every field on
construction, so an encoded packet is always well formed; `decode` of anything else raises
`WireError` with the reason, never a bare struct or index error.

The values are a read-only int32 numpy array, checked by its length and dtype rather than
element by element: this module runs for every packet a host sends or receives, and per-value
Python checks used to cost more than the switch runtime itself (docs/sim.md). An array of a
32-bit signed dtype (either byte order) is accepted as it is; wider integers are range-checked
with one vectorized min/max; anything else (floats, bools, objects) is refused.
"""

from __future__ import annotations

import functools
import struct
from dataclasses import dataclass
from typing import Callable

import numpy as np

# The header's definition (kinds, flags, layout) lives in ina_header.py; its names are
# re-exported here for the modules that import them from this one.
from .ina_header import (FIELD_BITS, FIELD_MAX, FLAG_FORMAT, FLAG_NEXT,  # noqa: F401
                         FLAG_OVERFLOW, FLAG_RETX, FLAG_VER, FORMAT_SHIFT, HEADER, HEADER_BYTES,
                         HEADER_ONLY_KINDS, INA_UDP_PORT, FIELD_OFFSETS, KNOWN_FLAGS, MAX_K,
                         MIN_K, Format, Kind, numpy_fields)

_KNOWN_FLAGS = KNOWN_FLAGS
_FLAGS_AT, _BMAX_AT = FIELD_OFFSETS["flags"], FIELD_OFFSETS["bmax"]
WIRE_DTYPE = np.dtype(">i4")        # the values as they are on the wire
_INT32_MIN, _INT32_MAX = -(2**31), 2**31 - 1
_HEADER_LIMITS = (("job", FIELD_MAX["job"]), ("worker", FIELD_MAX["worker"]),
                  ("slot", FIELD_MAX["slot"]), ("chunk", FIELD_MAX["chunk"]),
                  ("count", FIELD_MAX["count"]), ("ver", 1), ("bmax", FIELD_MAX["bmax"]),
                  ("fmt", max(Format)))
_KINDS = {int(kind): kind for kind in Kind}
_NO_VALUES = np.zeros(0, np.int32)
_NO_VALUES.flags.writeable = False


class WireError(ValueError):
    """A payload that is not a well-formed aggregation packet; `reason` says why."""

    def __init__(self, reason: str):
        super().__init__(f"malformed aggregation packet: {reason}")
        self.reason = reason


def check_k(k: int) -> int:
    """k as validated values-per-packet (a multiple of 4 from MIN_K to MAX_K)."""
    if isinstance(k, bool) or not isinstance(k, int) or not MIN_K <= k <= MAX_K or k % 4:
        raise ValueError(f"k must be a multiple of 4 from {MIN_K} to {MAX_K}, got {k!r}")
    return k


def payload_bytes(k: int) -> int:
    """UDP payload length of a packet with k values."""
    return HEADER_BYTES + 4 * k


def wire_values(values) -> np.ndarray:
    """`values` as a read-only 1-D int32 array of a valid k; ValueError saying what is wrong.

    Never copies an int32 array (of either byte order): a writable one is wrapped in a
    read-only view, so the packet stays immutable without touching the caller's array.
    """
    array = values if isinstance(values, np.ndarray) else np.asarray(values)
    if array.ndim != 1:
        raise ValueError(f"values must be a 1-D sequence, got shape {array.shape}")
    check_k(array.size)
    dtype = array.dtype
    if dtype.kind not in "iu":
        raise ValueError(f"values must be integers in the int32 range, got dtype {dtype}")
    if (dtype.kind == "u" and dtype.itemsize >= 4) or dtype.itemsize == 8:
        if int(array.min()) < _INT32_MIN or int(array.max()) > _INT32_MAX:
            raise ValueError("values must fit in a signed 32-bit integer")
    if dtype.kind != "i" or dtype.itemsize != 4:
        array = array.astype(np.int32)
    elif type(array.base) is bytes:
        return array                 # immutable already: a view of a received payload
    else:
        array = array.view()
    array.flags.writeable = False
    return array


def _bad_header_field(packet: "InaPacket") -> str:
    """Why the header fields are invalid (the slow path, only run once they are known bad)."""
    for name, limit in _HEADER_LIMITS:
        value = getattr(packet, name)
        if type(value) is not int or not 0 <= value <= limit:
            return f"{name} must be an integer in [0, {limit}], got {value!r}"
    for name in ("retx", "overflow", "next_use"):
        if type(getattr(packet, name)) is not bool:
            return f"{name} must be a bool, got {getattr(packet, name)!r}"
    return "invalid header field"


@dataclass(frozen=True, kw_only=True, eq=False)
class InaPacket:
    """One aggregation packet; `values` is a read-only int32 array (see `wire_values`)."""

    kind: Kind
    job: int
    worker: int
    slot: int
    chunk: int
    values: np.ndarray
    ver: int = 0
    retx: bool = False
    count: int = 0
    bmax: int = 0           # a block's max |x|, bfloat16 rounded up (docs/protocol.md §5.2)
    fmt: int = 0            # lane format code: 0 int32, 1 int16, 2 int8
    overflow: bool = False  # RESULT: a packed sum of the cell overflowed
    next_use: bool = False  # flag `next` (hashed sharing, §3.3): CONTRIB asks the switch to
    #                         claim the slot's next cell; RESULT says it was claimed

    def __post_init__(self) -> None:
        kind = _KINDS.get(self.kind) if type(self.kind) in (int, Kind) else None
        if kind is None:
            raise ValueError(f"kind must be one of {sorted(_KINDS)}, got {self.kind!r}")
        object.__setattr__(self, "kind", kind)
        # One expression for the common case (this runs for every packet); names come after.
        job, worker, slot, chunk = self.job, self.worker, self.slot, self.chunk
        if not (type(job) is int and 0 <= job <= 0xFFFF
                and type(worker) is int and 0 <= worker <= 0xFF
                and type(slot) is int and 0 <= slot <= 0xFFFF
                and type(chunk) is int and 0 <= chunk <= 0xFFFFFFFF
                and type(self.count) is int and 0 <= self.count <= 0xFFFF
                and type(self.ver) is int and (self.ver == 0 or self.ver == 1)
                and type(self.retx) is bool
                and type(self.bmax) is int and 0 <= self.bmax <= 0xFFFF
                and type(self.fmt) is int and 0 <= self.fmt <= 2
                and type(self.overflow) is bool and type(self.next_use) is bool):
            raise ValueError(_bad_header_field(self))
        if kind in HEADER_ONLY_KINDS:
            if len(self.values):
                raise ValueError(f"a {kind.name} carries no values, got {len(self.values)}")
            object.__setattr__(self, "values", _NO_VALUES)
            return
        object.__setattr__(self, "values", wire_values(self.values))

    @property
    def k(self) -> int:
        return self.values.size

    def _header(self) -> tuple:
        return (self.kind, self.job, self.worker, self.slot, self.chunk, self.ver, self.retx,
                self.count, self.bmax, self.fmt, self.overflow, self.next_use)

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, InaPacket):
            return NotImplemented
        return self._header() == other._header() and np.array_equal(self.values, other.values)

    def __hash__(self) -> int:
        return hash((self._header(), self.values.astype(WIRE_DTYPE, copy=False).tobytes()))


def encode(packet: InaPacket) -> bytes:
    """The UDP payload of `packet`."""
    flags = (packet.ver | (FLAG_RETX if packet.retx else 0) | (packet.fmt << FORMAT_SHIFT)
             | (FLAG_OVERFLOW if packet.overflow else 0) | (FLAG_NEXT if packet.next_use else 0))
    header = HEADER.pack(packet.kind, flags, packet.job, packet.worker, 0, packet.slot,
                         packet.chunk, packet.count, packet.bmax)
    return header + packet.values.astype(WIRE_DTYPE, copy=False).tobytes()


def decode_header(payload: bytes, k: int | None = None) -> tuple:
    """`(kind, job, worker, slot, chunk, ver, retx, count)` of a well-formed payload.

    Checks everything but the values (any 32-bit pattern is a value); with `k` given, the
    length must match it exactly. WireError says what is wrong. Receivers that only need a
    slice of the values use this and `decode_values`, without building an `InaPacket`.
    """
    size = len(payload)
    if size < HEADER_BYTES:
        raise WireError(f"{size} bytes, shorter than the {HEADER_BYTES}-byte header")
    body = size - HEADER_BYTES
    kind, flags, job, worker, pad, slot, chunk, count, _bmax = HEADER.unpack_from(payload)
    if kind not in _KINDS:
        raise WireError(f"unknown kind {kind}")
    if _KINDS[kind] in HEADER_ONLY_KINDS:
        if body:
            raise WireError(f"a {_KINDS[kind].name} is the header alone, got {body} more bytes")
    elif k is not None and body != 4 * k:
        raise WireError(f"{size} bytes, expected {payload_bytes(k)} for k={k}")
    elif body % 16 or not MIN_K * 4 <= body <= MAX_K * 4:
        raise WireError(f"{body} bytes of values is not k*4 for k a multiple of 4 in "
                        f"[{MIN_K}, {MAX_K}]")
    if flags & ~_KNOWN_FLAGS:
        raise WireError(f"unknown flag bits 0x{flags:02x}")
    if flags & FLAG_FORMAT == FLAG_FORMAT:
        raise WireError("unknown lane format 3")
    if pad:
        raise WireError("the padding byte is not zero")
    return (_KINDS[kind], job, worker, slot, chunk, flags & FLAG_VER, bool(flags & FLAG_RETX),
            count)


def block_fields(payload: bytes) -> tuple[int, int, bool]:
    """`(bmax, format code, overflow)` of a payload `decode_header` accepted."""
    flags = payload[_FLAGS_AT]
    return ((payload[_BMAX_AT] << 8) | payload[_BMAX_AT + 1],
            (flags & FLAG_FORMAT) >> FORMAT_SHIFT,
            bool(flags & FLAG_OVERFLOW))


def contribution_payload(*, job: int, worker: int, slot: int, chunk: int, ver: int, bmax: int,
                         fmt: int, body: bytes) -> bytes:
    """A CONTRIB payload from lanes already in wire order (the per-block encoder's path)."""
    try:
        header = HEADER.pack(Kind.CONTRIB, ver | (fmt << FORMAT_SHIFT), job, worker, 0, slot,
                             chunk, 0, bmax)
    except struct.error:
        raise ValueError(f"a header field is out of range: job {job!r}, worker {worker!r}, "
                         f"slot {slot!r}, chunk {chunk!r}, bmax {bmax!r}") from None
    return header + body


HEADER_DTYPE = np.dtype(numpy_fields())        # one header, as the table's rows begin

# writer(rows, *header_plan(job, worker, fmt), first_position, pool_size, first_chunk) -> bool:
# the rows' CONTRIB headers written as `contribution_table` writes them with NumPy (True), by
# C where one is installed (the simulator's, inaemu/sim/native/fast_quantize.py, checked
# against this module's NumPy headers before it writes any); False: NumPy writes them
HeaderWriter = Callable[..., bool]
_header_writer: HeaderWriter | None = None


def use_header_writer(writer: HeaderWriter | None) -> None:
    """`contribution_table` writes its headers with `writer` from now on (None: NumPy)."""
    global _header_writer
    _header_writer = writer


@functools.lru_cache(maxsize=256)
def header_plan(job: int, worker: int, fmt: int) -> tuple[bytes, int, int, int, int, int, int]:
    """A CONTRIB header of (job, worker, fmt) at position 0 (version 0, slot 0, chunk 0), and
    where its position's fields sit: (header, flags offset, version bit, slot offset, slot
    bytes, chunk offset, chunk bytes). What a header writer is given, from the layout."""
    header = HEADER.pack(Kind.CONTRIB, fmt << FORMAT_SHIFT, job, worker, 0, 0, 0, 0, 0)
    return (header, FIELD_OFFSETS["flags"], FLAG_VER, FIELD_OFFSETS["slot"],
            FIELD_BITS["slot"] // 8, FIELD_OFFSETS["chunk"], FIELD_BITS["chunk"] // 8)


def contribution_table(*, job: int, worker: int, fmt: int, first_position: int, pool_size: int,
                       chunks: int, lane_dtype, values_per_chunk: int, first_chunk: int = 0,
                       scratch: dict | None = None) -> np.ndarray:
    """Every CONTRIB of a call at once: a structured array, one row per chunk, whose bytes are
    the payloads back to back. The headers are filled (row r is chunk first_chunk + r, at
    position first_position + r: slot (first_position + r) mod pool_size, version
    ((first_position + r) div pool_size) mod 2, docs/protocol.md §4; bmax 0); the caller writes
    the values into field `lanes`. The same bytes as `contribution_payload` chunk by chunk,
    with a few array operations instead of a header pack and two copies per packet. `scratch`
    (a dict kept by the caller between calls) lends the memory of an earlier table when it is
    large enough: then the lanes hold stale values until the caller writes them."""
    if not (0 <= job <= 0xFFFF and 0 <= worker <= 0xFF and 0 <= fmt <= 2
            and 1 <= pool_size <= 0xFFFF and first_position >= 0 and 0 < chunks <= 1 << 32
            and 0 <= first_chunk and first_chunk + chunks <= 1 << 32):
        raise ValueError(f"a header field is out of range: job {job!r}, worker {worker!r}, "
                         f"fmt {fmt!r}, pool_size {pool_size!r}, {chunks} chunks from "
                         f"{first_chunk!r}")
    layout = _table_layout(np.dtype(lane_dtype), values_per_chunk)
    memory = _reused(scratch, "contributions", chunks * layout.itemsize)
    table = np.zeros(chunks, layout) if memory is None else \
        memory[:chunks * layout.itemsize].view(layout)
    rows = table.view(np.uint8).reshape(chunks, layout.itemsize)
    writer = _header_writer
    if writer is not None and writer(rows, *header_plan(job, worker, fmt), first_position,
                                     pool_size, first_chunk):
        return table
    # the headers made apart (a few small arrays that stay in cache), then written into the
    # rows in one pass: the rows are the lanes' memory, which a pass a field would walk again
    headers = np.zeros(chunks, HEADER_DTYPE)
    positions = first_position + np.arange(chunks, dtype=np.int64)
    headers["kind"] = Kind.CONTRIB
    headers["flags"] = ((positions // pool_size) % 2) | (fmt << FORMAT_SHIFT)
    headers["job"], headers["worker"] = job, worker
    headers["slot"] = positions % pool_size
    headers["chunk"] = np.arange(first_chunk, first_chunk + chunks, dtype=np.int64)
    rows[:, :HEADER_BYTES] = headers.view(np.uint8).reshape(chunks, HEADER_BYTES)
    return table


@functools.lru_cache(maxsize=32)
def _table_layout(lane_dtype: np.dtype, values_per_chunk: int) -> np.dtype:
    """A table's row: the header's fields, then `values_per_chunk` lanes."""
    return np.dtype([*numpy_fields(), ("lanes", lane_dtype, (values_per_chunk,))])


def _reused(scratch: dict | None, name: str, size: int) -> np.ndarray | None:
    """At least `size` bytes (uint8) kept in scratch[name]: the earlier ones when they are
    large enough, else new ones kept there for next time; None without a scratch."""
    if scratch is None:
        return None
    memory = scratch.get(name)
    if memory is not None and memory.size >= size:
        return memory
    scratch[name] = np.empty(size, np.uint8)
    return scratch[name]


def decode_values(payload: bytes) -> np.ndarray:
    """The values of a payload `decode_header` accepted: a read-only big-endian view, no copy."""
    return np.frombuffer(payload, WIRE_DTYPE, offset=HEADER_BYTES)


def decode(payload: bytes, k: int | None = None) -> InaPacket:
    """Parse a UDP payload; with `k` given, the length must match it exactly."""
    data = payload if type(payload) is bytes else bytes(payload)
    kind, job, worker, slot, chunk, ver, retx, count = decode_header(data, k)
    bmax, fmt, overflow = block_fields(data)
    return InaPacket(kind=kind, job=job, worker=worker, slot=slot, chunk=chunk,
                     values=decode_values(data), ver=ver, retx=retx, count=count, bmax=bmax,
                     fmt=fmt, overflow=overflow, next_use=bool(data[_FLAGS_AT] & FLAG_NEXT))


class ChunkEncoder:
    """The CONTRIB payloads of one int32 vector, chunk by chunk.

    The vector is validated (dtype, a whole number of k-value chunks) and put in wire order
    once; each packet is then a packed header and a slice of those bytes, which is what lets a
    worker keep up with the switch. The header fields are those of `InaPacket`, with the same
    ranges.
    """

    def __init__(self, *, job: int, worker: int, k: int, vector: np.ndarray):
        check_k(k)
        if not (isinstance(vector, np.ndarray) and vector.ndim == 1 and vector.dtype == np.int32
                and vector.size % k == 0 and vector.size // k <= 1 << 32):
            raise ValueError(f"expected a 1-D int32 vector of whole {k}-value chunks, got "
                             f"{getattr(vector, 'dtype', type(vector).__name__)} "
                             f"{getattr(vector, 'shape', '')}")
        InaPacket(kind=Kind.CONTRIB, job=job, worker=worker, slot=0, chunk=0,
                  values=vector[:k])                    # the header fields' checks
        self.job, self.worker, self.k = job, worker, k
        self.chunks = vector.size // k
        self._body = vector.astype(WIRE_DTYPE).tobytes()

    _table_rows = (None, 0, 0, 0)    # table_rows(), kept as FloatCodec keeps it (for C)

    def table_rows(self) -> tuple[None, int, int, int]:
        """No table of payloads here (FloatCodec.table_rows): every one through contribution."""
        return self._table_rows

    def contribution(self, chunk: int, slot: int, ver: int) -> bytes:
        """The CONTRIB payload of chunk `chunk` of the vector, for (slot, ver)."""
        if not 0 <= chunk < self.chunks or ver not in (0, 1):
            raise ValueError(f"chunk {chunk} (of {self.chunks}) or ver {ver} out of range")
        step = 4 * self.k
        try:
            header = HEADER.pack(Kind.CONTRIB, ver, self.job, self.worker, 0, slot, chunk, 0, 0)
        except struct.error:
            raise ValueError(f"slot must be an integer in [0, 65535], got {slot!r}") from None
        return header + self._body[chunk * step:(chunk + 1) * step]


def query_for(payload: bytes) -> bytes:
    """The header-only QUERY (retx set) that asks about the contribution `payload` carries."""
    return bytes((Kind.QUERY, payload[1] | FLAG_RETX)) + payload[2:HEADER_BYTES]


def with_retx(payload: bytes) -> bytes:
    """The same encoded packet with the `retx` flag set (a retransmission)."""
    return payload[:1] + bytes([payload[1] | FLAG_RETX]) + payload[2:]
