"""Parser value sets (ValueSetEntry): a MODIFY replaces the whole set, as the spec and BMv2 have it.

A member is one FieldMatch per P4Info match field of the set; the runtime takes one (value, mask)
pair over the fields concatenated in order (first field most significant), with mask None when
every field is exact. The runtime cannot list a set, so the server remembers what it wrote.
"""

from __future__ import annotations

from p4.config.v1 import p4info_pb2
from p4.v1 import p4runtime_pb2

from . import bytestrings
from .device_state import DeviceState
from .errors import INVALID_ARGUMENT, RESOURCE_EXHAUSTED, UNIMPLEMENTED, RequestError

Update = p4runtime_pb2.Update
MatchField = p4info_pb2.MatchField


def _member_key(value_set, member, where: str) -> tuple[int, int | None]:
    given = {}
    for match in member.match:
        if match.field_id in given:
            raise RequestError(INVALID_ARGUMENT, f"{where}: field {match.field_id} given twice")
        given[match.field_id] = match
    value = mask = 0
    all_exact = True
    for field in value_set.match:
        match = given.pop(field.id, None)
        label = f"{where}: field '{field.name or field.id}'"
        full = (1 << field.bitwidth) - 1
        if field.match_type == MatchField.EXACT:
            if match is None or match.WhichOneof("field_match_type") != "exact":
                raise RequestError(INVALID_ARGUMENT, f"{label}: needs an exact value")
            part, part_mask = bytestrings.decode(match.exact.value, field.bitwidth, label), full
        elif field.match_type == MatchField.TERNARY:
            all_exact = False
            if match is None:
                part, part_mask = 0, 0
            elif match.WhichOneof("field_match_type") != "ternary":
                raise RequestError(INVALID_ARGUMENT, f"{label}: needs a ternary value and mask")
            else:
                part = bytestrings.decode(match.ternary.value, field.bitwidth, label)
                part_mask = bytestrings.decode(match.ternary.mask, field.bitwidth, label)
        else:
            raise RequestError(UNIMPLEMENTED, f"{label}: only exact and ternary value set fields")
        value = (value << field.bitwidth) | (part & part_mask)
        mask = (mask << field.bitwidth) | part_mask
    if given:
        raise RequestError(INVALID_ARGUMENT, f"{where}: unknown field id(s) {sorted(given)}")
    return value, None if all_exact else mask


def write_value_set(state: DeviceState, kind: int, entry: p4runtime_pb2.ValueSetEntry) -> None:
    value_set = state.pipeline.index.get("value set", entry.value_set_id)
    where = f"value set '{value_set.preamble.name}'"
    if kind != Update.MODIFY:
        raise RequestError(INVALID_ARGUMENT, f"{where}: only MODIFY (replace the set) is allowed")
    if value_set.size and len(entry.members) > value_set.size:
        raise RequestError(
            RESOURCE_EXHAUSTED,
            f"{where}: {len(entry.members)} members exceed size {value_set.size}",
        )
    new = [_member_key(value_set, m, f"{where} member {i}") for i, m in enumerate(entry.members)]
    if len(set(new)) != len(new):
        raise RequestError(INVALID_ARGUMENT, f"{where}: the same member is listed twice")
    name = state.pipeline.json_name(value_set)
    old_members = state.value_sets.get(value_set.preamble.id, [])
    old = [_member_key(value_set, m, where) for m in old_members]
    sw = state.switch
    for value, mask in old:
        state.call(where, sw.parse_vset_remove, name, value, mask)
    added = []
    try:
        for value, mask in new:
            state.call(where, sw.parse_vset_add, name, value, mask)
            added.append((value, mask))
    except RequestError:
        for value, mask in added:
            sw.parse_vset_remove(name, value, mask)
        for value, mask in old:
            sw.parse_vset_add(name, value, mask)
        raise
    state.value_sets[value_set.preamble.id] = [
        p4runtime_pb2.ValueSetMember(match=m.match) for m in entry.members
    ]


def read_value_sets(state: DeviceState, request: p4runtime_pb2.ValueSetEntry, new) -> None:
    index = state.pipeline.index
    if request.value_set_id:
        value_sets = [index.get("value set", request.value_set_id)]
    else:
        value_sets = index.all("value set")
    for value_set in value_sets:
        message = new()
        message.value_set_id = value_set.preamble.id
        message.members.extend(state.value_sets.get(value_set.preamble.id, []))
