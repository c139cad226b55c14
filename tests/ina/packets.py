"""Builds the bytes of aggregation packets (docs/protocol.md §1) for the tests of p4src/ina.p4.

Written from the protocol document alone, independently of the P4 program, so the bytes the tests
expect are an outside opinion of what the switch must emit. Everything is plain functions over
ints and bytes; values are Python ints (negative ones are written in two's complement).
"""

from __future__ import annotations

import struct
from dataclasses import dataclass

INA_UDP_PORT = 48879
CONTRIB, RESULT, MAX_CONTRIB, MAX_RESULT, QUERY, NACK = 0, 1, 2, 3, 4, 5
FLAG_VER, FLAG_RETX = 0x01, 0x02
FLAG_NEXT = 0x20            # hashed sharing (§3.3): claim the slot's next use / claimed
HEADER_BYTES = 16           # the aggregation header before the values
ETH_IP_UDP_BYTES = 14 + 20 + 8
RESULT_TTL = 64
U32 = 0xFFFFFFFF


def ip(text: str) -> int:
    """'10.0.1.1' -> 0x0A000101."""
    a, b, c, d = (int(part) for part in text.split("."))
    return (a << 24) | (b << 16) | (c << 8) | d


@dataclass(frozen=True)
class Endpoint:
    """Where a packet comes from or goes to: a MAC and an IPv4 address."""

    mac: int
    addr: int


def ipv4_checksum(header: bytes) -> int:
    """RFC 791 header checksum of a 20-byte header whose checksum field is zero."""
    total = sum(struct.unpack("!10H", header))
    while total > 0xFFFF:
        total = (total & 0xFFFF) + (total >> 16)
    return ~total & 0xFFFF


def eth_ipv4_udp(src: Endpoint, dst: Endpoint, udp_payload: bytes, *, ttl: int = 64,
                 ident: int = 0, sport: int = INA_UDP_PORT, dport: int = INA_UDP_PORT,
                 udp_length: int | None = None, checksum_delta: int = 0) -> bytes:
    """An Ethernet/IPv4/UDP frame; the UDP checksum is 0 (allowed for IPv4).

    `udp_length` overrides the UDP length field (malformed packets); `checksum_delta` is added to
    the correct IPv4 checksum to make a packet with a bad one.
    """
    length = 8 + len(udp_payload) if udp_length is None else udp_length
    ip_header = struct.pack("!BBHHHBBHII", 0x45, 0, 20 + 8 + len(udp_payload), ident, 0, ttl, 17,
                            0, src.addr, dst.addr)
    checksum = (ipv4_checksum(ip_header) + checksum_delta) & 0xFFFF
    ip_header = ip_header[:10] + struct.pack("!H", checksum) + ip_header[12:]
    udp = struct.pack("!HHHH", sport, dport, length, 0)
    eth = dst.mac.to_bytes(6, "big") + src.mac.to_bytes(6, "big") + b"\x08\x00"
    return eth + ip_header + udp + udp_payload


def ina_payload(*, kind: int, job: int, worker: int, slot: int, values: list[int], ver: int = 0,
                retx: bool = False, chunk: int = 0, count: int = 0, flags: int = 0) -> bytes:
    """The aggregation header and the values, as the UDP payload (`flags`: more flag bits)."""
    flags |= (ver & FLAG_VER) | (FLAG_RETX if retx else 0)
    header = struct.pack("!BBHBBHIHxx", kind, flags, job, worker, 0, slot, chunk, count)
    return header + b"".join((v & U32).to_bytes(4, "big") for v in values)


def ina_packet(src: Endpoint, dst: Endpoint, *, ttl: int = 64, ident: int = 0, **fields) -> bytes:
    """A whole aggregation packet; `fields` are those of `ina_payload`."""
    return eth_ipv4_udp(src, dst, ina_payload(**fields), ttl=ttl, ident=ident)


def wrapping_sum(*vectors: list[int]) -> list[int]:
    """Lane-by-lane sum modulo 2^32 (what the switch's 32-bit registers hold)."""
    return [sum(lane) & U32 for lane in zip(*vectors)]


def unsigned_max(*vectors: list[int]) -> list[int]:
    """Lane-by-lane maximum of the unsigned 32-bit patterns (the MAX round)."""
    return [max(v & U32 for v in lane) for lane in zip(*vectors)]


def float32_bits(x: float) -> int:
    """The IEEE-754 single-precision bit pattern of x."""
    return struct.unpack("!I", struct.pack("!f", x))[0]


def stf_hex(packet: bytes) -> str:
    """Hex for an STF line, split at header boundaries and between 32-bit values."""
    cuts = [6, 12, 14, 34, 42, 58]  # MACs, EtherType, IPv4, UDP, aggregation header
    parts, start = [], 0
    for cut in cuts:
        if start >= len(packet):
            break
        parts.append(packet[start:cut].hex().upper())
        start = cut
    parts += [packet[i:i + 4].hex().upper() for i in range(start, len(packet), 4)]
    return " ".join(p for p in parts if p)


# --- ECMP (p4src/forwarding.p4inc): which member of a group a flow takes -----------------------

def crc16(data: bytes) -> int:
    """CRC-16/ARC (poly 0x8005 reflected, init 0, no final xor): v1model's HashAlgorithm.crc16.

    Check value: crc16(b"123456789") == 0xBB3D."""
    crc = 0
    for byte in data:
        crc ^= byte
        for _ in range(8):
            crc = (crc >> 1) ^ 0xA001 if crc & 1 else crc >> 1
    return crc


def ecmp_member(src: int, dst: int, protocol: int, sport: int, dport: int, size: int,
                shift: int = 0) -> int:
    """The member index ecmp_group(group, size, shift) picks: crc16 over the 13 bytes of the
    5-tuple (addresses, protocol, ports; ports 0 for packets without them), shifted right by
    `shift`, modulo size."""
    return (crc16(struct.pack("!IIBHH", src, dst, protocol, sport, dport)) >> shift) % size


def eth_ipv4_tcp(src: Endpoint, dst: Endpoint, payload: bytes, *, ttl: int = 64, ident: int = 0,
                 sport: int, dport: int) -> bytes:
    """An Ethernet/IPv4/TCP frame (a 20-byte TCP header with only ports, ACK flag and window set;
    its checksum is not computed: switches do not look at it)."""
    ip_header = struct.pack("!BBHHHBBHII", 0x45, 0, 20 + 20 + len(payload), ident, 0, ttl, 6, 0,
                            src.addr, dst.addr)
    ip_header = ip_header[:10] + struct.pack("!H", ipv4_checksum(ip_header)) + ip_header[12:]
    tcp = struct.pack("!HHIIBBHHH", sport, dport, 1, 0, 5 << 4, 0x10, 8192, 0, 0)
    eth = dst.mac.to_bytes(6, "big") + src.mac.to_bytes(6, "big") + b"\x08\x00"
    return eth + ip_header + tcp + payload
