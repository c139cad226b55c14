"""Ethernet/IPv4/UDP frames around a UDP payload, for in-process switches and the simulator.

Sockets build these headers themselves; code that hands frames to `p4switch.runtime.Switch`
directly (tests, the discrete-event simulator) uses this module. IPv4 without options, the header
checksum computed (RFC 791), UDP checksum 0 (allowed for IPv4). `parse_udp_frame` checks what a
receiver relies on and raises `FrameError` with the reason otherwise.
"""

from __future__ import annotations

import ipaddress
import struct
from dataclasses import dataclass

ETHERTYPE_IPV4 = 0x0800
PROTO_UDP = 17
_ETH = struct.Struct("!6s6sH")
_IPV4 = struct.Struct("!BBHHHBBH4s4s")
_UDP = struct.Struct("!HHHH")
HEADERS_BYTES = _ETH.size + _IPV4.size + _UDP.size    # 42


class FrameError(ValueError):
    """A frame that is not Ethernet/IPv4/UDP as this module builds them."""

    def __init__(self, reason: str):
        super().__init__(f"bad frame: {reason}")
        self.reason = reason


def mac_bytes(mac: str) -> bytes:
    """'02:00:00:00:00:01' -> 6 bytes; ValueError naming the bad text."""
    parts = mac.split(":")
    try:
        if len(parts) != 6 or any(len(p) != 2 for p in parts):
            raise ValueError
        return bytes(int(p, 16) for p in parts)
    except ValueError:
        raise ValueError(f"not a MAC address: {mac!r}") from None


def mac_text(raw: bytes) -> str:
    return ":".join(f"{b:02x}" for b in raw)


def ipv4_bytes(address: str) -> bytes:
    try:
        return ipaddress.IPv4Address(address).packed
    except ValueError:
        raise ValueError(f"not an IPv4 address: {address!r}") from None


def ipv4_checksum(header: bytes) -> int:
    """RFC 791 one's-complement checksum of a header whose checksum field is zero."""
    total = sum(struct.unpack(f"!{len(header) // 2}H", header))
    while total > 0xFFFF:
        total = (total & 0xFFFF) + (total >> 16)
    return ~total & 0xFFFF


@dataclass(frozen=True, kw_only=True)
class UdpFrame:
    """The fields of an Ethernet/IPv4/UDP frame that hosts care about."""

    src_mac: str
    dst_mac: str
    src_ip: str
    dst_ip: str
    src_port: int
    dst_port: int
    payload: bytes
    ttl: int = 64
    ident: int = 0


def build_udp_frame(frame: UdpFrame) -> bytes:
    """The bytes of `frame` (IPv4 checksum computed, UDP checksum 0)."""
    if not 0 <= frame.ttl <= 255 or not 0 <= frame.ident <= 0xFFFF:
        raise ValueError(f"ttl {frame.ttl} or ident {frame.ident} out of range")
    for name in ("src_port", "dst_port"):
        if not 0 <= getattr(frame, name) <= 0xFFFF:
            raise ValueError(f"{name} {getattr(frame, name)} out of range")
    udp_length = _UDP.size + len(frame.payload)
    total = _IPV4.size + udp_length
    if total > 0xFFFF:
        raise ValueError(f"payload of {len(frame.payload)} bytes is too long for one datagram")
    src_ip, dst_ip = ipv4_bytes(frame.src_ip), ipv4_bytes(frame.dst_ip)
    header = _IPV4.pack(0x45, 0, total, frame.ident, 0, frame.ttl, PROTO_UDP, 0, src_ip, dst_ip)
    header = _IPV4.pack(0x45, 0, total, frame.ident, 0, frame.ttl, PROTO_UDP,
                        ipv4_checksum(header), src_ip, dst_ip)
    eth = _ETH.pack(mac_bytes(frame.dst_mac), mac_bytes(frame.src_mac), ETHERTYPE_IPV4)
    udp = _UDP.pack(frame.src_port, frame.dst_port, udp_length, 0)
    return eth + header + udp + bytes(frame.payload)


def parse_udp_frame(raw: bytes) -> UdpFrame:
    """The UDP frame in `raw`; FrameError unless IPv4 (no options, unfragmented) with UDP."""
    data = bytes(raw)
    if len(data) < HEADERS_BYTES:
        raise FrameError(f"{len(data)} bytes, shorter than Ethernet+IPv4+UDP headers")
    dst_mac, src_mac, ethertype = _ETH.unpack_from(data)
    if ethertype != ETHERTYPE_IPV4:
        raise FrameError(f"EtherType 0x{ethertype:04x} is not IPv4")
    (version_ihl, _tos, total, ident, frag, ttl, proto, _csum, src_ip,
     dst_ip) = _IPV4.unpack_from(data, _ETH.size)
    if version_ihl != 0x45:
        raise FrameError(f"IPv4 version/IHL byte 0x{version_ihl:02x}, expected 0x45")
    if ipv4_checksum(data[_ETH.size:_ETH.size + _IPV4.size]) != 0:
        raise FrameError("IPv4 header checksum does not verify")
    if frag & 0x3FFF:
        raise FrameError("a fragment")
    if proto != PROTO_UDP:
        raise FrameError(f"IP protocol {proto} is not UDP")
    if total > len(data) - _ETH.size or total < _IPV4.size + _UDP.size:
        raise FrameError(f"IPv4 total length {total} does not fit the frame")
    src_port, dst_port, udp_length, _ = _UDP.unpack_from(data, _ETH.size + _IPV4.size)
    if udp_length != total - _IPV4.size:
        raise FrameError(f"UDP length {udp_length} disagrees with IPv4 total length {total}")
    start = HEADERS_BYTES
    return UdpFrame(src_mac=mac_text(src_mac), dst_mac=mac_text(dst_mac),
                    src_ip=str(ipaddress.IPv4Address(src_ip)),
                    dst_ip=str(ipaddress.IPv4Address(dst_ip)), src_port=src_port,
                    dst_port=dst_port, payload=data[start:start + udp_length - _UDP.size],
                    ttl=ttl, ident=ident)
