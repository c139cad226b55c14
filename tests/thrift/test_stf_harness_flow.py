"""p4c's STF harness (backends/bmv2/bmv2stf.py) steps, Thrift included, on the `simple_switch`
shim: the program compiled by the `p4c-bm2-ss` shim, the switch started on pcap FIFOs with the
harness's command line, BMv2's own simple_switch_CLI adding the STF's entries once the Thrift
port listens, packets written, FIFOs closed, SIGTERM, outputs compared per port.
(scripts/p4c_harness.py runs the harness itself over p4c's samples.)"""

from __future__ import annotations

import glob
import os
import socket
import subprocess
import sys
import time
from pathlib import Path

import pytest

from p4switch.reference import find_toolchain
from tests.ports.filesswitch import (FilesSwitch, harness_arguments, open_fifo_writer,
                                     output_records, record_bytes, wait_for)

PROGRAM = Path(__file__).with_name("runtime_objects.p4")
TOOLCHAIN = find_toolchain()
pytestmark = pytest.mark.skipif(TOOLCHAIN is None, reason="reference toolchain not installed")


def eth(dst_last: int, tag: int) -> bytes:
    return bytes(5) + bytes([dst_last]) + bytes([2] * 6) + b"\x08\x00" + bytes([tag]) * 30


def listening(port: int) -> bool:
    with socket.socket() as s:
        return s.connect_ex(("localhost", port)) == 0


def test_entries_added_by_simple_switch_cli_steer_the_harness_packets(tmp_path):
    shims = tmp_path / "shims"
    done = subprocess.run([sys.executable, "-m", "inaemu", "shims", str(shims)],
                          capture_output=True, text=True)
    assert done.returncode == 0, done.stderr
    folder = tmp_path / "run"
    folder.mkdir()
    done = subprocess.run([str(shims / "p4c-bm2-ss"), "-o", "prog.json", str(PROGRAM)],
                          cwd=folder, capture_output=True, text=True)
    assert done.returncode == 0, done.stderr
    for port in (0, 1, 2):
        os.mkfifo(folder / f"pcap{port}_in.pcap")
    arguments = harness_arguments(folder / "prog.json", [0, 1, 2])
    thrift_port = int(arguments[arguments.index("--thrift-port") + 1])
    switch = FilesSwitch([str(shims / "simple_switch"), *arguments], folder)
    writers = {}
    try:
        for port in (0, 1, 2):
            writers[port] = open_fifo_writer(folder / f"pcap{port}_in.pcap", switch.process)
        wait_for(lambda: listening(thrift_port), "the Thrift port", switch.process)
        cli = subprocess.run([str(TOOLCHAIN.cli), "--thrift-port", str(thrift_port)],
                             input="table_add dmac to_port_counted 00:00:00:00:00:01 => 2\n"
                                   "table_add dmac to_port_counted 00:00:00:00:00:02 => 1\n",
                             capture_output=True, text=True, timeout=120)
        assert cli.stdout.count("Entry has been added with handle") == 2, cli.stdout
        for port, data in ((0, eth(1, 1)), (1, eth(2, 2)), (0, eth(3, 3)), (2, eth(1, 4))):
            writers[port].write(record_bytes(time.time(), data))
            writers[port].flush()
        for writer in writers.values():
            writer.close()
        writers.clear()
        switch.wait_outputs({1: 1, 2: 2})
        status = switch.terminate()
    finally:
        for writer in writers.values():
            writer.close()
        switch.kill()
    assert status in (0, -15), switch.stderr
    received = {int(os.path.basename(n)[4:].rsplit("_", 1)[0]):
                [r.data[14] for r in output_records(Path(n))]
                for n in glob.glob(str(folder / "pcap*_out.pcap"))}
    # dst ...01 -> port 2 (tags 1 and 4), dst ...02 -> port 1 (tag 2), dst ...03 -> default drop
    assert received == {0: [], 1: [2], 2: [1, 4]}
