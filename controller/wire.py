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


def varint(value: int) -> bytes:
    """Protobuf's base-128 varint of a non-negative integer."""
    out = bytearray()
    while value > 0x7F:
        out.append((value & 0x7F) | 0x80)
        value >>= 7
    out.append(value)
    return bytes(out)


def message_field(number: int, body: bytes) -> bytes:
    """An embedded message (or bytes) field: tag, length, body."""
    return varint(number << 3 | LENGTH_DELIMITED) + varint(len(body)) + body


def entity_bytes(entity: p4runtime_pb2.Entity | p4runtime_pb2.TableEntry) -> bytes:
    """An Entity's wire form; a bare TableEntry is written as the Entity holding it."""
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
