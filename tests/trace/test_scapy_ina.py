"""The Scapy layer against the independent packet builder of tests/ina/packets.py: exact bytes
both ways, values counted from the length, and the port bindings."""

from __future__ import annotations

import pytest
from scapy.layers.inet import IP, UDP
from scapy.layers.l2 import Ether
from scapy.packet import Raw

from inaemu.trace.scapy_ina import Ina
from tests.ina.packets import (CONTRIB, MAX_RESULT, RESULT, Endpoint, eth_ipv4_udp, ina_packet,
                               ina_payload, ip)

WORKER = Endpoint(0x020000000001, ip("10.0.0.1"))
AGG = Endpoint(0x0200000001FE, ip("10.0.0.254"))


def _scapy_frame(src: Endpoint, dst: Endpoint, ident: int, **fields) -> Ether:
    def mac(value: int) -> str:
        return ":".join(f"{b:02x}" for b in value.to_bytes(6, "big"))

    def dotted(value: int) -> str:
        return ".".join(str(b) for b in value.to_bytes(4, "big"))

    return (Ether(src=mac(src.mac), dst=mac(dst.mac)) /
            IP(src=dotted(src.addr), dst=dotted(dst.addr), id=ident, flags=0) /
            UDP(chksum=0) / Ina(**fields))


@pytest.mark.parametrize("k", [4, 32, 256])
def test_built_contribution_has_the_exact_bytes(k):
    values = [(-1) ** i * (i * 1_000_003) for i in range(k)]
    values[0], values[-1] = -(2 ** 31), 2 ** 31 - 1
    expected = ina_packet(WORKER, AGG, ident=9, kind=CONTRIB, job=7, worker=2, slot=300,
                          chunk=70000, ver=1, retx=True, values=values)
    built = _scapy_frame(WORKER, AGG, 9, kind="CONTRIB", flags="ver+retx", job=7, worker=2,
                         slot=300, chunk=70000, values=values)
    assert bytes(built) == expected


def test_dissected_result_has_every_field_and_k_from_the_length():
    values = [5, -6, 7, -8, 9, -10, 11, -12]
    frame = ina_packet(AGG, WORKER, kind=RESULT, job=65535, worker=31, slot=1, chunk=2 ** 32 - 1,
                       ver=0, count=3, values=values)
    ina = Ether(frame)[Ina]
    assert (ina.kind, int(ina.flags), ina.job, ina.worker, ina.slot, ina.chunk, ina.count) == \
        (RESULT, 0, 65535, 31, 1, 2 ** 32 - 1, 3)
    assert ina.values == values
    assert ina.sprintf("%kind%") == "RESULT"
    assert bytes(Ether(frame)) == frame                      # round trip


def test_flags_name_ver_and_retx():
    frame = ina_packet(WORKER, AGG, kind=MAX_RESULT, job=1, worker=0, slot=0, ver=1, retx=True,
                       values=[1, 2, 3, 4])
    ina = Ether(frame)[Ina]
    assert ina.flags.ver and ina.flags.retx and ina.sprintf("%kind%") == "MAX_RESULT"


def test_only_port_48879_dissects_as_ina_either_direction():
    payload = ina_payload(kind=CONTRIB, job=1, worker=0, slot=0, values=[1, 2, 3, 4])
    to_agg = eth_ipv4_udp(WORKER, AGG, payload, sport=40000, dport=48879)
    from_agg = eth_ipv4_udp(AGG, WORKER, payload, sport=48879, dport=40000)
    other = eth_ipv4_udp(WORKER, AGG, payload, sport=40000, dport=40001)
    assert Ina in Ether(to_agg) and Ina in Ether(from_agg)
    assert Ina not in Ether(other)
    built = UDP() / Ina()
    assert (built.sport, built.dport) == (48879, 48879)


def test_bytes_past_the_last_whole_value_stay_raw():
    payload = ina_payload(kind=CONTRIB, job=1, worker=0, slot=0, values=[1, 2, 3, 4]) + b"\xAA\xBB"
    ina = Ether(eth_ipv4_udp(WORKER, AGG, payload))[Ina]
    assert ina.values == [1, 2, 3, 4]
    assert bytes(ina[Raw]) == b"\xAA\xBB"


def test_standalone_header_round_trip():
    payload = ina_payload(kind=CONTRIB, job=3, worker=4, slot=5, chunk=6, values=[-1, 0, 1, 2])
    ina = Ina(payload)
    assert ina.values == [-1, 0, 1, 2] and bytes(ina) == payload


def test_format_overflow_bmax_and_query_kinds_match_the_hosts_encoder():
    """The fields issue 15 added (lane format, overflow, bmax) and the QUERY/NACK kinds,
    against hosts/ina_wire's encoder (an independent writer of the same header)."""
    from hosts.ina_wire import InaPacket, Kind, encode
    packet = InaPacket(kind=Kind.RESULT, job=3, worker=1, slot=5, chunk=77,
                       values=[1, -2, 3, -4], ver=1, count=4, bmax=0x3F81, fmt=2, overflow=True)
    ina = Ina(encode(packet))
    assert (ina.bmax, ina.lane_format, ina.flags.overflow, ina.flags.ver) == \
        (0x3F81, "int8", True, True)
    assert not ina.flags.retx
    assert bytes(Ina(kind="RESULT", flags="ver+fmt1+overflow", job=3, worker=1, slot=5,
                     chunk=77, count=4, bmax=0x3F81, values=[1, -2, 3, -4])) == encode(packet)
    assert Ina(kind=4).sprintf("%kind%") == "QUERY" and Ina(kind=5).sprintf("%kind%") == "NACK"
    assert Ina(flags="fmt0+fmt1").lane_format == "invalid"
