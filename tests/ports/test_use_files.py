"""`inaemu switch --use-files WAIT`: ports on pcap files, as simple_switch has them (no
reference toolchain needed; tests/ports/test_use_files_bmv2.py compares with the real one).

The switch runs as a child process with p4c's STF harness command line, in a folder of
pcapN_in.pcap inputs (regular files or FIFOs), on files_seq.p4, which stamps each packet with
the order in which it ran (filesswitch.py). Every wait is for a condition (a line, a record in
an output file, the inputs closed), never for a time.
"""

from __future__ import annotations

import argparse
import json
import os
import select
import struct
from pathlib import Path

import pytest

from p4switch import switch_cli
from p4switch.compiler import compile_file
from p4switch.ports.errors import PcapFormatError, PortConfigError
from p4switch.ports.pcap import PcapWriter
from p4switch.ports.pcapfiles import PcapFilePorts

from .filesswitch import (BMV2_OUTPUT_HEADER, DROP, INPUT_HEADER, PROGRAM, FilesSwitch,
                          arrival_port_of, frame, harness_arguments, order_of, record_bytes,
                          tag_of, wait_for, write_input)


@pytest.fixture(scope="module")
def program(tmp_path_factory) -> Path:
    path = tmp_path_factory.mktemp("program") / "files_seq.json"
    path.write_text(json.dumps(compile_file(str(PROGRAM)).bmv2))
    return path


def summary(switch: FilesSwitch) -> list[str]:
    return [line.removeprefix("inaemu switch: ") for line in switch.stdout[1:]]


# -- regular files -------------------------------------------------------------------------------
def test_two_files_are_merged_by_timestamp_ties_to_the_lower_port(tmp_path, program):
    write_input(tmp_path / "pcap0_in.pcap", [(5, frame(1, 1)), (1, frame(1, 2)), (5, frame(1, 3))])
    write_input(tmp_path / "pcap1_in.pcap", [(5, frame(1, 4)), (2, frame(0, 5)),
                                             (3, frame(DROP, 6)), (4, frame(7, 7)),
                                             (6, frame(0, 8))])
    switch = FilesSwitch.inaemu(tmp_path, harness_arguments(program, [0, 1]))
    try:
        assert switch.wait_line("inaemu switch ready").startswith(
            "inaemu switch ready: device 123, 2 ports, grpc off, thrift ")   # the harness's port
        out = switch.wait_outputs({0: 2, 1: 4})
        switch.wait_inputs_closed()
        assert switch.terminate() == 0
    finally:
        switch.kill()
    # merged by the heads' timestamps (5 = 5: port 0 first), each file in its own order
    assert [tag_of(r.data) for r in out[1]] == [1, 2, 3, 4]
    assert [order_of(r.data) for r in out[1]] == [0, 1, 2, 3]
    assert [arrival_port_of(r.data) for r in out[1]] == [0, 0, 0, 1]
    assert [(tag_of(r.data), order_of(r.data)) for r in out[0]] == [(5, 4), (8, 7)]
    assert all(len(r.data) == r.original_length == 34 for r in out[0] + out[1])
    assert all(r.timestamp > 1e9 for r in out[0] + out[1])      # stamped when they left
    for port in (0, 1):
        assert (tmp_path / f"pcap{port}_out.pcap").read_bytes()[:24] == BMV2_OUTPUT_HEADER
    assert summary(switch)[:4] == [
        "port 0 (pcap0): rx 3 tx 2 lost-in 0 lost-out 0",
        "port 1 (pcap1): rx 5 tx 4 lost-in 0 lost-out 0",
        "dropped to unbound ports: 1",
        "pcap input: 8 packets read, every input file read to its end",
    ]
    assert (tmp_path / "switch.log").exists()     # inaemu's trace: PATH itself (docs/switch.md)


def test_an_idle_port_leaves_an_empty_output_file(tmp_path, program):
    write_input(tmp_path / "pcap0_in.pcap", [(1, frame(1, 1))])
    write_input(tmp_path / "pcap1_in.pcap", [])
    switch = FilesSwitch.inaemu(tmp_path, ["--use-files", "0", "-i", "0@pcap0", "-i", "1@pcap1",
                                           str(program)])
    try:
        switch.wait_line("inaemu switch ready")
        assert (tmp_path / "pcap0_out.pcap").stat().st_size == 0       # created at start
        assert (tmp_path / "pcap1_out.pcap").exists()
        switch.wait_outputs({1: 1})
        assert switch.terminate() == 0
    finally:
        switch.kill()
    assert (tmp_path / "pcap0_out.pcap").stat().st_size == 0     # no header without a packet
    assert [tag_of(r.data) for r in switch.outputs(1)] == [1]


