"""Thrift's binary protocol, sans I/O: typed values to bytes and back.

BMv2's runtime (what `simple_switch_CLI` and bmv2stf.py speak) is Thrift's binary protocol over a
plain byte stream (a buffered transport, no frame lengths), each call's name prefixed by its
service for the multiplexed processor (`standard:bm_mt_add_entry`). This module knows only the
wire format: a `Reader` over bytes that says `Incomplete` when a message has not all arrived yet,
and a `Writer`. What the values mean is `idl.py`'s; moving bytes is `server.py`'s.

Wire facts (Thrift's binary protocol): big-endian integers; a string is an i32 length and its
bytes; a struct is fields, each a type byte, an i16 id and the value, then a STOP byte (0); a
list or set is an element type byte and an i32 count; a map is two type bytes and an i32 count;
a message starts with the strict header `0x8001_00tt` (tt: 1 call, 2 reply, 3 exception, 4
one-way), the name and an i32 sequence id, then the arguments (or result) as a struct.
"""

from __future__ import annotations

import struct
from dataclasses import dataclass

STOP, BOOL, BYTE, DOUBLE, I16, I32, I64, STRING, STRUCT, MAP, SET, LIST = \
    0, 2, 3, 4, 6, 8, 10, 11, 12, 13, 14, 15

CALL, REPLY, EXCEPTION, ONEWAY = 1, 2, 3, 4
VERSION_1 = 0x80010000
VERSION_MASK = 0xFFFF0000

MAX_STRING = 64 << 20        # no runtime call is near this; a larger length is a broken stream
MAX_CONTAINER = 1 << 24
MAX_DEPTH = 64


class ProtocolError(Exception):
    """Bytes that are not Thrift's binary protocol (the connection cannot go on)."""


class Incomplete(Exception):
    """The buffer ends inside a message: wait for more bytes."""


# ------------------------------------------------------------------------------ value types
@dataclass(frozen=True)
class Scalar:
    """A base type and its type byte on the wire."""

    name: str
    wire: int


@dataclass(frozen=True)
class ListOf:
    element: object

    wire = LIST


@dataclass(frozen=True)
class MapOf:
    key: object
    value: object

    wire = MAP


@dataclass(frozen=True)
class Field:
    id: int
    name: str
    type: object


@dataclass(frozen=True)
class Struct:
    """A struct or exception; decoded as a dict of the fields present, by name."""

    name: str
    fields: tuple[Field, ...]

    wire = STRUCT

    def by_id(self) -> dict[int, Field]:
        return {f.id: f for f in self.fields}


Bool = Scalar("bool", BOOL)
Byte = Scalar("byte", BYTE)
Double = Scalar("double", DOUBLE)
Int16 = Scalar("i16", I16)
Int32 = Scalar("i32", I32)
Int64 = Scalar("i64", I64)
Binary = Scalar("binary", STRING)     # bytes
Text = Scalar("string", STRING)       # str (UTF-8 on the wire)

_FIXED = {BOOL: ">b", BYTE: ">b", DOUBLE: ">d", I16: ">h", I32: ">i", I64: ">q"}
_RANGES = {BYTE: 8, I16: 16, I32: 32, I64: 64}


