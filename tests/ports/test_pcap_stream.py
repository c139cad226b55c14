"""`PcapStream`: a pcap file read as its bytes arrive (a FIFO written slowly) gives what the
whole file gives, and what is malformed is named by record number and byte offset."""

from __future__ import annotations

import struct

import pytest

from p4switch.ports.errors import PcapFormatError
from p4switch.ports.pcap import PcapStream, iter_pcap

HEADER = struct.pack("<IHHiIII", 0xA1B2C3D4, 2, 4, 0, 0, 65535, 1)


def record(seconds: int, fraction: int, data: bytes, order: str = "<") -> bytes:
    return struct.pack(order + "IIII", seconds, fraction, len(data), len(data)) + data


BLOB = HEADER + b"".join(record(10 + i, 1000 * i, bytes([i]) * (20 + i)) for i in range(7))


@pytest.mark.parametrize("chunk", [1, 3, 16, 17, 100, len(BLOB)])
def test_any_chunking_gives_the_whole_files_records(chunk):
    stream = PcapStream("x.pcap")
    got = []
    for start in range(0, len(BLOB), chunk):
        stream.feed(BLOB[start:start + chunk])
        got += list(stream.records())
    stream.finish()
    whole = list(iter_pcap(BLOB))
    assert got == whole and len(got) == 7
    assert [r.time_us for r in got] == [(10 + i) * 1_000_000 + 1000 * i for i in range(7)]
    assert stream.count == 7 and stream.offset == len(BLOB)


def test_next_record_is_none_until_the_record_is_complete():
    stream = PcapStream("x.pcap")
    stream.feed(BLOB[:30])
    assert stream.read_header() and stream.next_record() is None
    stream.feed(BLOB[30:24 + 16 + 20])
    first = stream.next_record()
    assert first.data == bytes(20) and first.original_length == 20
    assert stream.next_record() is None


def test_nanosecond_big_endian_times_are_truncated_to_microseconds():
    blob = (struct.pack(">IHHiIII", 0xA1B23C4D, 2, 4, 0, 0, 65535, 1)
            + record(3, 500_000_999, b"ab", ">") + record(3, 500_000_001, b"cd", ">"))
    first, second = iter_pcap(blob)
    assert first.time_us == second.time_us == 3_500_000       # equal, as libpcap reads them
    assert first.timestamp > second.timestamp


@pytest.mark.parametrize("tail, message", [
    (b"\x00" * 7, r"x.pcap: record 8: truncated record header at byte 297 \(7 of 16 bytes\)"),
    (record(1, 0, b"abcdef")[:-2], r"x.pcap: record 8 at byte 297 claims 6 bytes, only 4 remain"),
], ids=["cut-in-header", "cut-in-data"])
def test_an_input_that_ends_inside_a_record_names_it(tail, message):
    stream = PcapStream("x.pcap")
    stream.feed(BLOB + tail)
    assert len(list(stream.records())) == 7
    with pytest.raises(PcapFormatError, match=message):
        stream.finish()


def test_a_record_claiming_more_than_libpcap_allows_is_refused_at_once():
    stream = PcapStream("x.pcap")
    stream.feed(HEADER + struct.pack("<IIII", 0, 0, 262145, 262145))
    with pytest.raises(PcapFormatError, match="record 1 at byte 24 claims 262145 bytes, more"):
        stream.next_record()
