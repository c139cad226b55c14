"""A verified forwarding pipeline: P4Info index + BMv2 JSON + the names that tie them together.

The device config is the BMv2 JSON bytes, exactly what simple_switch_grpc takes, or (which
simple_switch_grpc also accepts, logging that it is deprecated) the legacy
`p4.tmp.P4DeviceConfig` wrapper around them (`legacy_device_config.py`). Verifying a
config means: the P4Info indexes cleanly, the runtime accepts the JSON, and every P4Info entity
the server addresses (tables, actions, action profiles, counters, meters, registers, value sets)
exists in the JSON under the same name (p4c writes the same fully qualified names to both files;
a unique dot-separated suffix is also accepted, so hand-written pairs can be shorter).
"""

from __future__ import annotations

import hashlib
import logging
import threading
from collections import OrderedDict
from dataclasses import dataclass

from p4.v1 import p4runtime_pb2

from . import legacy_device_config
from .errors import INVALID_ARGUMENT, RequestError
from .p4info_index import P4InfoIndex
from .packet_io import ControllerHeader

log = logging.getLogger(__name__)

# P4Info kind -> where the BMv2 JSON lists objects of that kind.
_JSON_PLACES = {
    "table": lambda j: [t for p in j.get("pipelines", []) for t in p.get("tables", [])],
    "action": lambda j: j.get("actions", []),
    "action profile": lambda j: [
        a for p in j.get("pipelines", []) for a in p.get("action_profiles", [])
    ],
    "counter": lambda j: j.get("counter_arrays", []),
    "direct counter": lambda j: j.get("counter_arrays", []),
    "meter": lambda j: j.get("meter_arrays", []),
    "direct meter": lambda j: j.get("meter_arrays", []),
    "register": lambda j: j.get("register_arrays", []),
    "value set": lambda j: j.get("parse_vsets", []),
}


@dataclass(frozen=True)
class Pipeline:
    """Everything the server derives from one ForwardingPipelineConfig."""

    config: p4runtime_pb2.ForwardingPipelineConfig
    index: P4InfoIndex
    bmv2: dict
    json_names: dict[int, str]  # P4Info id -> name of the same object in the BMv2 JSON
    packet_in: ControllerHeader | None
    packet_out: ControllerHeader | None
    device_json: bytes = b""   # the JSON text: the runtime shares its translation by content

    def json_name(self, entity) -> str:
        return self.json_names[entity.preamble.id]


def verify(config: p4runtime_pb2.ForwardingPipelineConfig) -> Pipeline:
    """Check a config without touching the switch; RequestError(INVALID_ARGUMENT) says why."""
    from p4switch.runtime import P4SwitchError, load_bmv2_json  # the runtime checks its JSON

    if not config.HasField("p4info"):
        raise RequestError(INVALID_ARGUMENT, "pipeline config has no p4info")
    if not config.p4_device_config:
        raise RequestError(INVALID_ARGUMENT, "pipeline config has no p4_device_config (BMv2 JSON)")
    index = P4InfoIndex(config.p4info)
    raw = device_data(config)
    try:
        bmv2 = _parsed(raw, load_bmv2_json)
    except (P4SwitchError, ValueError) as exc:  # ConfigError, or bytes that are not JSON
        raise RequestError(INVALID_ARGUMENT, f"p4_device_config: {exc}") from None
    json_names: dict[int, str] = {}
    in_tables = {ref.id for table in index.all("table") for ref in table.action_refs}
    for kind, place in _JSON_PLACES.items():
        available = [obj.get("name", "") for obj in place(bmv2) if isinstance(obj, dict)]
        for entity in index.all(kind):
            if kind == "action profile" and not entity.table_ids and \
                    entity.preamble.name not in available:
                continue   # declared, used by no table: P4Info lists it, the JSON has none
            if kind == "action" and entity.preamble.id not in in_tables and \
                    entity.preamble.name not in available:
                # no table can run it, so no request can name it: simple_switch_grpc takes
                # the config (p4c's P4Info lists actions called directly from apply blocks)
                continue
            json_names[entity.preamble.id] = _match_name(kind, entity.preamble.name, available)
    headers = {}
    for name in ("packet_in", "packet_out"):
        header = index.controller_header(name)
        if header is not None:
            for field in header.metadata:
                index.refuse_translated(field, f"P4Info controller header '{name}' field "
                                               f"'{field.name}'")
        headers[name] = None if header is None else ControllerHeader(header)
    return Pipeline(
        config=config,
        index=index,
        bmv2=bmv2,
        json_names=json_names,
        packet_in=headers["packet_in"],
        packet_out=headers["packet_out"],
        device_json=raw,
    )