def test_file_names_are_path_prefixes_and_pcap_is_ignored(tmp_path, program):
    (tmp_path / "in").mkdir()
    write_input(tmp_path / "in" / "first port_in.pcap", [(1, frame(0, 9))])
    switch = FilesSwitch.inaemu(tmp_path, ["--pcap", "--use-files", "-3",
                                           "-i", "0@in/first port", str(program)])
    try:
        switch.wait_line("inaemu switch ready")
        wait_for(lambda: (tmp_path / "in" / "first port_out.pcap").stat().st_size > 0,
                 "the output", switch.process)
        assert switch.terminate() == 0
    finally:
        switch.kill()
    assert any("--pcap .: ignored with --use-files" in line for line in switch.stderr)
    assert not (tmp_path / "in" / "first port_in.pcap.pcap").exists()
    assert sorted(p.name for p in (tmp_path / "in").iterdir()) == \
        ["first port_in.pcap", "first port_out.pcap"]


# -- FIFOs ---------------------------------------------------------------------------------------
def test_fifos_written_slowly_wait_for_every_open_port(tmp_path, program):
    """As the harness feeds them: the switch opens the FIFOs in port order at start, then runs
    a packet only once every FIFO still open has its next packet (or has been closed)."""
    for port in (0, 1):
        os.mkfifo(tmp_path / f"pcap{port}_in.pcap")
    switch = FilesSwitch.inaemu(tmp_path, harness_arguments(program, [0, 1]))
    writers = {}
    try:
        for port in (0, 1):                # in port order, as the switch opens them
            switch.wait_line(f"waiting for a writer to open the FIFO pcap{port}_in.pcap",
                             "stderr")
            writers[port] = open(tmp_path / f"pcap{port}_in.pcap", "wb")
            writers[port].write(INPUT_HEADER)
            writers[port].flush()
        switch.wait_line("inaemu switch ready")

        def send(port: int, timestamp: float, data: bytes) -> None:
            writers[port].write(record_bytes(timestamp, data))
            writers[port].flush()

        send(0, 100, frame(1, 1))          # written first, but port 1's next is unknown ...
        send(1, 50, frame(0, 2))           # ... and earlier: it runs first
        out = switch.wait_outputs({0: 1})
        assert [(tag_of(r.data), order_of(r.data)) for r in out[0]] == [(2, 0)]
        send(1, 200, frame(0, 3))          # port 1's next is later: port 0's packet runs
        out = switch.wait_outputs({1: 1})
        assert [(tag_of(r.data), order_of(r.data)) for r in out[1]] == [(1, 1)]
        assert len(switch.outputs(0)) == 1      # tag 3 waits for port 0's next or its end
        writers.pop(0).close()
        out = switch.wait_outputs({0: 2})
        assert [(tag_of(r.data), order_of(r.data)) for r in out[0]] == [(2, 0), (3, 2)]
        writers.pop(1).close()
        switch.wait_inputs_closed()
        assert switch.terminate() == 0
    finally:
        for writer in writers.values():
            writer.close()
        switch.kill()
    assert "pcap input: 3 packets read, every input file read to its end" in summary(switch)


def test_sigterm_while_waiting_for_a_fifo_writer_stops_the_switch(tmp_path, program):
    os.mkfifo(tmp_path / "pcap0_in.pcap")
    switch = FilesSwitch.inaemu(tmp_path, ["--use-files", "0", "-i", "0@pcap0", str(program)])
    try:
        switch.wait_line("waiting for a writer to open the FIFO pcap0_in.pcap", "stderr")
        assert switch.terminate() == 0
    finally:
        switch.kill()
    assert switch.stdout == []                       # never ready
    assert not any("Traceback" in line for line in switch.stderr), switch.stderr


# -- bad input -----------------------------------------------------------------------------------
def _missing(folder: Path) -> None:
    pass


def _not_pcap(folder: Path) -> None:
    (folder / "pcap1_in.pcap").write_bytes(b"hello world, not a pcap file!!")


def _empty(folder: Path) -> None:
    (folder / "pcap1_in.pcap").write_bytes(b"")


