"""The classic libpcap file format ("pcap"), written and read without libpcap.

Why our own: the switch writes one capture per port and direction (as BMv2's `--pcap` does), and
tests compare their records with exact bytes. The format is small: a 24-byte global header
(magic, version 2.4, time zone, accuracy, snap length, link type) then, per packet, a 16-byte
record header (seconds, micro- or nanoseconds, captured length, original length) and the bytes.
Writing uses the native-microsecond magic `0xa1b2c3d4`; reading accepts either byte order and the
nanosecond magic `0xa1b23c4d` too.

Reading is one sans-I/O parser, `PcapStream`: bytes are fed as they arrive (a whole file at once
for `read_pcap`, pieces of a FIFO that another process writes slowly for `inaemu switch
--use-files`) and complete records come out; what is malformed is a `PcapFormatError` naming the
source, the record's number (1 is the first) and its byte offset.
"""

from __future__ import annotations

import struct
import time
from dataclasses import dataclass
from pathlib import Path
from typing import BinaryIO, Iterator

from p4switch.ports.errors import PcapFormatError

LINKTYPE_NULL = 0                 # what simple_switch --use-files writes (docs/switch.md)
LINKTYPE_ETHERNET = 1
DEFAULT_SNAPLEN = 262144
MAX_RECORD_BYTES = 262144         # libpcap refuses a record that claims more (its MAXIMUM_SNAPLEN)

_MAGIC_USEC = 0xA1B2C3D4
_MAGIC_NSEC = 0xA1B23C4D
_GLOBAL_HEADER = struct.Struct("<IHHiIII")
_RECORD_HEADER = struct.Struct("<IIII")


@dataclass(frozen=True, slots=True)
class PcapRecord:
    """One captured packet: when it was seen, its bytes, and its length on the wire.

    `time_us` is the same instant in whole microseconds since the epoch (nanosecond files
    truncated, as libpcap reads them): exact, for ordering records of several files."""

    timestamp: float
    data: bytes
    original_length: int
    time_us: int = 0


class PcapWriter:
    """Appends packets to a new pcap file; `close()` (or leaving a `with`) flushes it.

    `snaplen=0` writes 0 in the header and keeps packets whole. With `defer_header` the file is
    created empty and the global header is written with the first packet, so a writer that saw
    no packet leaves an empty file (as simple_switch's `--use-files` output of an idle port)."""

    def __init__(self, path: str | Path, *, snaplen: int = DEFAULT_SNAPLEN,
                 linktype: int = LINKTYPE_ETHERNET, defer_header: bool = False) -> None:
        self.path = Path(path)
        self.snaplen = snaplen
        self.linktype = linktype
        self._file: BinaryIO | None = open(self.path, "wb")
        self._header_due = True
        if not defer_header:
            self._write_header()
        self.count = 0

    def _write_header(self) -> None:
        self._file.write(_GLOBAL_HEADER.pack(_MAGIC_USEC, 2, 4, 0, 0, self.snaplen,
                                             self.linktype))
        self._header_due = False

    def write(self, data: bytes, timestamp: float | None = None) -> None:
        """Record one packet (truncated to the snap length); `timestamp` defaults to now."""
        if self._file is None:
            raise ValueError(f"{self.path}: pcap writer is closed")
        if self._header_due:
            self._write_header()
        if timestamp is None:
            timestamp = time.time()
        seconds = int(timestamp)
        micros = int(round((timestamp - seconds) * 1_000_000))
        if micros >= 1_000_000:
            seconds, micros = seconds + 1, micros - 1_000_000
        captured = data[: self.snaplen] if self.snaplen else data
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
    stream = PcapStream(source)
    stream.feed(blob)
    if not stream.read_header():
        stream.finish()                   # raises: too short for a header
    yield from stream.records()
    stream.finish()


@dataclass(frozen=True, slots=True)
class PcapHeader:
    snaplen: int
    linktype: int
    nanoseconds: bool


