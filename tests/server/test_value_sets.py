"""Parser value sets: MODIFY replaces the whole set; reads return what was written."""

import grpc
import pytest
from p4.v1 import p4runtime_pb2

from .entities import SPECIAL_TYPES
from .helpers import read, update, write, write_errors


def value_set(*values: bytes):
    entry = p4runtime_pb2.ValueSetEntry(value_set_id=SPECIAL_TYPES)
    for value in values:
        entry.members.add().match.add(field_id=1).exact.value = value
    return entry


def members(server):
    (entry,) = read(server.stub, p4runtime_pb2.ValueSetEntry())
    return [m.match[0].exact.value for m in entry.value_set_entry.members]


def test_modify_replaces_the_set_and_reads_it_back(server):
    assert members(server) == []
    write(server.stub, update("MODIFY", value_set_entry=value_set(b"\x12\x34", b"\x88\xb5")))
    assert members(server) == [b"\x12\x34", b"\x88\xb5"]
    write(server.stub, update("MODIFY", value_set_entry=value_set(b"\x88\xb6")))
    assert members(server) == [b"\x88\xb6"]
    write(server.stub, update("MODIFY", value_set_entry=value_set()))
    assert members(server) == []


def test_value_set_errors_change_nothing(server):
    write(server.stub, update("MODIFY", value_set_entry=value_set(b"\x12\x34")))
    with pytest.raises(grpc.RpcError) as err:
        write(
            server.stub,
            update("INSERT", value_set_entry=value_set(b"\x01")),
            update("MODIFY", value_set_entry=value_set(*[bytes([i]) for i in range(5)])),
            update("MODIFY", value_set_entry=value_set(b"\x01\x00\x00")),
            update("MODIFY", value_set_entry=value_set(b"\x01", b"\x00\x01")),
        )
    details = write_errors(err.value)
    assert [d.canonical_code for d in details] == [
        grpc.StatusCode.INVALID_ARGUMENT.value[0], grpc.StatusCode.RESOURCE_EXHAUSTED.value[0],
        grpc.StatusCode.INVALID_ARGUMENT.value[0], grpc.StatusCode.INVALID_ARGUMENT.value[0],
    ]
    assert members(server) == [b"\x12\x34"]
