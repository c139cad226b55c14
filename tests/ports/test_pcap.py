"""pcap files: what the writer produces is byte-exact libpcap and reads back unchanged."""

from __future__ import annotations

import struct

import pytest

from p4switch.ports.errors import PcapFormatError
from p4switch.ports.pcap import LINKTYPE_ETHERNET, PcapWriter, iter_pcap, read_pcap

FRAME_A = bytes.fromhex("ffffffffffff" "020000000001" "0800") + b"hello"
FRAME_B = bytes(range(256)) * 3


def test_writer_produces_exact_libpcap_bytes(tmp_path):
    path = tmp_path / "x.pcap"
    with PcapWriter(path, snaplen=65535) as writer:
        writer.write(FRAME_A, timestamp=1700000000.25)
    expected = (struct.pack("<IHHiIII", 0xA1B2C3D4, 2, 4, 0, 0, 65535, LINKTYPE_ETHERNET)
                + struct.pack("<IIII", 1700000000, 250000, len(FRAME_A), len(FRAME_A))
                + FRAME_A)
    assert path.read_bytes() == expected


def test_round_trip_keeps_bytes_order_and_times(tmp_path):
    path = tmp_path / "y.pcap"
    with PcapWriter(path) as writer:
        writer.write(FRAME_A, timestamp=10.5)
        writer.write(FRAME_B, timestamp=11.000001)
        writer.write(b"", timestamp=12.0)
    records = read_pcap(path)
    assert [r.data for r in records] == [FRAME_A, FRAME_B, b""]
    assert [r.original_length for r in records] == [len(FRAME_A), len(FRAME_B), 0]
    assert records[0].timestamp == pytest.approx(10.5)
    assert records[1].timestamp == pytest.approx(11.000001, abs=1e-7)


def test_snaplen_truncates_but_keeps_original_length(tmp_path):
    path = tmp_path / "s.pcap"
    with PcapWriter(path, snaplen=100) as writer:
        writer.write(FRAME_B, timestamp=1.0)
    (record,) = read_pcap(path)
    assert record.data == FRAME_B[:100]
    assert record.original_length == len(FRAME_B)


def test_reads_big_endian_nanosecond_files():
    blob = (struct.pack(">IHHiIII", 0xA1B23C4D, 2, 4, 0, 0, 65535, 1)
            + struct.pack(">IIII", 3, 500_000_000, 4, 4) + b"abcd")
    (record,) = list(iter_pcap(blob))
    assert record.data == b"abcd"
    assert record.timestamp == pytest.approx(3.5)


@pytest.mark.parametrize("blob, problem", [
    (b"\x00" * 10, "too short"),
    (b"\x00" * 24, "not a pcap file"),
    (struct.pack("<IHHiIII", 0xA1B2C3D4, 2, 4, 0, 0, 65535, 1) + b"\x01\x02", "truncated record"),
    (struct.pack("<IHHiIII", 0xA1B2C3D4, 2, 4, 0, 0, 65535, 1)
     + struct.pack("<IIII", 0, 0, 50, 50) + b"x", "claims 50 bytes"),
])
def test_malformed_files_raise_a_located_error(blob, problem):
    with pytest.raises(PcapFormatError, match=problem):
        list(iter_pcap(blob, source="bad.pcap"))


def test_writes_after_close_are_refused(tmp_path):
    writer = PcapWriter(tmp_path / "c.pcap")
    writer.close()
    with pytest.raises(ValueError, match="closed"):
        writer.write(FRAME_A)
