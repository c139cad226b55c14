"""`--use-files` side by side: the same program (p4c's JSON of files_seq.p4) and the same input
pcaps on real simple_switch (the oracle) and on `inaemu switch`, both started with p4c's STF
harness command line; the output pcaps must hold the same packets per port, in the same order
(files_seq.p4 writes the processing order into each packet, so the order across ports is
compared too), the same header, and an idle port's output must be empty in both. Skipped only
where the reference toolchain is not installed.
"""

from __future__ import annotations

import os
import random
from pathlib import Path

import pytest

from p4switch.reference import compile_p4, find_toolchain

from .filesswitch import (BMV2_OUTPUT_HEADER, DROP, PROGRAM, FilesSwitch, frame,
                          harness_arguments, open_fifo_writer, order_of, output_records,
                          record_bytes, tag_of, write_input)

TOOLCHAIN = find_toolchain()
pytestmark = pytest.mark.skipif(TOOLCHAIN is None, reason="reference toolchain not installed")

PORTS = [0, 1, 2]


@pytest.fixture(scope="module")
def p4c_json(tmp_path_factory) -> Path:
    built = compile_p4(TOOLCHAIN, PROGRAM, p4runtime=False,
                       cache_dir=tmp_path_factory.mktemp("p4c"))
    assert built.ok, built.stderr
    return built.json_path


def start(target: str, folder: Path, program: Path) -> FilesSwitch:
    device = random.randrange(1000, 60000)
    arguments = harness_arguments(program, PORTS, device_id=device)
    if target == "inaemu":
        return FilesSwitch.inaemu(folder, arguments)
    # a private notifications socket (the default one is per device id, machine-wide)
    notify = Path(f"/tmp/inaemu-files-test-{os.getpid()}-{device}.ipc")
    switch = FilesSwitch([str(TOOLCHAIN.simple_switch), "--notifications-addr",
                          f"ipc://{notify}", *arguments], folder)
    switch.leftovers = [notify]
    return switch


def clean_up(switch: FilesSwitch) -> None:
    switch.kill()
    for path in getattr(switch, "leftovers", []):
        path.unlink(missing_ok=True)


def forwarded(inputs: dict[int, list[tuple[float, bytes]]]) -> dict[int, int]:
    """How many frames each port must send: frames to an attached port (not dropped)."""
    counts = dict.fromkeys(PORTS, 0)
    for packets in inputs.values():
        for _, data in packets:
            if data[5] in counts:
                counts[data[5]] += 1
    return counts


def outputs(folder: Path) -> dict[int, tuple[bytes, list[bytes]]]:
    """Per port: the output file's first 24 bytes (b'' for an empty file) and its packets."""
    result = {}
    for port in PORTS:
        path = folder / f"pcap{port}_out.pcap"
        head = path.read_bytes()[:24]
        records = output_records(path)
        assert all(len(r.data) == r.original_length for r in records)
        result[port] = (head, [r.data for r in records])
    return result


INPUTS = {   # ties, a file whose times go back, a drop, a port no -i attaches (7), an idle port
    0: [(5, frame(1, 1)), (1, frame(1, 2)), (5, frame(DROP, 3)), (7, frame(0, 4))],
    1: [(5, frame(1, 5)), (2, frame(0, 6)), (3, frame(7, 7)), (6, frame(1, 8))],
    2: [],
}


def run_regular_files(target: str, folder: Path, program: Path) -> FilesSwitch:
    folder.mkdir()
    for port, packets in INPUTS.items():
        write_input(folder / f"pcap{port}_in.pcap", packets)
    switch = start(target, folder, program)
    try:
        switch.wait_outputs(forwarded(INPUTS))
        status = switch.terminate()
    finally:
        clean_up(switch)
    assert status in (0, -15), (status, switch.stderr)        # what the harness accepts
    return switch


def test_regular_files_give_the_same_outputs(tmp_path, p4c_json):
    run_regular_files("bmv2", tmp_path / "bmv2", p4c_json)
    run_regular_files("inaemu", tmp_path / "inaemu", p4c_json)
    real, mine = outputs(tmp_path / "bmv2"), outputs(tmp_path / "inaemu")
    assert mine == real
    # what they agree on, spelled out
    assert real[2] == (b"", [])
    assert real[0][0] == real[1][0] == BMV2_OUTPUT_HEADER
    assert [(tag_of(d), order_of(d)) for d in real[1][1]] == [(1, 0), (2, 1), (5, 3), (8, 6)]
    assert [(tag_of(d), order_of(d)) for d in real[0][1]] == [(6, 4), (4, 7)]
    assert (tmp_path / "bmv2" / "switch.log.txt").exists()     # BMv2 appends .txt


def run_fifos_slowly(target: str, folder: Path, program: Path) -> FilesSwitch:
    """The harness's way: FIFOs opened in port order, packets written one by one (times
    increasing), then closed; between writes, wait for what must have come out by then."""
    folder.mkdir()
    for port in PORTS:
        os.mkfifo(folder / f"pcap{port}_in.pcap")
    switch = start(target, folder, program)
    writers = {}
    try:
        for port in PORTS:
            writers[port] = open_fifo_writer(folder / f"pcap{port}_in.pcap", switch.process)
        writers.pop(2).close()                 # a port nothing arrives on

        def send(port: int, timestamp: float, egress: int, tag: int) -> None:
            writers[port].write(record_bytes(timestamp, frame(egress, tag)))
            writers[port].flush()

        # (after a packet runs, the switch waits for the next of the port it came from)
        send(0, 1, 1, 1)
        send(1, 2, 0, 2)                       # port 1 has its next: tag 1 runs
        switch.wait_outputs({1: 1})
        send(0, 3, DROP, 3)                    # tag 2 runs
        switch.wait_outputs({0: 1})
        send(1, 4, 1, 4)                       # tag 3 runs (dropped)
        send(0, 5, 0, 5)                       # tag 4 runs
        switch.wait_outputs({1: 2})
        writers.pop(1).close()                 # port 1 ended: tag 5 runs
        switch.wait_outputs({0: 2})
        writers.pop(0).close()
        status = switch.terminate()
    finally:
        for writer in writers.values():
            writer.close()
        clean_up(switch)
    assert status in (0, -15), (status, switch.stderr)
    return switch


def test_fifos_written_slowly_give_the_same_outputs(tmp_path, p4c_json):
    run_fifos_slowly("bmv2", tmp_path / "bmv2", p4c_json)
    run_fifos_slowly("inaemu", tmp_path / "inaemu", p4c_json)
    real, mine = outputs(tmp_path / "bmv2"), outputs(tmp_path / "inaemu")
    assert mine == real
    assert real[2] == (b"", [])
    assert [(tag_of(d), order_of(d)) for d in real[1][1]] == [(1, 0), (4, 3)]
    assert [(tag_of(d), order_of(d)) for d in real[0][1]] == [(2, 1), (5, 4)]
