"""Exact bytes of the aggregation payload, the ring framing and Ethernet/IPv4/UDP frames."""

from __future__ import annotations

import numpy as np
import pytest

from hosts.errors import RingProtocolError
from hosts.framing import FrameError, UdpFrame, build_udp_frame, parse_udp_frame
from hosts.ina_wire import (ChunkEncoder, InaPacket, Kind, WireError, decode, decode_header,
                            decode_values, encode, with_retx)
from hosts.ring_wire import Hello, RingKind, Segment, StreamDecoder
from hosts.ring_wire import encode as ring_encode

PACKET = InaPacket(kind=Kind.CONTRIB, job=0x1234, worker=7, slot=0x0102, chunk=0xA0B0C0D0,
                   values=(1, -1, 2**31 - 1, -2**31), ver=1, retx=True)
PACKET_BYTES = bytes.fromhex("00 03 1234 07 00 0102 A0B0C0D0 00 000000"
                             "00000001 FFFFFFFF 7FFFFFFF 80000000")


def test_encode_gives_the_protocol_bytes() -> None:
    assert encode(PACKET) == PACKET_BYTES
    assert decode(PACKET_BYTES) == PACKET
    assert decode(PACKET_BYTES, k=4) == PACKET


def test_result_round_trip_with_count() -> None:
    packet = InaPacket(kind=Kind.MAX_RESULT, job=1, worker=0, slot=0, chunk=0, count=32,
                       values=tuple(range(8)))
    data = encode(packet)
    assert data[:16].hex() == "03000001000000000000000000200000"
    assert decode(data) == packet


def test_with_retx_sets_only_the_flag() -> None:
    plain = encode(InaPacket(kind=Kind.CONTRIB, job=1, worker=2, slot=3, chunk=4, ver=1,
                             values=(5,) * 4))
    assert decode(with_retx(plain)).retx and decode(with_retx(plain)).ver == 1
    assert with_retx(plain)[2:] == plain[2:]


@pytest.mark.parametrize("payload, reason", [
    (b"", "shorter than the 16-byte header"),
    (PACKET_BYTES[:15], "shorter than the 16-byte header"),
    (PACKET_BYTES[:-4], r"not k\*4"),
    (PACKET_BYTES[:16], r"not k\*4"),
    (b"\x09" + PACKET_BYTES[1:], "unknown kind 9"),
    (PACKET_BYTES[:1] + b"\x40" + PACKET_BYTES[2:], "unknown flag bits"),
    (PACKET_BYTES[:1] + b"\x0c" + PACKET_BYTES[2:], "unknown lane format 3"),
    (PACKET_BYTES[:5] + b"\x01" + PACKET_BYTES[6:], "padding"),
])
def test_decode_names_what_is_wrong(payload: bytes, reason: str) -> None:
    with pytest.raises(WireError, match=reason):
        decode(payload)


def test_decode_checks_the_expected_k() -> None:
    with pytest.raises(WireError, match="32 bytes, expected 48 for k=8"):
        decode(PACKET_BYTES, k=8)


@pytest.mark.parametrize("field, value", [
    ("kind", 4), ("job", 65536), ("worker", -1), ("slot", 1 << 16), ("chunk", 1 << 32),
    ("count", 65536), ("ver", 2), ("retx", 1), ("values", (1, 2, 3)), ("values", (0,) * 368),
    ("values", (2**31, 0, 0, 0)), ("values", (1.0, 0, 0, 0)),
])
def test_construction_validates_every_field(field: str, value) -> None:
    fields = dict(kind=Kind.CONTRIB, job=1, worker=1, slot=1, chunk=1, values=(0,) * 4)
    fields[field] = value
    with pytest.raises(ValueError):
        InaPacket(**fields)


