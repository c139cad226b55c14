"""Write requests written as bytes (controller/wire.py) are byte for byte what protobuf's
serializer makes of the same request, for table entries given bare or inside Entities, other
entities (multicast groups, registers) and every update type."""

from __future__ import annotations

import pytest
from google.protobuf import text_format
from p4.config.v1 import p4info_pb2
from p4.v1 import p4runtime_pb2

from controller import entities, wire
from controller.p4info import P4InfoIndex

from p4info_sample import SAMPLE_P4INFO

Update = p4runtime_pb2.Update


def _index() -> P4InfoIndex:
    return P4InfoIndex(text_format.Parse(SAMPLE_P4INFO, p4info_pb2.P4Info()))


def _updates():
    index = _index()
    route = entities.table_entry(index, "ipv4_lpm", {"hdr.ipv4.dstAddr": ("10.0.1.0", 24)},
                                 "ipv4_forward", {"dstAddr": "00:00:00:00:01:02", "port": 3})
    acl = entities.table_entry(index, "MyIngress.acl", {"hdr.ipv4.srcAddr": (1, 0xFF),
                                                        "standard_metadata.ingress_port": 2},
                               "drop", priority=7)
    return [(Update.INSERT, route), (Update.MODIFY, p4runtime_pb2.Entity(table_entry=acl)),
            (Update.DELETE, route), (Update.INSERT, entities.multicast_group(5, [(1, 0), (2, 1)])),
            (Update.MODIFY, entities.register_write(index, "slots", 3, 0xBEEF)),
            (Update.UNSPECIFIED, route)]


def _serialised(header, updates) -> bytes:
    request = p4runtime_pb2.WriteRequest()
    request.CopyFrom(header)
    for kind, entity in updates:
        if isinstance(entity, p4runtime_pb2.TableEntry):
            entity = p4runtime_pb2.Entity(table_entry=entity)
        request.updates.add(type=kind, entity=entity)
    return request.SerializeToString()


@pytest.mark.parametrize("extra", [{}, {"atomicity": p4runtime_pb2.WriteRequest.ROLLBACK_ON_ERROR},
                                   {"role": "sdn"}])
def test_write_request_bytes_are_the_serializers(extra):
    header = p4runtime_pb2.WriteRequest(device_id=77, **extra)
    header.election_id.high, header.election_id.low = 1, 2**63
    updates = _updates()
    built = wire.write_request_bytes(header, updates)
    assert built == _serialised(header, updates)
    parsed = p4runtime_pb2.WriteRequest.FromString(built)
    assert [u.type for u in parsed.updates] == [kind for kind, _ in updates]


def test_a_header_with_updates_is_refused():
    header = p4runtime_pb2.WriteRequest()
    header.updates.add(type=Update.INSERT)
    with pytest.raises(ValueError):
        wire.write_request_bytes(header, [])