class _ContentCache:
    """The last few results of a function of content (least recently used first out), shared
    by every device given the same content: read only. A failure is not kept."""

    def __init__(self, size: int):
        self.size = size
        self._items: OrderedDict[bytes, object] = OrderedDict()
        self._lock = threading.Lock()

    def get(self, key: bytes, make):
        with self._lock:
            value = self._items.get(key)
            if value is not None:
                self._items.move_to_end(key)
                return value
        value = make()
        with self._lock:
            self._items[key] = value
            while len(self._items) > self.size:
                self._items.popitem(last=False)
        return value

    def clear(self) -> None:
        with self._lock:
            self._items.clear()


MAX_VERIFIED = 4        # pipelines kept verified
_VERIFIED = _ContentCache(MAX_VERIFIED)     # serialised config -> its pipeline
_PARSED = _ContentCache(4)                  # JSON digest -> document


def verified(config: p4runtime_pb2.ForwardingPipelineConfig) -> Pipeline:
    """`verify(config)`, once per content for the last few contents: a simulated fabric pushes
    one program to a hundred devices, and verifying ina.p4 (indexing its P4Info, matching names
    with the JSON) costs ~8 ms, its serialisation (the key) ~0.2 ms. The result is shared by
    every device given the same config: read only. A failure is not kept (each request gets
    its error)."""
    return _VERIFIED.get(config.SerializeToString(deterministic=True), lambda: verify(config))


def clear_verified() -> None:
    _VERIFIED.clear()


def _parsed(raw: bytes, load) -> dict:
    """The JSON document of `raw`, parsed once per content for the last few contents (a
    simulated fabric pushes one JSON to a hundred devices; the document is only read here)."""
    return _PARSED.get(hashlib.sha256(raw).digest(), lambda: load(raw))
    doc = load(raw)
    with _PARSED_LOCK:
        _PARSED[key] = doc
        while len(_PARSED) > 4:
            _PARSED.popitem(last=False)
    return doc


def device_data(config: p4runtime_pb2.ForwardingPipelineConfig) -> bytes:
    """The BMv2 JSON bytes of a config: as sent, or unwrapped from a legacy P4DeviceConfig."""
    raw = bytes(config.p4_device_config)
    legacy = legacy_device_config.unwrap(raw)
    if legacy is None:
        return raw
    log.warning("p4_device_config is a p4.tmp.P4DeviceConfig wrapper, which is deprecated "
                "(send the BMv2 JSON itself); using its device_data")
    if not legacy.device_data:
        raise RequestError(INVALID_ARGUMENT, "p4_device_config is a p4.tmp.P4DeviceConfig "
                                             "wrapper without device_data (the BMv2 JSON)")
    return legacy.device_data


def _match_name(kind: str, p4info_name: str, json_names: list[str]) -> str:
    if p4info_name in json_names:
        return p4info_name
    candidates = sorted(
        {n for n in json_names if n.endswith("." + p4info_name) or p4info_name.endswith("." + n)}
    )
    if len(candidates) == 1:
        return candidates[0]
    if not candidates:
        raise RequestError(
            INVALID_ARGUMENT,
            f"P4Info {kind} '{p4info_name}' does not exist in the BMv2 JSON (p4_device_config)",
        )
    raise RequestError(
        INVALID_ARGUMENT,
        f"P4Info {kind} '{p4info_name}' matches several BMv2 JSON names: {', '.join(candidates)}",
    )
