"""Scapy layer for the aggregation header (docs/protocol.md §1), for captures and ad-hoc tests.

    from inaemu.trace.scapy_ina import Ina
    pkt = Ether(frame)            # UDP to or from port 48879 dissects as Ina
    pkt[Ina].values               # k signed 32-bit ints; k follows from the UDP length
    Ether()/IP()/UDP(chksum=0)/Ina(kind="CONTRIB", job=7, worker=1, values=[1, -2, 3, 4])

`fields_desc` is the whole definition. Bytes after the last whole value (there should be none)
are left as a Raw payload.
"""

from __future__ import annotations

from scapy.fields import (ByteEnumField, ByteField, FieldListField, FlagsField, IntField,
                          ShortField, SignedIntField)
from scapy.layers.inet import UDP
from scapy.packet import Packet, bind_bottom_up, bind_layers

INA_UDP_PORT = 48879
HEADER_BYTES = 16
KINDS = {0: "CONTRIB", 1: "RESULT", 2: "MAX_CONTRIB", 3: "MAX_RESULT", 4: "QUERY", 5: "NACK"}
# flags, from bit 0: ver, retx, the lane format (2 bits: 0 int32, 1 int16, 2 int8), overflow
FLAG_NAMES = ["ver", "retx", "fmt0", "fmt1", "overflow"]
FORMATS = {0: "int32", 1: "int16", 2: "int8"}
MAX_VALUES = 16384          # a 64 KiB UDP payload; beyond that it is not an aggregation packet


def _values_bytes(pkt: Packet) -> int | None:
    """Bytes of whole values: from the UDP length when under UDP, else everything left."""
    udp = pkt.underlayer
    if isinstance(udp, UDP) and udp.len is not None:
        return max(0, udp.len - 8 - HEADER_BYTES) // 4 * 4
    return None


class Ina(Packet):
    name = "INA aggregation"
    fields_desc = [
        ByteEnumField("kind", 0, KINDS),
        FlagsField("flags", 0, 8, FLAG_NAMES),
        ShortField("job", 0),
        ByteField("worker", 0),
        ByteField("pad", 0),
        ShortField("slot", 0),
        IntField("chunk", 0),
        ShortField("count", 0),
        ShortField("bmax", 0),   # a block max as bfloat16, rounded up (protocol §5.2)
        FieldListField("values", [], SignedIntField("value", 0), length_from=_values_bytes,
                       max_count=MAX_VALUES),
    ]

    @property
    def lane_format(self) -> str:
        """The lane format that flags bits 2-3 name ("int32", "int16", "int8" or "invalid")."""
        return FORMATS.get((int(self.flags) >> 2) & 3, "invalid")

    def mysummary(self) -> str:
        return self.sprintf("INA %kind% job=%job% worker=%worker% slot=%slot% chunk=%chunk% "
                            "flags=%flags%")


bind_bottom_up(UDP, Ina, dport=INA_UDP_PORT)
bind_bottom_up(UDP, Ina, sport=INA_UDP_PORT)
bind_layers(UDP, Ina, sport=INA_UDP_PORT, dport=INA_UDP_PORT)
