"""Scapy layer for the aggregation header (docs/protocol.md §1), for captures and ad-hoc tests.

    from inaemu.trace.scapy_ina import Ina
    pkt = Ether(frame)            # UDP to or from port 48879 dissects as Ina
    pkt[Ina].values               # k signed 32-bit ints; k follows from the UDP length
    Ether()/IP()/UDP(chksum=0)/Ina(kind="CONTRIB", job=7, worker=1, values=[1, -2, 3, 4])

The header fields are built from the header's one definition (`hosts/ina_header.py`: the layout,
the kind names, the flag bits); the values follow. Bytes after the last whole value (there should
be none) are left as a Raw payload.
"""

from __future__ import annotations

from scapy.fields import (ByteEnumField, ByteField, FieldListField, FlagsField, IntField,
                          ShortField, SignedIntField)
from scapy.layers.inet import UDP
from scapy.packet import Packet, bind_bottom_up, bind_layers

from hosts.ina_header import (FLAG_FIELDS, FLAG_FORMAT, FORMAT_SHIFT, HEADER_BYTES, INA_UDP_PORT,
                              LAYOUT, Format, Kind)

KINDS = {int(kind): kind.name for kind in Kind}
FORMATS = {int(code): code.name.lower() for code in Format}
MAX_VALUES = 16384          # a 64 KiB UDP payload; beyond that it is not an aggregation packet
_SHORT = {"format": "fmt"}  # a multi-bit flag's bits are named fmt0, fmt1, ...


def flag_names() -> list[str]:
    """Scapy's name of each flags bit, from bit 0 up: ver, retx, fmt0, fmt1, overflow."""
    names: dict[int, str] = {}
    for name, mask, _label in FLAG_FIELDS:
        bits = [bit for bit in range(8) if mask >> bit & 1]
        for index, bit in enumerate(bits):
            names[bit] = name if len(bits) == 1 else f"{_SHORT.get(name, name)}{index}"
    return [names.get(bit, f"bit{bit}") for bit in range(max(names) + 1)]


FLAG_NAMES = flag_names()


def _header_field(name: str, bits: int):
    if name == "kind":
        return ByteEnumField(name, 0, KINDS)
    if name == "flags":
        return FlagsField(name, 0, bits, FLAG_NAMES)
    return {8: ByteField, 16: ShortField, 32: IntField}[bits](name, 0)


def _values_bytes(pkt: Packet) -> int | None:
    """Bytes of whole values: from the UDP length when under UDP, else everything left."""
    udp = pkt.underlayer
    if isinstance(udp, UDP) and udp.len is not None:
        return max(0, udp.len - 8 - HEADER_BYTES) // 4 * 4
    return None


class Ina(Packet):
    name = "INA aggregation"
    fields_desc = [
        *(_header_field(name, bits) for name, bits in LAYOUT),
        FieldListField("values", [], SignedIntField("value", 0), length_from=_values_bytes,
                       max_count=MAX_VALUES),
    ]

    @property
    def lane_format(self) -> str:
        """The lane format the flags' format bits name ("int32", "int16", "int8" or "invalid")."""
        return FORMATS.get((int(self.flags) & FLAG_FORMAT) >> FORMAT_SHIFT, "invalid")

    def mysummary(self) -> str:
        return self.sprintf("INA %kind% job=%job% worker=%worker% slot=%slot% chunk=%chunk% "
                            "flags=%flags%")


bind_bottom_up(UDP, Ina, dport=INA_UDP_PORT)
bind_bottom_up(UDP, Ina, sport=INA_UDP_PORT)
bind_layers(UDP, Ina, sport=INA_UDP_PORT, dport=INA_UDP_PORT)
