"""P4Runtime digests: DigestEntry configs, DigestLists built from the switch's learn samples,
the cache of sent samples and its DigestListAcks. Sans I/O: `DigestLists` takes samples, acks
and the time, and returns the DigestList messages to send; the device owns the lock, the clock
and the stream.

The rules are the P4Runtime specification's ("DigestEntry"): nothing is sent for a digest until
a DigestEntry enables it; a list is sent when it holds `max_list_size` distinct samples (0: no
limit) or its first sample is `max_timeout_ns` old (0: each sample at once); a sample already in
the list, or sent in a list that is neither acknowledged nor `ack_timeout_ns` old, is dropped
(with `ack_timeout_ns` 0 nothing is cached). Error codes and words are simple_switch_grpc's (PI's
digest manager). A sample is matched to its P4Info digest by its learn list's name, as
simple_switch_grpc does, and dropped when the name or the size does not match.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from typing import Callable

from p4.config.v1 import p4info_pb2, p4types_pb2
from p4.v1 import p4data_pb2, p4runtime_pb2

from .bytestrings import encode
from .errors import ALREADY_EXISTS, INVALID_ARGUMENT, NOT_FOUND, UNIMPLEMENTED, RequestError

Update = p4runtime_pb2.Update
# Builds one P4Data from a sample's bytes at an offset; returns the offset after it.
Converter = Callable[[bytes, int, p4data_pb2.P4Data], int]


# -- a digest's type: sample bytes -> P4Data ----------------------------------------------------

def converter(spec: p4types_pb2.P4DataTypeSpec,
              type_info: p4types_pb2.P4TypeInfo) -> tuple[Converter, int]:
    """A converter for `spec` and the bytes a sample of it has; UNIMPLEMENTED for a type that
    has no fixed-width form in a learn list."""
    kind = spec.WhichOneof("type_spec")
    if kind == "bitstring":
        bits = spec.bitstring
        width = bits.bit.bitwidth if bits.HasField("bit") else \
            bits.int.bitwidth if bits.HasField("int") else None
        if width is None:
            raise RequestError(UNIMPLEMENTED, "Varbits not supported for digests")
        return _bitstring((width + 7) // 8), (width + 7) // 8
    if kind == "bool":
        return _boolean, 1
    if kind == "serializable_enum":
        desc = _described(type_info.serializable_enums, spec.serializable_enum.name,
                          "Serializable enum")
        size = (desc.underlying_type.bitwidth + 7) // 8
        return _enum_value(size), size
    if kind == "new_type":
        desc = _described(type_info.new_types, spec.new_type.name, "New type")
        if desc.HasField("translated_type"):
            raise RequestError(UNIMPLEMENTED, f"a digest of type {spec.new_type.name}, which "
                                              "has a @p4runtime_translation, is not supported")
        return converter(desc.original_type, type_info)
    if kind in ("struct", "tuple"):
        if kind == "struct":
            desc = _described(type_info.structs, spec.struct.name, "Struct")
            members = [m.type_spec for m in desc.members]
        else:
            members = list(spec.tuple.members)
        parts = [converter(member, type_info) for member in members]
        return _composite(kind, [c for c, _ in parts]), sum(size for _, size in parts)
    raise RequestError(UNIMPLEMENTED,
                       f"a digest of type {kind or 'unset'} is not supported (bit<>, int<>, "
                       "bool, serializable enums, types made by `type`, and structs and tuples "
                       "of them are)")


def _described(table, name: str, what: str):
    """A type's description in P4TypeInfo (`table`: its map of that kind)."""
    if name not in table:
        raise RequestError(INVALID_ARGUMENT, f"{what} '{name}' not found in P4TypeInfo")
    return table[name]


def _bitstring(size: int) -> Converter:
    def convert(sample: bytes, at: int, out: p4data_pb2.P4Data) -> int:
        out.bitstring = encode(int.from_bytes(sample[at:at + size], "big"))
        return at + size
    return convert


def _boolean(sample: bytes, at: int, out: p4data_pb2.P4Data) -> int:
    out.bool = bool(sample[at] & 1)
    return at + 1


def _enum_value(size: int) -> Converter:
    def convert(sample: bytes, at: int, out: p4data_pb2.P4Data) -> int:
        out.enum_value = encode(int.from_bytes(sample[at:at + size], "big"))
        return at + size
    return convert


def _composite(kind: str, members: list[Converter]) -> Converter:
    def convert(sample: bytes, at: int, out: p4data_pb2.P4Data) -> int:
        like = out.struct if kind == "struct" else out.tuple
        like.SetInParent()
        for member in members:
            at = member(sample, at, like.members.add())
        return at
    return convert


# -- one digest ------------------------------------------------------------------------------

@dataclass
class _SentList:
    sent_at: float
    samples: list[bytes]