class PcapStream:
    """A pcap file read as its bytes arrive (sans-I/O).

        stream = PcapStream("pcap0_in.pcap")
        stream.feed(chunk)            # any amount, as read
        stream.read_header()          # True once the global header is complete (checked)
        stream.next_record()          # a PcapRecord, or None until more bytes are fed
        stream.records()              # every complete record there is now
        stream.finish()               # at the end of the input: raises if a record is cut off
    """

    def __init__(self, source: str) -> None:
        self.source = source
        self.header: PcapHeader | None = None
        self.count = 0                    # records returned so far
        self._buffer = b""
        self._position = 0                # where the next unread byte is in _buffer
        self._consumed = 0                # bytes of the file before _buffer[0]
        self._record: struct.Struct | None = None
        self._fraction = 1_000_000

    @property
    def offset(self) -> int:
        """Byte offset, in the file, of the next unread byte."""
        return self._consumed + self._position

    def feed(self, data: bytes) -> None:
        # keep only the unread part (callers read every complete record before feeding more,
        # so that is at most one partial record) and append
        self._consumed += self._position
        self._buffer = self._buffer[self._position:] + bytes(data)
        self._position = 0

    def read_header(self) -> bool:
        """Parse the global header once its 24 bytes are there; False until then."""
        if self.header is not None:
            return True
        if len(self._buffer) - self._position < _GLOBAL_HEADER.size:
            return False
        start = self._position
        order, self._fraction = _byte_order_and_resolution(
            self._buffer[start:start + 4], self.source)
        _, major, minor, _, _, snaplen, linktype = struct.unpack_from(
            order + "IHHiIII", self._buffer, start)
        if major != 2:
            raise PcapFormatError(f"{self.source}: unsupported pcap version {major}.{minor}")
        self._record = struct.Struct(order + "IIII")
        self._position += _GLOBAL_HEADER.size
        self.header = PcapHeader(snaplen, linktype, self._fraction == 1_000_000_000)
        return True

    def next_record(self) -> PcapRecord | None:
        """The next complete record, or None until more bytes arrive."""
        return next(self.records(), None)

    def records(self) -> Iterator[PcapRecord]:
        """Every complete record there is now, in file order (stops where bytes are missing;
        feed more and call again)."""
        if self.header is None and not self.read_header():
            return
        buffer, record, fraction = self._buffer, self._record, self._fraction
        unpack, size = record.unpack_from, record.size
        nanoseconds = fraction != 1_000_000
        start, length = self._position, len(buffer)
        while length - start >= size:
            seconds, subsecond, captured, original = unpack(buffer, start)
            if captured > MAX_RECORD_BYTES:
                raise PcapFormatError(
                    f"{self.source}: record {self.count + 1} at byte {self.offset} claims "
                    f"{captured} bytes, more than a pcap record may hold ({MAX_RECORD_BYTES})")
            end = start + size + captured
            if length < end:
                return
            self._position = start = end
            self.count += 1
            micros = subsecond // 1000 if nanoseconds else subsecond
            yield PcapRecord(seconds + subsecond / fraction, buffer[end - captured:end],
                             original, seconds * 1_000_000 + micros)

    def finish(self) -> None:
        """The input has ended: raise `PcapFormatError` if it ended inside the header or a
        record (what is left is named by record number and byte offset)."""
        left = len(self._buffer) - self._position
        if self.header is None:
            raise PcapFormatError(f"{self.source}: {left} bytes is too short for a pcap header")
        if not left:
            return
        number, at = self.count + 1, self.offset
        if left < self._record.size:
            raise PcapFormatError(f"{self.source}: record {number}: truncated record header "
                                  f"at byte {at} ({left} of {self._record.size} bytes)")
        captured = self._record.unpack_from(self._buffer, self._position)[2]
        raise PcapFormatError(
            f"{self.source}: record {number} at byte {at} claims {captured} bytes, only "
            f"{left - self._record.size} remain")


def _byte_order_and_resolution(magic: bytes, source: str) -> tuple[str, int]:
    for order in ("<", ">"):
        (value,) = struct.unpack(order + "I", magic)
        if value == _MAGIC_USEC:
            return order, 1_000_000
        if value == _MAGIC_NSEC:
            return order, 1_000_000_000
    raise PcapFormatError(f"{source}: not a pcap file (magic {magic.hex()})")
