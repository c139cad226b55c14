"""@controller_header packet I/O: PacketOut -> bytes for the pipeline, CPU-port bytes -> PacketIn.

The P4Info's `controller_packet_metadata` "packet_out" and "packet_in" describe a header that
sits in front of the Ethernet frame on the CPU port: its fields in declaration order, each
`bitwidth` bits, packed big-endian with no padding between them (the header as a whole is a
whole number of bytes, which p4c guarantees for @controller_header headers).
"""

from __future__ import annotations

from dataclasses import dataclass

from p4.config.v1 import p4info_pb2
from p4.v1 import p4runtime_pb2

from . import bytestrings
from .errors import INVALID_ARGUMENT, RequestError


@dataclass(frozen=True)
class MetadataField:
    id: int
    name: str
    bitwidth: int


class ControllerHeader:
    """One @controller_header: packs metadata values into bytes and back."""

    def __init__(self, header: p4info_pb2.ControllerPacketMetadata) -> None:
        self.name = header.preamble.name
        self.fields = [MetadataField(m.id, m.name, m.bitwidth) for m in header.metadata]
        total_bits = sum(f.bitwidth for f in self.fields)
        if total_bits % 8:
            raise RequestError(
                INVALID_ARGUMENT,
                f"P4Info controller header '{self.name}' is {total_bits} bits, not whole bytes",
            )
        self.size = total_bits // 8
        self._by_id = {f.id: f for f in self.fields}

    def pack(self, values: dict[int, int]) -> bytes:
        """The header bytes for metadata values by id (absent fields are zero)."""
        word = 0
        for field in self.fields:
            word = (word << field.bitwidth) | values.get(field.id, 0)
        return word.to_bytes(self.size, "big") if self.size else b""

    def unpack(self, data: bytes) -> tuple[list[tuple[int, int]], bytes]:
        """(metadata values in field order, payload) of a packet that starts with this header."""
        if len(data) < self.size:
            raise ValueError(
                f"packet of {len(data)} bytes is shorter than the {self.size}-byte "
                f"'{self.name}' header"
            )
        word = int.from_bytes(data[: self.size], "big")
        values = []
        shift = self.size * 8
        for field in self.fields:
            shift -= field.bitwidth
            values.append((field.id, (word >> shift) & ((1 << field.bitwidth) - 1)))
        return values, data[self.size :]

    def field(self, metadata_id: int) -> MetadataField:
        try:
            return self._by_id[metadata_id]
        except KeyError:
            raise RequestError(
                INVALID_ARGUMENT, f"'{self.name}' has no metadata field with id {metadata_id}"
            ) from None


def packet_out_bytes(header: ControllerHeader | None, packet: p4runtime_pb2.PacketOut) -> bytes:
    """The bytes to inject on the CPU port for a PacketOut: header (if any) + payload."""
    if header is None:
        if packet.metadata:
            raise RequestError(
                INVALID_ARGUMENT, "PacketOut has metadata but the P4Info has no 'packet_out' header"
            )
        return bytes(packet.payload)
    values: dict[int, int] = {}
    for meta in packet.metadata:
        field = header.field(meta.metadata_id)
        if field.id in values:
            raise RequestError(
                INVALID_ARGUMENT, f"PacketOut metadata '{field.name}' given twice"
            )
        values[field.id] = bytestrings.decode(
            meta.value, field.bitwidth, f"PacketOut metadata '{field.name}'"
        )
    return header.pack(values) + bytes(packet.payload)


def packet_in_message(header: ControllerHeader | None, data: bytes) -> p4runtime_pb2.PacketIn:
    """The PacketIn for bytes the pipeline sent to the CPU port. ValueError if too short."""
    message = p4runtime_pb2.PacketIn()
    if header is None:
        message.payload = data
        return message
    values, payload = header.unpack(data)
    message.payload = payload
    for metadata_id, value in values:
        message.metadata.add(metadata_id=metadata_id, value=bytestrings.encode(value))
    return message
