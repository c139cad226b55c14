"""Controller header packing: exact bytes for non-byte-aligned fields, and the error cases."""

import pytest
from p4.config.v1 import p4info_pb2
from p4.v1 import p4runtime_pb2

from p4switch.server.errors import RequestError
from p4switch.server.packet_io import (
    ControllerHeader,
    packet_in_message,
    packet_out_bytes,
)


def header(name, *fields):
    message = p4info_pb2.ControllerPacketMetadata()
    message.preamble.name = name
    for number, (field_name, width) in enumerate(fields, start=1):
        message.metadata.add(id=number, name=field_name, bitwidth=width)
    return ControllerHeader(message)


def test_packet_out_packs_fields_big_endian_in_order():
    out = header("packet_out", ("egress_port", 9), ("pad", 7))
    packet = p4runtime_pb2.PacketOut(payload=b"\xaa\xbb")
    packet.metadata.add(metadata_id=1, value=b"\x01\x03")  # port 259
    # 259 = 0b1_0000_0011 in 9 bits, then 7 zero bits: 1000 0001 | 1000 0000
    assert packet_out_bytes(out, packet) == bytes([0x81, 0x80, 0xAA, 0xBB])


def test_packet_out_rejects_unknown_field_and_too_wide_value():
    out = header("packet_out", ("egress_port", 9), ("pad", 7))
    bad_id = p4runtime_pb2.PacketOut(payload=b"x")
    bad_id.metadata.add(metadata_id=9, value=b"\x01")
    with pytest.raises(RequestError) as err:
        packet_out_bytes(out, bad_id)
    assert err.value.code == "INVALID_ARGUMENT"
    too_wide = p4runtime_pb2.PacketOut(payload=b"x")
    too_wide.metadata.add(metadata_id=1, value=b"\x02\x00")  # 512 needs 10 bits
    with pytest.raises(RequestError) as err:
        packet_out_bytes(out, too_wide)
    assert err.value.code == "INVALID_ARGUMENT"


def test_packet_in_strips_header_and_reports_canonical_values():
    incoming = header("packet_in", ("ingress_port", 9), ("reason", 3), ("pad", 4))
    # port 3, reason 5: 000000011 101 0000 -> 0000 0001 | 1101 0000
    message = packet_in_message(incoming, bytes([0x01, 0xD0]) + b"frame")
    assert message.payload == b"frame"
    assert [(m.metadata_id, m.value) for m in message.metadata] == [
        (1, b"\x03"), (2, b"\x05"), (3, b"\x00"),
    ]


def test_packet_in_shorter_than_header_is_value_error():
    incoming = header("packet_in", ("ingress_port", 9), ("pad", 7))
    with pytest.raises(ValueError):
        packet_in_message(incoming, b"\x01")


def test_header_that_is_not_whole_bytes_is_refused():
    with pytest.raises(RequestError):
        header("packet_in", ("ingress_port", 9))


def test_without_header_payload_passes_through():
    assert packet_in_message(None, b"abc").payload == b"abc"
    assert packet_out_bytes(None, p4runtime_pb2.PacketOut(payload=b"abc")) == b"abc"
