"""The packet replication engine as configured over Thrift, on real simple_switch and on inaemu:
the same simple_switch_CLI commands (multicast nodes with ports and link aggregation groups, LAG
membership changed between packets, a node updated) and the same packets through pcap FIFOs (as
p4c's STF harness feeds them), the same copies on the same ports. SimplePreLAG sends a LAG's
copy to member number 0xFF mod (member count), counting members in port order."""

from __future__ import annotations

import os
import socket
import subprocess
import sys
import time
from pathlib import Path

import pytest

from p4switch.reference import find_toolchain
from tests.ports.filesswitch import (INPUT_HEADER, FilesSwitch, harness_arguments,
                                     open_fifo_writer, record_bytes, wait_for)

PROGRAM = Path(__file__).with_name("runtime_objects.p4")
TOOLCHAIN = find_toolchain()
pytestmark = [pytest.mark.skipif(TOOLCHAIN is None, reason="reference toolchain not installed"),
              pytest.mark.xdist_group("thrift_bmv2")]
PORTS = list(range(8))

SETUP = """table_add dmac to_group 00:00:00:00:00:01 => 1
mc_mgrp_create 1
mc_node_create 7 1 | 2 3
mc_node_associate 1 0
mc_node_create 9 6 | 3
mc_node_associate 1 1
mc_set_lag_membership 2 4 5 6
mc_set_lag_membership 3 2
"""
# between the two packets: LAG 2 loses a member, node 1 gets another port and LAG 2
CHANGE = """mc_set_lag_membership 2 5 7
mc_node_update 1 0 6 | 2 3
"""


def frame(tag: int) -> bytes:
    return bytes(5) + b"\x01" + bytes([2] * 6) + b"\x08\x00" + bytes([tag]) * 30


def cli(port: int, commands: str) -> None:
    done = subprocess.run([str(TOOLCHAIN.cli), "--thrift-port", str(port)], input=commands,
                          capture_output=True, text=True, timeout=120)
    assert "Invalid" not in done.stdout and "Error" not in done.stdout, done.stdout


def listening(port: int) -> bool:
    with socket.socket() as s:
        return s.connect_ex(("127.0.0.1", port)) == 0


def copies(command: list[str], folder: Path, json_path: Path) -> dict[int, list[int]]:
    """Port -> the tags of the copies it sent. Port 0's input is a FIFO fed packet by packet;
    the other ports' inputs are empty files, ended at once, so that each packet runs as soon as
    it is written (a switch merging its inputs waits for every open one)."""
    os.mkfifo(folder / "pcap0_in.pcap")
    for port in PORTS[1:]:
        (folder / f"pcap{port}_in.pcap").write_bytes(INPUT_HEADER)
    arguments = harness_arguments(json_path, PORTS)
    thrift = int(arguments[arguments.index("--thrift-port") + 1])
    switch = FilesSwitch([*command, *arguments], folder)
    writer = None
    try:
        writer = open_fifo_writer(folder / "pcap0_in.pcap", switch.process)
        wait_for(lambda: listening(thrift), "the Thrift port", switch.process)
        cli(thrift, SETUP)
        writer.write(record_bytes(time.time(), frame(1)))
        writer.flush()
        switch.wait_outputs({1: 1, 2: 2, 4: 1, 6: 1})     # every copy of the first packet
        cli(thrift, CHANGE)
        writer.write(record_bytes(time.time(), frame(2)))
        writer.close()
        writer = None
        switch.wait_outputs({0: 1, 1: 2, 2: 4, 6: 2, 7: 2})  # every copy of the second one
        status = switch.terminate()
    finally:
        if writer is not None:
            writer.close()
        switch.kill()
    assert status in (0, -15), switch.stderr
    out = {p: [r.data[14] for r in switch.outputs(p)] for p in PORTS}
    return {p: tags for p, tags in out.items() if tags}


def test_multicast_with_lags_copies_as_simple_switch(tmp_path):
    json_path = tmp_path / "prog.json"
    subprocess.run([str(TOOLCHAIN.p4c), "-o", str(json_path), str(PROGRAM)], check=True,
                   capture_output=True, timeout=120)
    (tmp_path / "bmv2").mkdir()
    (tmp_path / "inaemu").mkdir()
    notifications = f"ipc://{tmp_path}/notifications.ipc"
    bmv2 = copies([str(TOOLCHAIN.simple_switch), "--notifications-addr", notifications],
                  tmp_path / "bmv2", json_path)
    ours = copies([sys.executable, "-m", "inaemu", "switch", "--no-grpc"], tmp_path / "inaemu",
                  json_path)
    # packet 1: node 0 -> port 1, LAG 2 -> port 4 (255 % 3 = 0), LAG 3 -> port 2; node 1 -> 6, 2
    # packet 2: node 0 -> 1, LAG 2 (5, 7) -> 7, LAG 3 -> 2; node 1 -> 0, 6, LAG 2 -> 7, LAG 3 -> 2
    assert ours == bmv2
    assert bmv2[4] == [1] and bmv2[7] == [2, 2] and bmv2[2] == [1, 1, 2, 2]