def test_ring_messages_round_trip_in_any_chunking() -> None:
    segment = Segment(kind=RingKind.ALL_GATHER, call=3, step=2, index=1, offset=5,
                      values=np.array([1.5, -2.0], np.float32))
    data = ring_encode(Hello(job=9, rank=1, n=4)) + ring_encode(segment)
    assert data[:24].hex() == "495202000000" "0004" "00000009" "00000001" "00000000" "00000000"
    assert data[24:48].hex() == "495202020000" "0002" "00000003" "00000001" "00000005" \
        "00000002"
    assert data[48:] == np.array([1.5, -2.0], ">f4").tobytes()
    for cut in (1, 7, 24, 25, 51):
        decoder = StreamDecoder()
        messages = decoder.feed(data[:cut]) + decoder.feed(data[cut:])
        assert messages[0] == Hello(job=9, rank=1, n=4)
        assert messages[1].kind is RingKind.ALL_GATHER and messages[1].index == 1
        assert messages[1].offset == 5
        assert messages[1].values.tolist() == [1.5, -2.0]
        assert decoder.buffered == 0


def test_ring_float64_segments_keep_their_precision() -> None:
    values = np.array([1 + 2**-40], np.float64)
    segment = Segment(kind=RingKind.REDUCE_SCATTER, call=0, step=0, index=0, values=values)
    (back,) = StreamDecoder().feed(ring_encode(segment))
    assert back.values.dtype == np.float64 and back.values[0] == values[0]


@pytest.mark.parametrize("data, reason", [
    (b"XX" + bytes(22), "bad magic"),
    (b"IR\x01" + bytes(21), "version 1, expected 2"),
    (b"IR\x02\x07" + bytes(20), "unknown ring message kind"),
    (b"IR\x02\x01\x05" + bytes(19), "dtype code"),
    (b"IR\x02\x00\x00\x00\x00\x01" + bytes(12) + b"\x00\x00\x00\x01", "HELLO carries no"),
    (b"IR\x02\x00\x00\x00\x00\x01" + bytes(8) + b"\x00\x00\x00\x01" + bytes(4),
     "HELLO carries no"),
    (b"IR\x02\x01\x00\x00\x00\x00" + bytes(12) + b"\xff\xff\xff\xff", "larger than allowed"),
    (b"IR\x02\x00\x00\x00\x00\x02" + bytes(4) + b"\x00\x00\x00\x05" + bytes(8), "bad hello"),
])
def test_ring_garbage_fails_at_the_header(data: bytes, reason: str) -> None:
    with pytest.raises(RingProtocolError, match=reason):
        StreamDecoder().feed(data)


FRAME = UdpFrame(src_mac="02:00:00:00:00:01", dst_mac="02:00:00:00:01:00", src_ip="10.0.0.1",
                 dst_ip="10.0.0.254", src_port=48879, dst_port=48879, payload=b"\xab\xcd",
                 ttl=64, ident=0x1c46)


def test_frame_bytes_and_checksum() -> None:
    raw = build_udp_frame(FRAME)
    assert raw[:14].hex() == "020000000100" "020000000001" "0800"
    # IPv4: total 30, ident 0x1c46, TTL 64, UDP; checksum over the header sums to 0xffff
    assert raw[14:34].hex() == "4500001e1c4600004011" + raw[24:26].hex() + "0a0000010a0000fe"
    assert raw[24:26].hex() == "498b"   # worked by hand: ~(0x4500+0x1e+...+0xfe)
    assert raw[34:].hex() == "beefbeef000a0000" "abcd"
    assert parse_udp_frame(raw) == FRAME


def test_frame_parse_errors() -> None:
    raw = build_udp_frame(FRAME)
    cases = [
        (raw[:41], "shorter"),
        (raw[:12] + b"\x86\xdd" + raw[14:], "not IPv4"),
        (raw[:14] + b"\x46" + raw[15:], "IHL"),
        (raw[:24] + b"\x00\x00" + raw[26:], "checksum"),
        (raw[:-1], "does not fit"),
    ]
    for data, reason in cases:
        with pytest.raises(FrameError, match=reason):
            parse_udp_frame(data)


def test_frame_build_refuses_bad_addresses() -> None:
    for field, value in (("src_mac", "02:00"), ("dst_ip", "10.0.0.300"), ("ttl", 256)):
        with pytest.raises(ValueError):
            build_udp_frame(UdpFrame(**{**FRAME.__dict__, field: value}))


