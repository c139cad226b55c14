"""The Scalability Protocols' framing (sp.py): the bytes nanomsg and nng put on the wire for a
PAIR v0 socket, cut anywhere, and every way a stream can fail to be one."""

from __future__ import annotations

import pytest

from p4switch.ports import sp

# what libnanomsg and nng send (captured from both, docs/switch.md "Packets over a socket")
PAIR_GREETING = b"\x00SP\x00\x00\x10\x00\x00"


def test_the_greeting_is_pair_v0s():
    assert sp.greeting() == PAIR_GREETING
    assert sp.SPConnection(sp.IPC).greeting() == PAIR_GREETING


@pytest.mark.parametrize("transport, framed", [
    (sp.TCP, b"\x00\x00\x00\x00\x00\x00\x00\x05hello"),
    (sp.IPC, b"\x01\x00\x00\x00\x00\x00\x00\x00\x05hello"),
])
def test_a_message_on_the_wire(transport, framed):
    connection = sp.SPConnection(transport)
    assert connection.frame(b"hello") == framed
    assert connection.receive(PAIR_GREETING + framed) == [b"hello"]


@pytest.mark.parametrize("transport", [sp.TCP, sp.IPC])
def test_the_stream_cut_at_every_byte_gives_the_same_messages(transport):
    messages = [b"", b"a", bytes(range(256)) * 3, b"\x01" * 9]
    writer = sp.SPConnection(transport)
    stream = PAIR_GREETING + b"".join(writer.frame(m) for m in messages)
    for cut in range(len(stream) + 1):
        reader = sp.SPConnection(transport)
        got = reader.receive(stream[:cut]) + reader.receive(stream[cut:])
        assert got == messages, cut
    reader = sp.SPConnection(transport)
    got = [m for byte in stream for m in reader.receive(bytes([byte]))]
    assert got == messages and reader.greeted


@pytest.mark.parametrize("stream, words", [
    (b"GET / HTTP/1.1\r\n", "not an SP greeting"),
    (b"\x00SQ", "not an SP greeting"),
    (b"\x00SP\x00\x00\x11\x00\x00", "0x0011, not PAIR v0"),      # PAIR v1
    (b"\x00SP\x00\x00\x30\x00\x00", "0x0030, not PAIR v0"),      # REQ
])
def test_a_peer_that_is_not_pair_v0_is_refused(stream, words):
    with pytest.raises(sp.SPProtocolError, match=words):
        sp.SPConnection(sp.TCP).receive(stream)


def test_an_ipc_message_of_another_type_is_refused():
    with pytest.raises(sp.SPProtocolError, match="IPC message type 0x02"):
        sp.SPConnection(sp.IPC).receive(PAIR_GREETING + b"\x02" + bytes(8))


def test_a_message_over_the_limit_is_refused_before_it_is_read():
    connection = sp.SPConnection(sp.TCP, max_message=100)
    assert connection.receive(PAIR_GREETING + (100).to_bytes(8, "big") + bytes(100)) == [bytes(100)]
    with pytest.raises(sp.SPProtocolError, match="101 bytes, above the limit of 100"):
        connection.receive((101).to_bytes(8, "big"))


def test_an_unknown_transport_is_a_value_error():
    with pytest.raises(ValueError, match="expected 'tcp' or 'ipc'"):
        sp.SPConnection("inproc")
