"""The legacy `p4.tmp.P4DeviceConfig` wrapper around a BMv2 JSON device config.

Old P4Runtime clients (the p4lang tutorials before 2023, ONOS's BMv2 driver, PI's own tests) do
not send the BMv2 JSON itself as `p4_device_config` but a serialised `p4.tmp.P4DeviceConfig`
(PI's proto/p4/tmp/p4config.proto, the version simple_switch_grpc is built with):

    message P4DeviceConfig {
      message Extras { map<string, string> kv = 1; }
      bool reassign = 1;  Extras extras = 2;  bytes device_data = 3;
    }

simple_switch_grpc (PI's DeviceMgr) tries to parse every device config as that message and,
if it parses, uses `device_data` and logs that the wrapper is deprecated. The installed
`p4runtime` package does not ship this message, so its wire format is decoded here by hand.

A BMv2 JSON starts with `{` (wire tag: field 15, start-group), which never parses as this
message, so the two cannot be confused.
"""

from __future__ import annotations

from dataclasses import dataclass

_VARINT, _FIXED64, _LENGTH, _START_GROUP, _END_GROUP, _FIXED32 = range(6)
_REASSIGN, _EXTRAS, _DEVICE_DATA = 1, 2, 3
_WHITESPACE = b" \t\r\n"


@dataclass(frozen=True)
class LegacyDeviceConfig:
    """What a decoded wrapper holds (`extras` is kept for completeness; BMv2 ignores it)."""

    device_data: bytes
    reassign: bool = False
    extras: bytes = b""


def unwrap(device_config: bytes) -> LegacyDeviceConfig | None:
    """The wrapper's contents, or None when `device_config` is not a P4DeviceConfig."""
    if device_config.lstrip(_WHITESPACE).startswith(b"{"):
        return None                      # the BMv2 JSON itself: the current form
    try:
        fields = _decode(device_config)
    except ValueError:
        return None
    data, reassign, extras = b"", False, b""
    for number, wire_type, value in fields:
        if number == _DEVICE_DATA and wire_type == _LENGTH:
            data = value
        elif number == _REASSIGN and wire_type == _VARINT:
            reassign = bool(value)
        elif number == _EXTRAS and wire_type == _LENGTH:
            extras = value
        elif number in (_REASSIGN, _EXTRAS, _DEVICE_DATA):
            return None                  # a known field with the wrong wire type
    return LegacyDeviceConfig(device_data=data, reassign=reassign, extras=extras)


def wrap(device_data: bytes, *, reassign: bool = True) -> bytes:
    """Serialise a wrapper as old clients do (for tests and for pushing to old servers)."""
    out = bytearray()
    if reassign:
        out += bytes([_REASSIGN << 3 | _VARINT, 1])
    if device_data:
        out.append(_DEVICE_DATA << 3 | _LENGTH)
        out += _varint(len(device_data))
        out += device_data
    return bytes(out)


def _decode(data: bytes) -> list[tuple[int, int, int | bytes]]:
    """(field number, wire type, value) of every top-level field; ValueError if malformed."""
    fields = []
    position = 0
    while position < len(data):
        tag, position = _read_varint(data, position)
        number, wire_type = tag >> 3, tag & 7
        if number == 0:
            raise ValueError("field number 0")
        if wire_type == _VARINT:
            value, position = _read_varint(data, position)
        elif wire_type == _FIXED64:
            value, position = data[position:position + 8], position + 8
        elif wire_type == _FIXED32:
            value, position = data[position:position + 4], position + 4
        elif wire_type == _LENGTH:
            length, position = _read_varint(data, position)
            value, position = data[position:position + length], position + length
        else:                            # groups (proto2 only) and invalid wire types
            raise ValueError(f"wire type {wire_type}")
        if position > len(data):
            raise ValueError("truncated")
        fields.append((number, wire_type, value))
    return fields


def _read_varint(data: bytes, position: int) -> tuple[int, int]:
    value = shift = 0
    while True:
        if position >= len(data) or shift > 63:
            raise ValueError("bad varint")
        byte = data[position]
        position += 1
        value |= (byte & 0x7F) << shift
        if not byte & 0x80:
            return value, position
        shift += 7


def _varint(value: int) -> bytes:
    out = bytearray()
    while True:
        byte = value & 0x7F
        value >>= 7
        if value:
            out.append(byte | 0x80)
        else:
            out.append(byte)
            return bytes(out)