def _short_header(folder: Path) -> None:
    (folder / "pcap1_in.pcap").write_bytes(INPUT_HEADER[:10])


@pytest.mark.parametrize("make, message", [
    (_missing, "-i 1@pcap1: cannot open pcap1_in.pcap: No such file or directory"),
    (_not_pcap, "pcap1_in.pcap: not a pcap file (magic 68656c6c)"),
    (_empty, "pcap1_in.pcap: 0 bytes is too short for a pcap header"),
    (_short_header, "pcap1_in.pcap: 10 bytes is too short for a pcap header"),
], ids=["missing", "not-pcap", "empty", "short-header"])
def test_an_unusable_input_file_stops_the_start_with_one_line(tmp_path, program, make, message):
    write_input(tmp_path / "pcap0_in.pcap", [(1, frame(1, 1))])
    make(tmp_path)
    switch = FilesSwitch.inaemu(tmp_path, ["--use-files", "0", "-i", "0@pcap0", "-i", "1@pcap1",
                                           str(program)])
    try:
        assert switch.wait_exit() == 2
    finally:
        switch.kill()
    assert switch.stdout == []
    assert switch.stderr == [f"inaemu switch: error: {message}"]


@pytest.mark.parametrize("bad_record, message", [
    (struct.pack("<IIII", 4, 0, 60, 60) + b"x" * 10,
     "record 2 at byte 74 claims 60 bytes, only 10 remain"),
    (struct.pack("<IIII", 4, 0, 30, 60) + b"x" * 30,
     "record 2 holds 30 of the packet's 60 bytes: simple_switch reads only whole packets"),
    (struct.pack("<IIII", 4, 0, 2**31, 2**31),
     "record 2 at byte 74 claims 2147483648 bytes, more than a pcap record may hold (262144)"),
    (b"\x01\x02\x03", "record 2: truncated record header at byte 74 (3 of 16 bytes)"),
], ids=["truncated-data", "short-capture", "huge-claim", "truncated-header"])
def test_a_bad_record_runs_what_came_before_then_stops(tmp_path, program, bad_record, message):
    write_input(tmp_path / "pcap0_in.pcap", [(1, frame(1, 1))])
    with open(tmp_path / "pcap0_in.pcap", "ab") as f:
        f.write(bad_record)
    write_input(tmp_path / "pcap1_in.pcap", [])
    switch = FilesSwitch.inaemu(tmp_path, ["--use-files", "0", "-i", "0@pcap0", "-i", "1@pcap1",
                                           str(program)])
    try:
        assert switch.wait_exit() == 1
    finally:
        switch.kill()
    assert switch.stdout[0].startswith("inaemu switch ready")
    assert switch.stderr == [f"inaemu switch: error: pcap0_in.pcap: {message}; stopping"]
    assert [tag_of(r.data) for r in switch.outputs(1)] == [1]


# -- the ports themselves, in-process ------------------------------------------------------------
def readable(ports) -> list[int]:
    ready, _, _ = select.select(ports, [], [], 0)
    return sorted(port.port for port in ready)


def test_only_the_port_of_the_next_merged_packet_is_readable(tmp_path):
    write_input(tmp_path / "a_in.pcap", [(1, frame(9, 1)), (2, frame(9, 2)), (5, frame(9, 5))])
    write_input(tmp_path / "b_in.pcap", [(3, frame(9, 3)), (4, frame(9, 4))])
    files = PcapFilePorts()
    try:
        a = files.open(0, str(tmp_path / "a"))
        b = files.open(1, str(tmp_path / "b"))
        with pytest.raises(ValueError, match="increasing port order"):
            files.open(1, str(tmp_path / "c"))
        files.start()
        wait_for(lambda: files.handed_over == 5, "the reader to queue every packet")
        assert readable([a, b]) == [0]
        assert b.receive_batch(64) == []                 # not its turn: nothing
        assert [tag_of(d) for d in a.receive_batch(1)] == [1]
        assert readable([a, b]) == [0]
        assert [tag_of(d) for d in a.receive_batch(64)] == [2]    # the run ends at port 1's
        assert readable([a, b]) == [1]
        assert [tag_of(d) for d in b.receive_batch(64)] == [3, 4]
        assert readable([a, b]) == [0]
        assert [tag_of(d) for d in a.receive_batch(64)] == [5]
        assert readable([a, b]) == []
        assert a.transmit([frame(0, 7), frame(0, 8)]) == (2, 0)
    finally:
        files.close()
    assert files.status_line() == "pcap input: 5 packets read, every input file read to its end"
    out = (tmp_path / "a_out.pcap").read_bytes()
    assert out[:24] == BMV2_OUTPUT_HEADER and len(out) == 24 + 2 * (16 + 34)
    assert (tmp_path / "b_out.pcap").read_bytes() == b""


