"""The classic libpcap file format ("pcap"), written and read without libpcap.

Why our own: the switch writes one capture per port and direction (as BMv2's `--pcap` does), and
tests compare their records with exact bytes. The format is small: a 24-byte global header
(magic, version 2.4, time zone, accuracy, snap length, link type) then, per packet, a 16-byte
record header (seconds, micro- or nanoseconds, captured length, original length) and the bytes.
Writing uses the native-microsecond magic `0xa1b2c3d4`; reading accepts either byte order and the
nanosecond magic `0xa1b23c4d` too.
"""

from __future__ import annotations

import struct
import time
from dataclasses import dataclass
from pathlib import Path
from typing import BinaryIO, Iterator

from p4switch.ports.errors import PcapFormatError

LINKTYPE_ETHERNET = 1
DEFAULT_SNAPLEN = 262144

_MAGIC_USEC = 0xA1B2C3D4
_MAGIC_NSEC = 0xA1B23C4D
_GLOBAL_HEADER = struct.Struct("<IHHiIII")
_RECORD_HEADER = struct.Struct("<IIII")


@dataclass(frozen=True, slots=True)
class PcapRecord:
    """One captured packet: when it was seen, its bytes, and its length on the wire."""

    timestamp: float
    data: bytes
    original_length: int


class PcapWriter:
    """Appends packets to a new pcap file; `close()` (or leaving a `with`) flushes it."""

    def __init__(self, path: str | Path, *, snaplen: int = DEFAULT_SNAPLEN,
                 linktype: int = LINKTYPE_ETHERNET) -> None:
        self.path = Path(path)
        self.snaplen = snaplen
        self._file: BinaryIO | None = open(self.path, "wb")
        self._file.write(_GLOBAL_HEADER.pack(_MAGIC_USEC, 2, 4, 0, 0, snaplen, linktype))
        self.count = 0

    def write(self, data: bytes, timestamp: float | None = None) -> None:
        """Record one packet (truncated to the snap length); `timestamp` defaults to now."""
        if self._file is None:
            raise ValueError(f"{self.path}: pcap writer is closed")
        if timestamp is None:
            timestamp = time.time()
        seconds = int(timestamp)
        micros = int(round((timestamp - seconds) * 1_000_000))
        if micros >= 1_000_000:
            seconds, micros = seconds + 1, micros - 1_000_000
        captured = data[: self.snaplen]
        self._file.write(_RECORD_HEADER.pack(seconds, micros, len(captured), len(data)))
        self._file.write(captured)
        self.count += 1

    def flush(self) -> None:
        if self._file is not None:
            self._file.flush()

    def close(self) -> None:
        if self._file is not None:
            self._file.close()
            self._file = None

    def __enter__(self) -> "PcapWriter":
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.close()


def read_pcap(path: str | Path) -> list[PcapRecord]:
    """All records of a pcap file; a malformed file raises `PcapFormatError` naming the offset."""
    return list(iter_pcap(Path(path).read_bytes(), source=str(path)))


def iter_pcap(blob: bytes, *, source: str = "<bytes>") -> Iterator[PcapRecord]:
    """Records of a pcap file held in memory, in file order."""
    if len(blob) < _GLOBAL_HEADER.size:
        raise PcapFormatError(f"{source}: {len(blob)} bytes is too short for a pcap header")
    order, fraction = _byte_order_and_resolution(blob[:4], source)
    header = struct.Struct(order + "IHHiIII").unpack_from(blob, 0)
    major = header[1]
    if major != 2:
        raise PcapFormatError(f"{source}: unsupported pcap version {major}.{header[2]}")
    record = struct.Struct(order + "IIII")
    offset = _GLOBAL_HEADER.size
    while offset < len(blob):
        if offset + record.size > len(blob):
            raise PcapFormatError(f"{source}: truncated record header at byte {offset}")
        seconds, subsecond, captured, original = record.unpack_from(blob, offset)
        offset += record.size
        if offset + captured > len(blob):
            raise PcapFormatError(
                f"{source}: record at byte {offset - record.size} claims {captured} bytes, "
                f"only {len(blob) - offset} remain")
        yield PcapRecord(seconds + subsecond / fraction, blob[offset: offset + captured], original)
        offset += captured


def _byte_order_and_resolution(magic: bytes, source: str) -> tuple[str, int]:
    for order in ("<", ">"):
        (value,) = struct.unpack(order + "I", magic)
        if value == _MAGIC_USEC:
            return order, 1_000_000
        if value == _MAGIC_NSEC:
            return order, 1_000_000_000
    raise PcapFormatError(f"{source}: not a pcap file (magic {magic.hex()})")
