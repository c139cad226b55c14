"""The simulated hosts' frames: exact header bytes, a valid IPv4 checksum, forgiving parsing."""

from __future__ import annotations

import struct

import pytest

from inaemu.sim.frames import (PROTO_TCP, PROTO_UDP, TCP_ACK, Addressing, ip_bytes,
                               ipv4_checksum, mac_bytes, parse)

HOST = Addressing(mac=mac_bytes("02:00:0a:00:00:01"), ip=ip_bytes("10.0.0.1"),
                  gateway_mac=mac_bytes("02:53:00:00:00:00"))


def test_udp_frame_bytes() -> None:
    frame = HOST.udp_frame(ip_bytes("10.0.0.254"), 48879, 48879, b"\x01\x02\x03", ident=0x1234)
    assert frame[:14] == bytes.fromhex("025300000000" "02000a000001" "0800")
    ip = frame[14:34]
    assert ip[:12] == bytes.fromhex("4500" "001f" "1234" "4000" "40" "11") + ip[10:12]
    assert ip[12:] == bytes.fromhex("0a000001" "0a0000fe")
    assert ipv4_checksum(ip) == 0                                # the checksum verifies
    assert frame[34:] == bytes.fromhex("beef" "beef" "000b" "0000" "010203")


def test_tcp_frame_with_options_round_trips() -> None:
    options = struct.pack("!BBBBII", 1, 1, 5, 10, 100, 200)
    frame = HOST.tcp_frame(ip_bytes("10.0.0.2"), 40000, 5201, seq=7, ack=99, flags=TCP_ACK,
                           options=options, payload=b"data", ident=1)
    assert len(frame) == 14 + 20 + 20 + 12 + 4
    assert ipv4_checksum(frame[14:34]) == 0
    d = parse(frame)
    assert (d.proto, d.sport, d.dport, d.seq, d.ack, d.flags) == (PROTO_TCP, 40000, 5201, 7, 99,
                                                                   TCP_ACK)
    assert d.options == options and d.payload == b"data"
    assert (d.src_ip, d.dst_ip) == (ip_bytes("10.0.0.1"), ip_bytes("10.0.0.2"))


def test_udp_round_trip_ignores_ethernet_padding() -> None:
    frame = HOST.udp_frame(ip_bytes("10.0.0.2"), 1, 2, b"x", ident=1) + bytes(13)
    d = parse(frame)
    assert (d.proto, d.sport, d.dport, d.payload) == (PROTO_UDP, 1, 2, b"x")


@pytest.mark.parametrize("mangle", [
    lambda f: f[:20],                                   # truncated inside IPv4
    lambda f: f[:12] + b"\x86\xdd" + f[14:],            # not IPv4
    lambda f: f[:14] + b"\x65" + f[15:],                # IPv6 version nibble
    lambda f: f[:14] + b"\x44" + f[15:],                # IHL 4 (< 20 bytes)
    lambda f: f[:16] + b"\x05\x00" + f[18:],            # total length beyond the frame
    lambda f: f[:23] + b"\x01" + f[24:],                # ICMP: not ours
    lambda f: f[:38] + b"\x00\x04" + f[40:],            # UDP length below its header
    lambda f: f[:38] + b"\x00\xff" + f[40:],            # UDP length beyond the packet
])
def test_malformed_frames_parse_to_none(mangle) -> None:
    frame = HOST.udp_frame(ip_bytes("10.0.0.2"), 1, 2, b"hello", ident=1)
    assert parse(mangle(frame)) is None


def test_the_hosts_framing_reads_the_simulators_udp_frames() -> None:
    from hosts.framing import parse_udp_frame

    frame = HOST.udp_frame(ip_bytes("10.0.0.9"), 48879, 48879, b"payload", ident=5)
    read = parse_udp_frame(frame)
    assert (read.src_ip, read.dst_ip, read.src_port, read.dst_port, read.payload, read.ttl) == (
        "10.0.0.1", "10.0.0.9", 48879, 48879, b"payload", 64)


def test_the_fast_checksum_matches_the_header_sum_for_any_length_and_ident() -> None:
    """ipv4_frame sums the constant words once; every frame must still verify."""
    import random
    rng = random.Random(3)
    for _ in range(2000):
        ours = Addressing(mac=bytes(rng.randrange(256) for _ in range(6)),
                          ip=bytes(rng.randrange(256) for _ in range(4)),
                          gateway_mac=b"\x02\x53\x00\x00\x00\x01")
        dst = bytes(rng.randrange(256) for _ in range(4))
        frame = ours.ipv4_frame(dst, rng.choice((6, 17)), bytes(rng.randrange(1500)),
                                rng.randrange(1 << 20))
        assert ipv4_checksum(frame[14:34]) == 0
