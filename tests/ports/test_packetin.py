"""BMv2's packet-in messages (packetin.py): what each asks of the switch, with simple_switch's
answers (probed on simple_switch 1.15: tests/ports/test_packetin_bmv2.py runs the same
messages on both switches)."""

from __future__ import annotations

import struct

import pytest

from p4switch.ports.packetin import (HEADER, INFO_REP, INFO_REQ, PACKET_IN, PACKET_OUT, PORT_ADD,
                                     PORT_REMOVE, PORT_SET_STATUS, STATUS_DOWN, STATUS_UP,
                                     PacketInEndpoint, packet_out)


def message(kind: int, port: int, more: int, body: bytes = b"") -> bytes:
    return HEADER.pack(kind, port, more) + body


@pytest.mark.parametrize("port, ingress", [(0, 0), (3, 3), (510, 510), (511, 511),
                                           (600, 88), (-1, 511), (1 << 20, 0)])
def test_a_packet_runs_on_the_low_nine_bits_of_its_port(port, ingress):
    handled = PacketInEndpoint().handle(message(PACKET_IN, port, 4, b"abcd"))
    assert handled.packet == (ingress, b"abcd") and handled.problem is None


@pytest.mark.parametrize("length, frame", [(0, b""), (2, b"ab"), (4, b"abcd")])
def test_a_packet_is_the_first_length_bytes(length, frame):
    assert PacketInEndpoint().handle(message(PACKET_IN, 1, length, b"abcd")).packet == (1, frame)


@pytest.mark.parametrize("raw, words", [
    (b"\x03\x00\x00\x00", "4 bytes, shorter than the 12-byte header"),
    (message(PACKET_IN, 1, 5, b"abcd"), "says 5 bytes, but 4 follow"),
    (message(PACKET_IN, 1, -1, b"abcd"), "says -1 bytes"),
    (message(PACKET_OUT, 1, 0), "PACKET_OUT received: only the switch sends it"),
    (message(INFO_REP, 1, 0), "INFO_REP received"),
    (message(7, 1, 0), "unknown message type 7"),
    (message(PORT_SET_STATUS, 1, 2), "unknown status 2"),
])
def test_what_bmv2_would_misread_or_log_is_refused_with_a_reason(raw, words):
    endpoint = PacketInEndpoint()
    handled = endpoint.handle(raw)
    assert handled.packet is None and handled.reply is None
    assert words in handled.problem
    assert endpoint.refused == 1


def test_an_info_request_gets_its_header_back_with_not_supported():
    handled = PacketInEndpoint().handle(message(INFO_REQ, 7, 0))
    # the bytes simple_switch answered with
    assert handled.reply == bytes.fromhex("06000000070000000000000001000000")
    handled = PacketInEndpoint().handle(message(INFO_REQ, -2, 1))
    assert handled.reply == struct.pack("<iiii", INFO_REP, -2, 1, 1)


def test_the_port_table_follows_add_remove_and_status():
    endpoint = PacketInEndpoint()
    for raw in (message(PORT_ADD, 2, 0), message(PORT_ADD, 1, 0), message(PORT_ADD, -1, 0),
                message(PORT_SET_STATUS, 2, STATUS_DOWN), message(PORT_SET_STATUS, 9, STATUS_UP),
                message(PORT_REMOVE, 1, 0), message(PORT_REMOVE, 5, 0)):
        assert endpoint.handle(raw).problem is None
    assert endpoint.ports == {2: False, 0xFFFFFFFF: True}
    endpoint.handle(message(PORT_SET_STATUS, 2, STATUS_UP))
    endpoint.handle(message(PORT_ADD, 2, 0))           # already there: unchanged
    assert endpoint.ports[2] is True
    assert endpoint.received[PORT_ADD] == 4 and endpoint.refused == 0


def test_a_packet_out_message():
    assert packet_out(5, b"xyz") == struct.pack("<iii", PACKET_OUT, 5, 3) + b"xyz"
