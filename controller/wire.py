"""Protobuf wire form, written by hand where the pure-Python serializer copies.

Why: protobuf is pure Python here (the pinned 3.20.3 wheel has no C extension). Putting a
TableEntry into an Entity and the Entity into a WriteRequest's update copies the whole message
twice (`MergeFrom`) before serialising it: 93 ms for fat-tree(8)'s 716 routes against 18 ms for
serialising each entry once and writing the enclosing fields around its bytes. A message's wire
form is the concatenation of its fields' encodings; an embedded message field is its tag, its
length and the message's bytes; so the bytes written here are the ones `SerializeToString`
writes for the whole request (tests/controller/test_pipeline_bytes.py and
test_write_bytes.py compare them). Field numbers come from the descriptors.
"""

from __future__ import annotations

from typing import Iterable

from p4.v1 import p4runtime_pb2

VARINT, LENGTH_DELIMITED = 0, 2
_UPDATES = p4runtime_pb2.WriteRequest.DESCRIPTOR.fields_by_name["updates"].number
_UPDATE_TYPE = p4runtime_pb2.Update.DESCRIPTOR.fields_by_name["type"].number
_UPDATE_ENTITY = p4runtime_pb2.Update.DESCRIPTOR.fields_by_name["entity"].number
_TABLE_ENTRY = p4runtime_pb2.Entity.DESCRIPTOR.fields_by_name["table_entry"].number


def _numbers(message) -> dict[str, int]:
    return {f.name: f.number for f in message.DESCRIPTOR.fields}


_ENTRY = _numbers(p4runtime_pb2.TableEntry)
_MATCH = _numbers(p4runtime_pb2.FieldMatch)
_LPM = _numbers(p4runtime_pb2.FieldMatch.LPM)
_TABLE_ACTION = _numbers(p4runtime_pb2.TableAction)
_ACTION = _numbers(p4runtime_pb2.Action)
_PARAM = _numbers(p4runtime_pb2.Action.Param)
# sub-message field numbers of a match kind: (kind's field in FieldMatch, its two fields)
_KIND_FIELDS = {
    "exact": (_MATCH["exact"], (_numbers(p4runtime_pb2.FieldMatch.Exact)["value"],)),
    "optional": (_MATCH["optional"], (_numbers(p4runtime_pb2.FieldMatch.Optional)["value"],)),
    "ternary": (_MATCH["ternary"], tuple(_numbers(p4runtime_pb2.FieldMatch.Ternary)[n]
                                         for n in ("value", "mask"))),
    "range": (_MATCH["range"], tuple(_numbers(p4runtime_pb2.FieldMatch.Range)[n]
                                     for n in ("low", "high"))),
}


class TableEntryBytes(bytes):
    """A serialised TableEntry (what `SerializeToString` makes of it); writes take it where
    they take a TableEntry."""


_ONE_BYTE = tuple(bytes((value,)) for value in range(0x80))   # tags, lengths, small ids


def varint(value: int) -> bytes:
    """Protobuf's base-128 varint of a non-negative integer."""
    if 0 <= value < 0x80:
        return _ONE_BYTE[value]
    out = bytearray()
    while value > 0x7F:
        out.append((value & 0x7F) | 0x80)
        value >>= 7
    out.append(value)
    return bytes(out)


def message_field(number: int, body: bytes) -> bytes:
    """An embedded message (or bytes) field: tag, length, body."""
    return varint(number << 3 | LENGTH_DELIMITED) + varint(len(body)) + body


def varint_field(number: int, value: int) -> bytes:
    """A varint field (uint32, bool, or a non-negative int32); proto3 leaves out zeros."""
    return varint(number << 3 | VARINT) + varint(value) if value else b""


def table_entry_bytes(plan) -> TableEntryBytes:
    """The wire form of an `entities.EntryPlan`'s TableEntry: the fields in number order, each
    as the serializer writes it (tests/controller/test_write_bytes.py compares)."""
    matches = []
    for field_id, kind, values in plan.matches:
        if kind == "lpm":
            body = message_field(_LPM["value"], values[0]) + \
                varint_field(_LPM["prefix_len"], values[1])
            number = _MATCH["lpm"]
        else:
            number, fields = _KIND_FIELDS[kind]
            body = b"".join(message_field(n, v) for n, v in zip(fields, values))
        matches.append(message_field(_ENTRY["match"], varint_field(_MATCH["field_id"], field_id)
                                     + message_field(number, body)))
    action = varint_field(_ACTION["action_id"], plan.action_id) + b"".join(
        message_field(_ACTION["params"], varint_field(_PARAM["param_id"], param_id)
                      + message_field(_PARAM["value"], value))
        for param_id, value in plan.params)
    parts = sorted([(_ENTRY["table_id"], varint_field(_ENTRY["table_id"], plan.table_id)),
                    (_ENTRY["match"], b"".join(matches)),
                    (_ENTRY["action"], message_field(
                        _ENTRY["action"], message_field(_TABLE_ACTION["action"], action))),
                    (_ENTRY["priority"], varint_field(_ENTRY["priority"], plan.priority))])
    return TableEntryBytes(b"".join(part for _, part in parts))


def entity_bytes(entity: p4runtime_pb2.Entity | p4runtime_pb2.TableEntry | TableEntryBytes
                 ) -> bytes:
    """An Entity's wire form; a bare TableEntry (or its bytes) is written as the Entity
    holding it."""
    if isinstance(entity, TableEntryBytes):
        return message_field(_TABLE_ENTRY, entity)
    if isinstance(entity, p4runtime_pb2.TableEntry):
        return message_field(_TABLE_ENTRY, entity.SerializeToString())
    return entity.SerializeToString()


def write_request_bytes(header: p4runtime_pb2.WriteRequest,
                        updates: Iterable[tuple[int, object]]) -> bytes:
    """`header` (device id, election id; no updates) followed by one `updates` field per
    (type, entity). Any header field numbered after `updates` (atomicity, role) keeps the
    serializer's order by going through it."""
    if len(header.updates):
        raise ValueError("the header of a write request carries no updates")
    if any(field.number > _UPDATES for field, _ in header.ListFields()):
        request = p4runtime_pb2.WriteRequest()
        request.CopyFrom(header)
        for kind, entity in updates:
            update = request.updates.add(type=kind)
            update.entity.ParseFromString(entity_bytes(entity))
        return request.SerializeToString()
    parts = [header.SerializeToString()]
    for kind, entity in updates:
        body = entity_bytes(entity)
        update = (varint(_UPDATE_TYPE << 3 | VARINT) + varint(kind) if kind else b"") + \
            message_field(_UPDATE_ENTITY, body)
        parts.append(message_field(_UPDATES, update))
    return b"".join(parts)
