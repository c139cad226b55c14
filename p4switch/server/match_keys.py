"""P4Runtime `FieldMatch` lists <-> the runtime's key objects, one per P4Info match field.

Rules from the P4Runtime specification (section "Match format"):
- a field the client omits is a don't-care: LPM prefix 0, ternary mask 0, the full range,
  optional wildcard; an omitted exact field is an error;
- a don't-care must be omitted, never sent explicitly (prefix length 0, mask 0, full range);
- bits outside the prefix or the mask must be zero; low <= high for ranges;
- priorities: tables with ternary, range or optional fields need priority >= 1, others 0.
Reads return the same canonical form (don't-cares omitted).
"""

from __future__ import annotations

from p4.config.v1 import p4info_pb2
from p4.v1 import p4runtime_pb2
from p4switch.runtime import ExactKey, LpmKey, OptionalKey, RangeKey, TernaryKey

from . import bytestrings
from .errors import INVALID_ARGUMENT, UNIMPLEMENTED, RequestError
from .p4info_index import P4InfoIndex

MatchField = p4info_pb2.MatchField
_NEEDS_PRIORITY = {MatchField.TERNARY, MatchField.RANGE, MatchField.OPTIONAL}
_KIND_NAMES = {
    MatchField.EXACT: "exact",
    MatchField.LPM: "lpm",
    MatchField.TERNARY: "ternary",
    MatchField.RANGE: "range",
    MatchField.OPTIONAL: "optional",
}


def needs_priority(table: p4info_pb2.Table) -> bool:
    return any(f.match_type in _NEEDS_PRIORITY for f in table.match_fields)


def check_priority(table: p4info_pb2.Table, priority: int, where: str) -> int | None:
    """The runtime priority argument, after checking the P4Runtime rules."""
    if needs_priority(table):
        if priority <= 0:
            raise RequestError(
                INVALID_ARGUMENT,
                f"{where}: table has ternary/range/optional fields, so priority must be >= 1",
            )
        return priority
    if priority != 0:
        raise RequestError(
            INVALID_ARGUMENT, f"{where}: table has only exact/lpm fields, so priority must be 0"
        )
    return None


def decode_keys(
    index: P4InfoIndex, table: p4info_pb2.Table, matches, where: str
) -> list:
    """Runtime key objects, in the table's key order, for the FieldMatch list of a request."""
    given: dict[int, p4runtime_pb2.FieldMatch] = {}
    for match in matches:
        field = index.match_field(table, match.field_id)
        if field.id in given:
            raise RequestError(INVALID_ARGUMENT, f"{where}: match field '{field.name}' given twice")
        given[field.id] = match
    for field in table.match_fields:
        index.refuse_translated(field, f"{where}: match field '{field.name}'")
    return [_decode_one(field, given.get(field.id), where) for field in table.match_fields]


def _decode_one(field: MatchField, match, where: str):
    kind = field.match_type
    width = field.bitwidth
    label = f"{where}: match field '{field.name}'"
    if kind not in _KIND_NAMES:
        raise RequestError(UNIMPLEMENTED, f"{label}: match type {kind} is not supported")
    if match is None:
        if kind == MatchField.EXACT:
            raise RequestError(INVALID_ARGUMENT, f"{label}: exact field missing")
        return _dont_care(kind, width)
    which = match.WhichOneof("field_match_type")
    if which != _KIND_NAMES[kind]:
        raise RequestError(
            INVALID_ARGUMENT, f"{label}: is {_KIND_NAMES[kind]}, request gives {which}"
        )
    if kind == MatchField.EXACT:
        return ExactKey(bytestrings.decode(match.exact.value, width, label))
    if kind == MatchField.OPTIONAL:
        return OptionalKey(bytestrings.decode(match.optional.value, width, label))
    if kind == MatchField.LPM:
        value = bytestrings.decode(match.lpm.value, width, label)
        prefix = match.lpm.prefix_len
        if not 0 < prefix <= width:
            raise RequestError(
                INVALID_ARGUMENT,
                f"{label}: prefix length {prefix} must be in 1..{width} (omit the field for /0)",
            )
        if value & ((1 << (width - prefix)) - 1):
            raise RequestError(INVALID_ARGUMENT, f"{label}: value has bits set beyond /{prefix}")
        return LpmKey(value, prefix)
    if kind == MatchField.TERNARY:
        value = bytestrings.decode(match.ternary.value, width, label + " value")
        mask = bytestrings.decode(match.ternary.mask, width, label + " mask")
        if mask == 0:
            raise RequestError(INVALID_ARGUMENT, f"{label}: mask 0 is a don't-care; omit the field")
        if value & ~mask:
            raise RequestError(INVALID_ARGUMENT, f"{label}: value has bits set outside the mask")
        return TernaryKey(value, mask)
    low = bytestrings.decode(match.range.low, width, label + " low")
    high = bytestrings.decode(match.range.high, width, label + " high")
    if low > high:
        raise RequestError(INVALID_ARGUMENT, f"{label}: range low {low} > high {high}")
    if low == 0 and high == (1 << width) - 1:
        raise RequestError(INVALID_ARGUMENT, f"{label}: the full range is a don't-care; omit it")
    return RangeKey(low, high)


def _dont_care(kind: int, width: int):
    if kind == MatchField.LPM:
        return LpmKey(0, 0)
    if kind == MatchField.TERNARY:
        return TernaryKey(0, 0)
    if kind == MatchField.RANGE:
        return RangeKey(0, (1 << width) - 1)
    return OptionalKey(None)


def encode_keys(table: p4info_pb2.Table, keys) -> list[p4runtime_pb2.FieldMatch]:
    """FieldMatch messages for runtime keys, don't-cares omitted."""
    result = []
    for field, key in zip(table.match_fields, keys):
        match = _encode_one(field, key)
        if match is not None:
            result.append(match)
    return result


def _encode_one(field: MatchField, key):
    match = p4runtime_pb2.FieldMatch(field_id=field.id)
    kind = field.match_type
    if kind == MatchField.EXACT:
        match.exact.value = bytestrings.encode(key.value)
    elif kind == MatchField.OPTIONAL:
        if key.value is None:
            return None
        match.optional.value = bytestrings.encode(key.value)
    elif kind == MatchField.LPM:
        if key.prefix_len == 0:
            return None
        match.lpm.value = bytestrings.encode(key.value)
        match.lpm.prefix_len = key.prefix_len
    elif kind == MatchField.TERNARY:
        if key.mask == 0:
            return None
        match.ternary.value = bytestrings.encode(key.value & key.mask)
        match.ternary.mask = bytestrings.encode(key.mask)
    elif kind == MatchField.RANGE:
        if key.low == 0 and key.high == (1 << field.bitwidth) - 1:
            return None
        match.range.low = bytestrings.encode(key.low)
        match.range.high = bytestrings.encode(key.high)
    return match