# ------------------------------------------------------------------------------- reading
class Reader:
    """Values read one after another from `data`; `Incomplete` when it runs out."""

    def __init__(self, data: bytes | bytearray | memoryview, pos: int = 0):
        self.data = data
        self.pos = pos

    def take(self, n: int) -> bytes:
        end = self.pos + n
        if end > len(self.data):
            raise Incomplete
        chunk = bytes(self.data[self.pos:end])
        self.pos = end
        return chunk

    def fixed(self, wire: int):
        fmt = _FIXED[wire]
        (value,) = struct.unpack(fmt, self.take(struct.calcsize(fmt)))
        return value

    def length(self, limit: int, what: str) -> int:
        n = self.fixed(I32)
        if n < 0 or n > limit:
            raise ProtocolError(f"{what} length {n} is out of range")
        return n

    def message_begin(self) -> tuple[str, int, int]:
        """(name, message type, sequence id); the strict header or the old one without it."""
        first = self.fixed(I32)
        if first < 0:
            if (first & VERSION_MASK) != VERSION_1:
                raise ProtocolError(f"bad protocol version 0x{first & 0xFFFFFFFF:08x}")
            mtype = first & 0xFF
            name = self._utf8(self.take(self.length(MAX_STRING, "name")), "message name")
            seqid = self.fixed(I32)
        else:
            if first > MAX_STRING:
                raise ProtocolError(f"message name length {first} is out of range")
            name = self._utf8(self.take(first), "message name")
            mtype = self.fixed(BYTE)
            seqid = self.fixed(I32)
        if mtype not in (CALL, REPLY, EXCEPTION, ONEWAY):
            raise ProtocolError(f"bad message type {mtype}")
        return name, mtype, seqid

    @staticmethod
    def _utf8(raw: bytes, what: str) -> str:
        try:
            return raw.decode("utf-8")
        except UnicodeDecodeError as e:
            raise ProtocolError(f"{what} is not UTF-8: {e}") from None

    def value(self, vtype, depth: int = 0):
        if depth > MAX_DEPTH:
            raise ProtocolError("values nested too deeply")
        if isinstance(vtype, Struct):
            return self.struct(vtype, depth)
        if isinstance(vtype, ListOf):
            elem_wire, n = self.fixed(BYTE), self.length(MAX_CONTAINER, "list")
            if n and elem_wire != vtype.element.wire:
                raise ProtocolError(f"list of type {elem_wire} where {vtype.element.wire} "
                                    "was expected")
            return [self.value(vtype.element, depth + 1) for _ in range(n)]
        if isinstance(vtype, MapOf):
            kw, vw, n = self.fixed(BYTE), self.fixed(BYTE), self.length(MAX_CONTAINER, "map")
            if n and (kw, vw) != (vtype.key.wire, vtype.value.wire):
                raise ProtocolError("map of unexpected types")
            out = {}
            for _ in range(n):
                k = self.value(vtype.key, depth + 1)
                out[k] = self.value(vtype.value, depth + 1)
            return out
        if vtype.wire == STRING:
            raw = self.take(self.length(MAX_STRING, "string"))
            return raw if vtype is Binary else self._utf8(raw, "string")
        value = self.fixed(vtype.wire)
        return bool(value) if vtype.wire == BOOL else value

    def struct(self, stype: Struct, depth: int = 0) -> dict:
        fields = stype.by_id()
        out = {}
        while True:
            wire = self.fixed(BYTE)
            if wire == STOP:
                return out
            fid = self.fixed(I16)
            f = fields.get(fid)
            if f is not None and f.type.wire == wire:
                out[f.name] = self.value(f.type, depth + 1)
            else:                    # unknown or of another type: Thrift skips it
                self.skip(wire, depth + 1)

    def skip(self, wire: int, depth: int = 0) -> None:
        if depth > MAX_DEPTH:
            raise ProtocolError("values nested too deeply")
        if wire in _FIXED:
            self.take(struct.calcsize(_FIXED[wire]))
        elif wire == STRING:
            self.take(self.length(MAX_STRING, "string"))
        elif wire == STRUCT:
            while (inner := self.fixed(BYTE)) != STOP:
                self.fixed(I16)
                self.skip(inner, depth + 1)
        elif wire in (LIST, SET):
            elem, n = self.fixed(BYTE), self.length(MAX_CONTAINER, "list")
            for _ in range(n):
                self.skip(elem, depth + 1)
        elif wire == MAP:
            kw, vw, n = self.fixed(BYTE), self.fixed(BYTE), self.length(MAX_CONTAINER, "map")
            for _ in range(n):
                self.skip(kw, depth + 1)
                self.skip(vw, depth + 1)
        else:
            raise ProtocolError(f"unknown field type {wire}")


# ------------------------------------------------------------------------------- writing
class Writer:
    """Values appended to `out` (a bytearray)."""

    def __init__(self):
        self.out = bytearray()

    def fixed(self, wire: int, value) -> None:
        if wire in _RANGES:
            bits = _RANGES[wire]
            if not -(1 << (bits - 1)) <= value < (1 << (bits - 1)):
                raise ValueError(f"{value} does not fit a signed {bits}-bit Thrift integer")
        self.out += struct.pack(_FIXED[wire], value)

    def message_begin(self, name: str, mtype: int, seqid: int) -> None:
        self.fixed(I32, (VERSION_1 | mtype) - (1 << 32))
        self.string(name.encode("utf-8"))
        self.fixed(I32, seqid)

    def string(self, raw: bytes) -> None:
        self.fixed(I32, len(raw))
        self.out += raw

    def value(self, vtype, value) -> None:
        if isinstance(vtype, Struct):
            self.struct(vtype, value)
        elif isinstance(vtype, ListOf):
            self.fixed(BYTE, vtype.element.wire)
            self.fixed(I32, len(value))
            for item in value:
                self.value(vtype.element, item)
        elif isinstance(vtype, MapOf):
            self.fixed(BYTE, vtype.key.wire)
            self.fixed(BYTE, vtype.value.wire)
            self.fixed(I32, len(value))
            for k, v in value.items():
                self.value(vtype.key, k)
                self.value(vtype.value, v)
        elif vtype is Text:
            self.string(value.encode("utf-8"))
        elif vtype is Binary:
            self.string(bytes(value))
        elif vtype.wire == BOOL:
            self.fixed(BOOL, 1 if value else 0)
        else:
            self.fixed(vtype.wire, value)

    def struct(self, stype: Struct, value: dict) -> None:
        for f in stype.fields:
            if value.get(f.name) is None:
                continue
            self.fixed(BYTE, f.type.wire)
            self.fixed(I16, f.id)
            self.value(f.type, value[f.name])
        self.fixed(BYTE, STOP)