def test_values_are_a_read_only_int32_array_of_any_integer_input() -> None:
    mine = np.array([1, -2, 3, -4], np.int32)
    packet = InaPacket(kind=Kind.CONTRIB, job=1, worker=1, slot=1, chunk=1, values=mine)
    assert mine.flags.writeable                        # the caller's array is left alone
    with pytest.raises(ValueError):
        packet.values[0] = 9
    assert packet.values.tolist() == [1, -2, 3, -4] and packet.k == 4
    for values in ((1, -2, 3, -4), np.array([1, -2, 3, -4], np.int64),
                   np.array([1, -2, 3, -4], ">i4"), np.array([1, -2, 3, -4], np.int8)):
        same = InaPacket(kind=Kind.CONTRIB, job=1, worker=1, slot=1, chunk=1, values=values)
        assert same == packet and hash(same) == hash(packet)
    assert packet != InaPacket(kind=Kind.CONTRIB, job=1, worker=1, slot=1, chunk=1,
                               values=(1, -2, 3, -5))


@pytest.mark.parametrize("values, reason", [
    (np.zeros(4, np.float32), "integers"), (np.zeros(4, bool), "integers"),
    (np.array([2**31, 0, 0, 0], np.uint32), "signed 32-bit"),
    (np.array([-(2**31) - 1, 0, 0, 0], np.int64), "signed 32-bit"),
    (np.zeros((2, 4), np.int32), "1-D"), (np.zeros(6, np.int32), "multiple of 4"),
    ((1, 2, "3", 4), "integers"),
])
def test_values_are_checked_by_shape_and_dtype(values, reason: str) -> None:
    with pytest.raises(ValueError, match=reason):
        InaPacket(kind=Kind.CONTRIB, job=1, worker=1, slot=1, chunk=1, values=values)


def test_decode_views_the_payload_without_copying() -> None:
    packet = decode(PACKET_BYTES)
    assert packet.values.dtype == np.dtype(">i4") and not packet.values.flags.writeable
    assert packet.values.tolist() == [1, -1, 2**31 - 1, -2**31]
    assert decode_header(PACKET_BYTES, 4) == (Kind.CONTRIB, 0x1234, 7, 0x0102, 0xA0B0C0D0, 1,
                                              True, 0)
    assert decode_values(PACKET_BYTES).tolist() == packet.values.tolist()
    assert decode(bytearray(PACKET_BYTES)) == packet


def test_chunk_encoder_gives_the_bytes_of_encode() -> None:
    vector = np.arange(-8, 8, dtype=np.int32) * 1000003
    encoder = ChunkEncoder(job=0x1234, worker=7, k=4, vector=vector)
    for chunk in range(4):
        expected = encode(InaPacket(kind=Kind.CONTRIB, job=0x1234, worker=7, slot=chunk + 9,
                                    chunk=chunk, ver=chunk % 2,
                                    values=vector[4 * chunk:4 * chunk + 4]))
        assert encoder.contribution(chunk, chunk + 9, chunk % 2) == expected


@pytest.mark.parametrize("fields, reason", [
    (dict(vector=np.zeros(6, np.int32)), "whole 4-value chunks"),
    (dict(vector=np.zeros(8, np.int64)), "int32"),
    (dict(vector=[0] * 8), "int32"),
    (dict(job=1 << 16), "job"),
    (dict(worker=256), "worker"),
    (dict(k=6), "multiple of 4"),
])
def test_chunk_encoder_refuses_bad_input(fields: dict, reason: str) -> None:
    arguments = dict(job=1, worker=1, k=4, vector=np.zeros(8, np.int32)) | fields
    with pytest.raises(ValueError, match=reason):
        ChunkEncoder(**arguments)
    encoder = ChunkEncoder(job=1, worker=1, k=4, vector=np.zeros(8, np.int32))
    for chunk, slot, ver in ((2, 0, 0), (-1, 0, 0), (0, 1 << 16, 0), (0, 0, 2)):
        with pytest.raises(ValueError):
            encoder.contribution(chunk, slot, ver)
