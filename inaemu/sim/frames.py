"""Ethernet/IPv4 frames for the simulated hosts: UDP datagrams and TCP-shaped segments.

Why the simulator frames its own packets: the switches run the real P4 program, which checks the
IPv4 header checksum, routes on the IPv4 destination and parses UDP port 48879 as aggregation
traffic, so every packet must be a genuine frame with the sizes a kernel would put on the wire.
UDP checksums are 0 (allowed for IPv4); TCP checksums are 0 too, since no switch looks at them.
Parsing is deliberately forgiving: anything that is not IPv4 UDP/TCP addressed to us is `None`
(the host counts and ignores it).
"""

from __future__ import annotations

import ipaddress
import struct
from dataclasses import dataclass
from functools import lru_cache
from typing import NamedTuple

ETH = struct.Struct("!6s6sH")
IPV4 = struct.Struct("!BBHHHBBH4s4s")
UDP = struct.Struct("!HHHH")
TCP = struct.Struct("!HHIIHHHH")
ETHERTYPE_IPV4 = 0x0800
PROTO_TCP = 6
PROTO_UDP = 17
TCP_ACK = 0x10
TCP_PSH = 0x08
HEADERS_UDP = ETH.size + IPV4.size + UDP.size          # 42
HEADERS_TCP = ETH.size + IPV4.size + TCP.size          # 54 (before options)


def mac_bytes(mac: str) -> bytes:
    return bytes.fromhex(mac.replace(":", ""))


def ip_bytes(ip: str) -> bytes:
    return ipaddress.IPv4Address(ip).packed


def ipv4_checksum(header: bytes) -> int:
    total = sum(struct.unpack(f"!{len(header) // 2}H", header))
    while total >> 16:
        total = (total & 0xFFFF) + (total >> 16)
    return ~total & 0xFFFF


@lru_cache(maxsize=4096)
def _frame_constants(gateway_mac: bytes, mac: bytes, src_ip: bytes, dst_ip: bytes,
                     proto: int) -> tuple[bytes, int]:
    """The Ethernet header, and the IPv4 header's 16-bit words summed without the total length,
    the ident and the checksum (version/IHL 0x45, DF, TTL 64)."""
    words = struct.unpack("!4H", src_ip + dst_ip)
    return (ETH.pack(gateway_mac, mac, ETHERTYPE_IPV4),
            0x4500 + 0x4000 + (64 << 8 | proto) + sum(words))


@dataclass(frozen=True)
class Addressing:
    """Who a host is and where its frames go first: its MAC/IPv4, and the MAC of the switch."""

    mac: bytes
    ip: bytes
    gateway_mac: bytes

    def ipv4_frame(self, dst_ip: bytes, proto: int, l4: bytes, ident: int) -> bytes:
        # per frame only the length and the ident change: the rest of the checksum is summed
        # once per (addresses, protocol), as is the Ethernet header (the per-frame path)
        ethernet, partial = _frame_constants(self.gateway_mac, self.mac, self.ip, dst_ip, proto)
        total, ident = IPV4.size + len(l4), ident & 0xFFFF
        folded = partial + total + ident
        folded = (folded & 0xFFFF) + (folded >> 16)
        folded = (folded & 0xFFFF) + (folded >> 16)
        return ethernet + IPV4.pack(0x45, 0, total, ident, 0x4000, 64, proto, ~folded & 0xFFFF,
                                    self.ip, dst_ip) + l4

    def udp_frame(self, dst_ip: bytes, sport: int, dport: int, payload: bytes, ident: int) -> bytes:
        return self.ipv4_frame(dst_ip, PROTO_UDP,
                               UDP.pack(sport, dport, UDP.size + len(payload), 0) + payload, ident)

    def tcp_frame(self, dst_ip: bytes, sport: int, dport: int, seq: int, ack: int, flags: int,
                  options: bytes, payload: bytes, ident: int, window: int = 0xFFFF) -> bytes:
        offset_words = (TCP.size + len(options)) // 4
        header = TCP.pack(sport, dport, seq & 0xFFFFFFFF, ack & 0xFFFFFFFF,
                          (offset_words << 12) | flags, window, 0, 0)
        return self.ipv4_frame(dst_ip, PROTO_TCP, header + options + payload, ident)


class Datagram(NamedTuple):
    """A parsed IPv4 packet for this host: protocol, addresses, ports and the L4 payload.
    (A named tuple: one is made per received frame, and a frozen dataclass costs 3x more.)"""

    proto: int
    src_ip: bytes
    dst_ip: bytes
    sport: int
    dport: int
    payload: bytes
    seq: int = 0
    ack: int = 0
    flags: int = 0
    options: bytes = b""


def parse(frame: bytes) -> Datagram | None:
    """The IPv4 UDP or TCP content of a frame, or None for anything else or anything truncated."""
    if len(frame) < ETH.size + IPV4.size:
        return None
    if frame[12:14] != b"\x08\x00":
        return None
    version_ihl = frame[14]
    ihl = (version_ihl & 0x0F) * 4
    if version_ihl >> 4 != 4 or ihl < IPV4.size:
        return None
    total = struct.unpack_from("!H", frame, 16)[0]
    end = ETH.size + total
    if end > len(frame) or total < ihl:
        return None
    proto = frame[23]
    src_ip, dst_ip = frame[26:30], frame[30:34]
    l4 = ETH.size + ihl
    if proto == PROTO_UDP:
        if end - l4 < UDP.size:
            return None
        sport, dport, length, _ = UDP.unpack_from(frame, l4)
        if length < UDP.size or l4 + length > end:
            return None
        return Datagram(proto, src_ip, dst_ip, sport, dport, frame[l4 + UDP.size:l4 + length])
    if proto == PROTO_TCP:
        if end - l4 < TCP.size:
            return None
        sport, dport, seq, ack, offset_flags, _, _, _ = TCP.unpack_from(frame, l4)
        data = l4 + (offset_flags >> 12) * 4
        if data > end or data < l4 + TCP.size:
            return None
        return Datagram(proto, src_ip, dst_ip, sport, dport, frame[data:end], seq, ack,
                        offset_flags & 0x3F, frame[l4 + TCP.size:data])
    return None
