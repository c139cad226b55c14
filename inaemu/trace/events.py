"""What a trace is made of: the aggregation header read from frame bytes, and three event kinds.

Events come from two sources per switch (docs/trace.md): its per-packet log (`PipelineRun`: what
the P4 program did with one received packet; `LinkLoss`: a frame the port model dropped) and its
pcaps (`WireFrame`: a frame seen arriving on or leaving a port). Every event carries the switch
name and a time in seconds (wall time on Mininet, virtual time in the simulator), so the events
of all switches merge into one stream. Header decoding is plain `struct` (fast on large captures)
with the header's one definition (`hosts/ina_header.py`: kinds, flags, layout); the Scapy layer
in `scapy_ina.py` is for people.
"""

from __future__ import annotations

from dataclasses import dataclass

from hosts.ina_header import (CONTRIBUTION_KINDS, FLAG_RETX, FLAG_VER, HEADER, HEADER_BYTES,
                              INA_UDP_PORT, MAX_ROUND_KINDS, UPWARD_KINDS, Kind)

ETH_IP_UDP_BYTES = 14 + 20 + 8
INA_HEADER_BYTES = HEADER_BYTES
KIND_NAMES = {int(kind): kind.name for kind in Kind}


class TraceError(Exception):
    """A run directory, log or capture that cannot be traced; the message says where and why."""


@dataclass(frozen=True, slots=True)
class InaHeader:
    """The fields of an aggregation packet that identify it (docs/protocol.md §1)."""

    kind: int
    ver: int
    retx: bool
    job: int
    worker: int
    slot: int
    chunk: int
    count: int
    src: str
    dst: str

    @property
    def kind_name(self) -> str:
        return KIND_NAMES.get(self.kind, f"kind{self.kind}")

    @property
    def is_max_round(self) -> bool:
        return self.kind in MAX_ROUND_KINDS

    @property
    def is_contribution(self) -> bool:
        """CONTRIB or MAX_CONTRIB: carries values to be aggregated."""
        return self.kind in CONTRIBUTION_KINDS

    @property
    def is_result(self) -> bool:
        """RESULT or MAX_RESULT: a sum (or maxima) on its way down."""
        return self.kind in (Kind.RESULT, Kind.MAX_RESULT)

    @property
    def is_query(self) -> bool:
        return self.kind == Kind.QUERY

    @property
    def is_nack(self) -> bool:
        return self.kind == Kind.NACK

    @property
    def is_upward(self) -> bool:
        """Travels toward an aggregator (CONTRIB, MAX_CONTRIB, QUERY), not toward a worker."""
        return self.kind in UPWARD_KINDS


def _dotted(raw: bytes) -> str:
    return ".".join(str(b) for b in raw)


def decode_ina(frame: bytes) -> InaHeader | None:
    """The aggregation header of an Ethernet frame, or None if it is not aggregation traffic.

    Aggregation traffic is IPv4 without options, not a non-first fragment, UDP to or from port
    48879, with at least the 16-byte header (a prefix of the frame is enough: logs keep 64 bytes).
    """
    if len(frame) < ETH_IP_UDP_BYTES + INA_HEADER_BYTES or frame[12:14] != b"\x08\x00":
        return None
    if frame[14] != 0x45 or frame[23] != 17 or int.from_bytes(frame[20:22], "big") & 0x1FFF:
        return None
    sport = int.from_bytes(frame[34:36], "big")
    dport = int.from_bytes(frame[36:38], "big")
    if INA_UDP_PORT not in (sport, dport):
        return None
    kind, flags, job, worker, _, slot, chunk, count, _bmax = HEADER.unpack_from(
        frame, ETH_IP_UDP_BYTES)
    return InaHeader(kind=kind, ver=flags & FLAG_VER, retx=bool(flags & FLAG_RETX), job=job,
                     worker=worker, slot=slot, chunk=chunk, count=count,
                     src=_dotted(frame[26:30]), dst=_dotted(frame[30:34]))


@dataclass(frozen=True, slots=True)
class Output:
    """One packet the pipeline emitted: its port, length and first bytes (as the log keeps)."""

    port: int
    length: int
    head: bytes

    @property
    def ina(self) -> InaHeader | None:
        return decode_ina(self.head)


@dataclass(frozen=True, slots=True)
class PipelineRun:
    """One received packet's run through the P4 program, from the switch log."""

    time: float
    switch: str
    packet_id: int
    port: int
    length: int
    head: bytes
    actions: tuple[str, ...]           # every action run, in order, by (short) name
    drops: tuple[str, ...]             # reasons the log gives for drops
    multicast: tuple[tuple[int, int], ...] | None   # (port, rid) replicas, when multicast
    outputs: tuple[Output, ...]

    @property
    def ina(self) -> InaHeader | None:
        return decode_ina(self.head)


@dataclass(frozen=True, slots=True)
class LinkLoss:
    """A frame the port model dropped: arriving on (`in`) or leaving (`out`) `port`."""

    time: float
    switch: str
    port: int
    direction: str
    length: int
    crc32: int
    head: bytes

    @property
    def ina(self) -> InaHeader | None:
        return decode_ina(self.head)


@dataclass(frozen=True, slots=True)
class WireFrame:
    """A frame in a capture: `in` = arrived on the port, `out` = left on it."""

    time: float
    switch: str
    port: int | None          # None when the capture's interface maps to no known port
    iface: str
    direction: str
    data: bytes

    @property
    def ina(self) -> InaHeader | None:
        return decode_ina(self.data)


Event = PipelineRun | LinkLoss | WireFrame