def test_a_bad_record_is_raised_on_the_port_that_reaches_it(tmp_path):
    write_input(tmp_path / "a_in.pcap", [(1, frame(9, 1))])
    with open(tmp_path / "a_in.pcap", "ab") as f:
        f.write(b"\x00" * 5)
    files = PcapFilePorts()
    try:
        a = files.open(0, str(tmp_path / "a"))
        files.start()
        wait_for(lambda: readable([a]), "the first packet")
        assert [tag_of(d) for d in a.receive_batch(64)] == [1]      # the packet before it
        wait_for(lambda: readable([a]), "the failure")
        with pytest.raises(PcapFormatError, match=r"a_in.pcap: record 2: truncated record"):
            a.receive_batch(64)
    finally:
        files.close()
    assert files.status_line().endswith(f"not at the end of: {tmp_path / 'a_in.pcap'}")


def test_wait_comes_before_the_first_read_and_a_stop_ends_it(tmp_path):
    write_input(tmp_path / "a_in.pcap", [(1, frame(9, 1))])
    waits = []

    class Recording(PcapFilePorts):
        def _sleep(self, seconds: float) -> bool:
            waits.append((seconds, self.handed_over))
            return False

    files = Recording(wait_s=2)
    try:
        a = files.open(0, str(tmp_path / "a"))
        files.start()
        wait_for(lambda: readable([a]), "the packet")
    finally:
        files.close()
    assert waits == [(2, 0)]

    waiting = PcapFilePorts(wait_s=3600)        # a stop during WAIT ends the reader
    waiting.open(0, str(tmp_path / "a"))
    waiting.start()
    assert waiting.reading
    waiting.close()
    assert not waiting.reading and waiting.handed_over == 0


def test_output_writer_defers_its_header_and_keeps_packets_whole(tmp_path):
    path = tmp_path / "o.pcap"
    writer = PcapWriter(path, snaplen=0, linktype=0, defer_header=True)
    assert path.read_bytes() == b""
    writer.write(bytes(300000), 1.5)
    writer.close()
    data = path.read_bytes()
    assert data[:24] == BMV2_OUTPUT_HEADER
    assert data[24:40] == struct.pack("<IIII", 1, 500000, 300000, 300000)
    assert len(data) == 40 + 300000


# -- the command line ----------------------------------------------------------------------------
def parse(argv: list[str]):
    parser = argparse.ArgumentParser()
    switch_cli.add_arguments(parser)
    return switch_cli.parse_options(parser.parse_args(argv))


def test_use_files_options():
    options = parse(["p.json", "--use-files", "2", "-i", "0@dir/pcap0", "-i", "1@a name"])
    assert options.use_files == 2
    assert options.interfaces == {0: "dir/pcap0", 1: "a name"}
    assert parse(["p.json", "--use-files", "-1"]).use_files == 0      # as simple_switch
    assert parse(["p.json", "-i", "0@x"]).use_files is None
    options = parse(["p.json", "--use-files", "0", "--pcap", "caps"])
    assert options.pcap_dir is None and any("ignored with --use-files" in n for n in options.notes)
    # what the harness passes besides
    options = parse(harness_arguments(Path("p.json"), [0, 1], thrift_port=9123))
    assert options.log_file == Path("switch.log") and options.log_flush
    assert options.device_id == 123 and options.interfaces == {0: "pcap0", 1: "pcap1"}


@pytest.mark.parametrize("argv, message", [
    (["p.json", "--use-files", "x"], "--use-files 'x' is not an integer"),
    (["p.json", "--use-files", "0", "-i", "0@"], "expected PORT@NAME"),
    (["p.json", "--use-files", "0", "-i", "0@a", "-i", "1@a"], "files a is attached twice"),
    (["p.json", "-i", "0@dir/pcap0"], "not a valid interface name"),
])
def test_bad_use_files_options(argv, message):
    with pytest.raises(PortConfigError, match=message):
        parse(argv)
