"""The `simple_switch` shim (`inaemu shims DIR`) where p4c's STF harness (backends/bmv2/
bmv2stf.py) runs real simple_switch: its command line, its FIFOs opened in port order and fed
packet by packet, then closed, SIGTERM, the outputs read by glob and compared per port. The
harness's Thrift steps (table entries through simple_switch_CLI) are tests/thrift/
test_stf_harness_flow.py's."""

from __future__ import annotations

import glob
import os
import subprocess
import sys
import time
from pathlib import Path

from tests.ports.filesswitch import (DROP, PROGRAM, FilesSwitch, frame, harness_arguments,
                                     open_fifo_writer, output_records, record_bytes)
from topologies.mininet_switch import reference_tool

INAEMU = [sys.executable, "-m", "inaemu"]


def write_shims(directory: Path) -> None:
    done = subprocess.run([*INAEMU, "shims", str(directory)], capture_output=True, text=True)
    assert done.returncode == 0, done.stderr
    assert "simple_switch -> inaemu switch --no-grpc" in done.stdout


def test_the_stf_harness_steps_run_on_the_simple_switch_shim(tmp_path):
    shims = tmp_path / "shims"
    write_shims(shims)
    folder = tmp_path / "run"
    folder.mkdir()
    done = subprocess.run([str(shims / "p4c-bm2-ss"), "--p4v", "16", "-o", "prog.json",
                           str(PROGRAM)], cwd=folder, capture_output=True, text=True)
    assert done.returncode == 0, done.stderr
    # the STF: packet 0 -> expect 1; packet 1 -> expect 0; a drop; packet 0 -> expect 1 again
    stf = [(0, frame(1, 1)), (1, frame(0, 2)), (1, frame(DROP, 3)), (0, frame(1, 4))]
    for port in (0, 1):                      # generate_model_inputs: a FIFO per port
        os.mkfifo(folder / f"pcap{port}_in.pcap")
    switch = FilesSwitch([str(shims / "simple_switch"),
                          *harness_arguments(folder / "prog.json", [0, 1])], folder)
    writers = {}
    try:
        for port in (0, 1):                  # sorted, as the harness (else both would block)
            writers[port] = open_fifo_writer(folder / f"pcap{port}_in.pcap", switch.process)
        for port, data in stf:
            writers[port].write(record_bytes(time.time(), data))
            writers[port].flush()
        for writer in writers.values():
            writer.close()
        writers.clear()
        switch.wait_outputs({0: 1, 1: 2})    # (the harness sleeps 2 s here)
        status = switch.terminate()
    finally:
        for writer in writers.values():
            writer.close()
        switch.kill()
    assert status in (0, -15), switch.stderr      # the harness's rule
    assert switch.stdout[0].startswith("inaemu switch ready: device 123, 2 ports, grpc off, "
                                       "thrift ")
    # checkOutputs: every pcapN_out.pcap by glob, an empty file is no packets
    received = {}
    for name in glob.glob(str(folder / "pcap*_out.pcap")):
        port = int(os.path.basename(name).removeprefix("pcap").rsplit("_", 1)[0])
        received[port] = [record.data[:6] + record.data[14:] for record in
                          output_records(Path(name))]     # the stamped MAC and type aside
    assert received == {0: [frame(0, 2)[:6] + frame(0, 2)[14:]],
                        1: [frame(1, 1)[:6] + frame(1, 1)[14:],
                            frame(1, 4)[:6] + frame(1, 4)[14:]]}


def test_the_simple_switch_shim_is_not_taken_for_the_real_one(tmp_path, monkeypatch):
    write_shims(tmp_path)
    monkeypatch.setenv("PATH", str(tmp_path))
    monkeypatch.setenv("INAEMU_P4REF", str(tmp_path / "none"))
    monkeypatch.setattr("topologies.mininet_switch.REFERENCE_ROOT", str(tmp_path / "none"))
    assert reference_tool("simple_switch") is None
    text = (tmp_path / "simple_switch").read_text()
    assert text.endswith(' switch --no-grpc "$@"\n')
