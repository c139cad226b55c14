"""SetForwardingPipelineConfig requests read from the wire with the program parsed once.

Why: protobuf is pure Python here, and parsing a request that carries ina.p4 (a P4Info and a
1.7 MB JSON) took ~9 ms per switch, then verifying it ~3 ms, although a simulated fabric pushes
the same program to a hundred switches in one process. The server's deserializer
(`parse_request`) therefore parses every top-level field of the request but `config`, and keeps
the config's bytes; `verified_pipeline` verifies those bytes once per content and hands every
further device with the same bytes (compared, a memcmp) the same read-only `Pipeline`. What a
device sees is the same as before: the request's fields and a verified copy of exactly the
config that was sent.

Requests the scan does not take apart (a config field given twice, which protobuf merges, or
bytes that are not well-formed) are parsed whole as before, so their errors do not change.
"""

from __future__ import annotations

import hashlib
import threading
from collections import OrderedDict
from dataclasses import dataclass

from google.protobuf.message import DecodeError
from p4.v1 import p4runtime_pb2

from .errors import INVALID_ARGUMENT, RequestError
from .pipeline import Pipeline, verify

SetRequest = p4runtime_pb2.SetForwardingPipelineConfigRequest
_CONFIG_NUMBER = SetRequest.DESCRIPTOR.fields_by_name["config"].number
MAX_VERIFIED = 4        # pipelines kept verified (least recently used first out)

_verified: OrderedDict[bytes, tuple[bytes, Pipeline]] = OrderedDict()   # digest -> (config, it)
_lock = threading.Lock()


@dataclass(frozen=True)
class PipelineRequest:
    """A SetForwardingPipelineConfigRequest as the server's deserializer delivers it: `header`
    holds every field but `config`; `config` is that field's bytes (None: the field is absent)."""

    header: SetRequest
    config: bytes | None


def parse_request(raw: bytes) -> PipelineRequest | SetRequest:
    """The server's deserializer for SetForwardingPipelineConfig (see the module's docstring)."""
    found = _config_span(raw)
    if found is None:
        return SetRequest.FromString(raw)
    if found == ():
        return PipelineRequest(SetRequest.FromString(raw), None)
    field_start, body_start, end = found
    header = SetRequest.FromString(raw[:field_start] + raw[end:])
    return PipelineRequest(header, _known_or_copy(raw, body_start, end))


def _known_or_copy(raw: bytes, start: int, end: int) -> bytes:
    """`raw[start:end]`; if a verified config has exactly these bytes (compared in place), that
    bytes object instead of a copy (ina.p4's is 1.7 MB: a fabric's pushes copied it per switch,
    and `verified_pipeline` then compared the copy with it)."""
    size = end - start
    with _lock:
        known = [config for config, _ in _verified.values() if len(config) == size]
    for config in known:
        if raw.startswith(config, start):   # a memcmp in place (a memoryview compares by item)
            return config
    return raw[start:end]


def _config_span(raw: bytes):
    """(field start, body start, end) of the one `config` field of a serialised request, () if
    there is none, None if the bytes are not a plain sequence of fields or config repeats."""
    position, size, span = 0, len(raw), ()
    try:
        while position < size:
            start = position
            tag, position = _varint(raw, position)
            kind = tag & 7
            if kind == 0:
                _, position = _varint(raw, position)
            elif kind == 1:
                position += 8
            elif kind == 5:
                position += 4
            elif kind == 2:
                length, position = _varint(raw, position)
                if tag >> 3 == _CONFIG_NUMBER:
                    if span:
                        return None          # repeated: protobuf merges them, let it
                    span = (start, position, position + length)
                position += length
            else:
                return None                  # groups: not in this message
            if position > size:
                return None
    except IndexError:
        return None
    return span


def _varint(raw: bytes, position: int) -> tuple[int, int]:
    value = shift = 0
    while True:
        byte = raw[position]
        position += 1
        value |= (byte & 0x7F) << shift
        if byte < 0x80:
            return value, position
        shift += 7
        if shift > 63:
            raise IndexError("varint too long")


def verified_pipeline(config: bytes | None) -> Pipeline:
    """The verified pipeline of a serialised ForwardingPipelineConfig, verified once per content
    (a failure is not kept: each request gets its error). The result is shared: read only."""
    if config is None:
        return verify(p4runtime_pb2.ForwardingPipelineConfig())
    with _lock:
        for key, (known, pipeline) in _verified.items():
            if known is config or known == config:   # the same object, or a memcmp
                _verified.move_to_end(key)
                return pipeline
    try:
        message = p4runtime_pb2.ForwardingPipelineConfig.FromString(config)
    except DecodeError as exc:
        raise RequestError(INVALID_ARGUMENT, f"config: not a ForwardingPipelineConfig: {exc}") \
            from None
    pipeline = verify(message)
    with _lock:
        _verified[hashlib.sha256(config).digest()] = (config, pipeline)
        while len(_verified) > MAX_VERIFIED:
            _verified.popitem(last=False)
    return pipeline


def clear() -> None:
    with _lock:
        _verified.clear()