@dataclass
class Digest:
    """One P4Info digest: its config, the list being filled, and the cache of sent samples."""

    digest_id: int
    convert: Converter | None       # None: the type has no converter (`problem` says why)
    sample_size: int
    problem: RequestError | None = None
    config: p4runtime_pb2.DigestEntry | None = None
    buffer: dict[bytes, None] = field(default_factory=dict)   # insertion-ordered set
    first_at: float = 0.0
    cache: dict[bytes, int] = field(default_factory=dict)     # sample -> the list it went in
    sent: dict[int, _SentList] = field(default_factory=dict)  # list id -> its samples
    next_list_id: int = 1

    @property
    def max_timeout_s(self) -> float:
        return self.config.config.max_timeout_ns / 1e9

    @property
    def ack_timeout_s(self) -> float:
        return self.config.config.ack_timeout_ns / 1e9

    def offer(self, sample: bytes, now: float) -> p4runtime_pb2.DigestList | None:
        if self.config is None or sample in self.buffer or sample in self.cache:
            return None
        if not self.buffer:
            self.first_at = now
        self.buffer[sample] = None
        limit = self.config.config.max_list_size
        if self.config.config.max_timeout_ns == 0 or (limit > 0 and len(self.buffer) >= limit):
            return self._send(now)
        return None

    def due(self, now: float) -> p4runtime_pb2.DigestList | None:
        """Expire sent lists older than the ack timeout; the list to send now, if its time
        has come."""
        if self.config is None:
            return None
        for list_id in [i for i, s in self.sent.items() if now - s.sent_at >= self.ack_timeout_s]:
            self.ack(list_id)
        if self.buffer and now - self.first_at >= self.max_timeout_s:
            return self._send(now)
        return None

    def next_due(self) -> float | None:
        """When `due` next has work: the list's timeout or the oldest sent list's expiry."""
        if self.config is None:
            return None
        times = [s.sent_at + self.ack_timeout_s for s in self.sent.values()]
        if self.buffer:
            times.append(self.first_at + self.max_timeout_s)
        return min(times, default=None)

    def ack(self, list_id: int) -> None:
        sent = self.sent.pop(list_id, None)
        if sent is not None:
            for sample in sent.samples:
                if self.cache.get(sample) == list_id:
                    del self.cache[sample]

    def _send(self, now: float) -> p4runtime_pb2.DigestList:
        samples = list(self.buffer)
        self.buffer.clear()
        message = p4runtime_pb2.DigestList(digest_id=self.digest_id, list_id=self.next_list_id,
                                           timestamp=time.time_ns())
        for sample in samples:
            self.convert(sample, 0, message.data.add())
        if self.config.config.ack_timeout_ns > 0:
            self.sent[self.next_list_id] = _SentList(now, samples)
            for sample in samples:
                self.cache[sample] = self.next_list_id
        self.next_list_id += 1
        return message

    def reset(self) -> None:
        """DELETE: learning off, the list and cache dropped (list ids go on counting)."""
        self.config = None
        self.buffer.clear()
        self.cache.clear()
        self.sent.clear()


# -- all digests of a pipeline ------------------------------------------------------------------

class DigestLists:
    """The digests of one committed P4Info."""

    def __init__(self, p4info: p4info_pb2.P4Info) -> None:
        self.by_id: dict[int, Digest] = {}
        self.by_name: dict[str, Digest] = {}
        self.samples_dropped = 0      # no P4Info digest of the list's name, or a wrong size
        for desc in p4info.digests:
            try:
                convert, size = converter(desc.type_spec, p4info.type_info)
                digest = Digest(desc.preamble.id, convert, size)
            except RequestError as problem:
                digest = Digest(desc.preamble.id, None, 0, problem)
            self.by_id[desc.preamble.id] = digest
            self.by_name[desc.preamble.name] = digest

    def _digest(self, digest_id: int) -> Digest:
        digest = self.by_id.get(digest_id)
        if digest is None:
            raise RequestError(NOT_FOUND, f"{digest_id} is not a valid digest id")
        return digest

    def write(self, update_type: int, entry: p4runtime_pb2.DigestEntry) -> None:
        digest = self._digest(entry.digest_id)
        if update_type == Update.INSERT:
            if digest.config is not None:
                raise RequestError(ALREADY_EXISTS, f"Digest {entry.digest_id} already configured")
        elif digest.config is None:
            raise RequestError(NOT_FOUND, f"Digest {entry.digest_id} not configured")
        if update_type == Update.DELETE:
            digest.reset()
            return
        config = entry.config
        for name in ("max_timeout_ns", "max_list_size", "ack_timeout_ns"):
            if getattr(config, name) < 0:
                raise RequestError(INVALID_ARGUMENT,
                                   f"Digest {entry.digest_id}: {name} must not be negative")
        if digest.problem is not None:
            raise digest.problem
        digest.config = p4runtime_pb2.DigestEntry()
        digest.config.CopyFrom(entry)

    def read(self, entry: p4runtime_pb2.DigestEntry) -> p4runtime_pb2.DigestEntry:
        if entry.digest_id == 0:
            raise RequestError(UNIMPLEMENTED, "digest_id must be set when reading DigestEntry")
        digest = self._digest(entry.digest_id)
        if digest.config is None:
            raise RequestError(NOT_FOUND, f"Digest {entry.digest_id} not configured")
        return digest.config

    def offer(self, list_name: str, sample: bytes, now: float) -> p4runtime_pb2.DigestList | None:
        digest = self.by_name.get(list_name)
        if digest is None or digest.convert is None or len(sample) != digest.sample_size:
            self.samples_dropped += 1
            return None
        return digest.offer(sample, now)

    def ack(self, ack: p4runtime_pb2.DigestListAck) -> None:
        digest = self.by_id.get(ack.digest_id)
        if digest is not None:
            digest.ack(ack.list_id)

    def due(self, now: float) -> list[p4runtime_pb2.DigestList]:
        return [m for m in (d.due(now) for d in self.by_id.values()) if m is not None]

    def next_due(self) -> float | None:
        return min((t for t in (d.next_due() for d in self.by_id.values()) if t is not None),
                   default=None)


def write_digest(state, update_type: int, entry: p4runtime_pb2.DigestEntry) -> None:
    state.digests.write(update_type, entry)


def read_digests(state, request: p4runtime_pb2.DigestEntry, new) -> None:
    new().CopyFrom(state.digests.read(request))


__all__ = ["Digest", "DigestLists", "converter", "read_digests", "write_digest"]
