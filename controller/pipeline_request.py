"""SetForwardingPipelineConfig requests as wire bytes, the program's part serialised once.

Why: protobuf is pure Python here (the pinned 3.20.3 wheel has no C extension), and copying
ina.p4's P4Info into a request and serialising it with its 1.7 MB JSON cost ~9 ms per switch,
the same bytes for every switch of a fabric. A message's wire form is the concatenation of its
fields' encodings, and an embedded message field is its tag, its length and the embedded
message's own bytes; so the `config` field (P4Info + device config + cookie) is serialised once
per (P4Info, device config) and each switch's request is only its small fields (device id,
election id, action) followed by that field. The result is byte for byte what
`SerializeToString` makes of the whole request: the per-switch fields all have lower numbers
than `config` and protobuf writes fields in number order (tests/controller/test_pipeline_bytes.py).
Field numbers come from the descriptors.
"""

from __future__ import annotations

import threading
from collections import OrderedDict

from p4.v1 import p4runtime_pb2

from controller.p4info import P4InfoIndex
from controller.wire import message_field, varint  # noqa: F401 (varint: part of this API)

SetRequest = p4runtime_pb2.SetForwardingPipelineConfigRequest
_CONFIG = SetRequest.DESCRIPTOR.fields_by_name["config"]
_PIPELINE_FIELDS = p4runtime_pb2.ForwardingPipelineConfig.DESCRIPTOR.fields_by_name
_P4INFO = _PIPELINE_FIELDS["p4info"].number
_DEVICE_CONFIG = _PIPELINE_FIELDS["p4_device_config"].number
SERVICE = p4runtime_pb2.DESCRIPTOR.services_by_name["P4Runtime"].full_name
METHOD = f"/{SERVICE}/SetForwardingPipelineConfig"
MAX_CACHED = 8                   # programs whose config field is kept serialised

_cache: OrderedDict[tuple[int, int], tuple[P4InfoIndex, bytes, bytes]] = OrderedDict()
_lock = threading.Lock()


def config_field(p4info: P4InfoIndex, device_config: bytes) -> bytes:
    """The encoded `config` field (tag, length, ForwardingPipelineConfig) for this program,
    made once per (P4Info index, device config) object pair while they are cached (both are
    read-only: an index never changes its P4Info and bytes never change)."""
    key = (id(p4info), id(device_config))
    with _lock:
        hit = _cache.get(key)
        if hit is not None and hit[0] is p4info and hit[1] is device_config:
            _cache.move_to_end(key)
            return hit[2]
    if p4info.binary and device_config:
        # the P4Info's own bytes (read from them): what serialising the message gives
        body = message_field(_P4INFO, p4info.binary) + message_field(_DEVICE_CONFIG,
                                                                     device_config)
    else:
        config = p4runtime_pb2.ForwardingPipelineConfig(p4_device_config=device_config)
        config.p4info.CopyFrom(p4info.p4info)
        body = config.SerializeToString()
    field = message_field(_CONFIG.number, body)
    with _lock:
        _cache[key] = (p4info, device_config, field)   # the references keep the ids unique
        while len(_cache) > MAX_CACHED:
            _cache.popitem(last=False)
    return field


def request_bytes(header: SetRequest, p4info: P4InfoIndex, device_config: bytes) -> bytes:
    """The wire form of `header` (a request without `config`) with the program as its config."""
    if header.HasField("config"):
        raise ValueError("the header of a pipeline request carries no config")
    if any(field.number > _CONFIG.number for field, _ in header.ListFields()):
        # a field numbered after config (only `role` today): serialise the whole request, so
        # the bytes stay in the serializer's own order
        request = SetRequest()
        request.CopyFrom(header)
        request.config.p4info.CopyFrom(p4info.p4info)
        request.config.p4_device_config = device_config
        return request.SerializeToString()
    return header.SerializeToString() + config_field(p4info, device_config)


def clear() -> None:
    with _lock:
        _cache.clear()
