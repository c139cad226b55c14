"""The tests' own packet builder (tests/ina/packets.py, written from the protocol document alone)
agrees with the one definition of the header (hosts/ina_header.py): two independent readings of
docs/protocol.md §1 that must not drift apart."""

from __future__ import annotations

from hosts import ina_header
from hosts.ina_header import Kind

from . import packets


def test_kinds_flags_port_and_size_agree_with_the_definition() -> None:
    assert {kind.name: int(kind) for kind in Kind} == {
        name: getattr(packets, name) for name in
        ("CONTRIB", "RESULT", "MAX_CONTRIB", "MAX_RESULT", "QUERY", "NACK")}
    assert (packets.FLAG_VER, packets.FLAG_RETX) == (ina_header.FLAG_VER, ina_header.FLAG_RETX)
    assert packets.INA_UDP_PORT == ina_header.INA_UDP_PORT
    assert packets.HEADER_BYTES == ina_header.HEADER_BYTES
