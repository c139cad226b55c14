"""`inaemu switch` end to end on veth pairs (root): forwarding, seeded loss, pcaps, idle CPU, exit.

The program is tests/ports/wire.json (port 1 <-> port 2 by a conditional; no table entries), so
the test needs neither /work/shared nor a controller. Frames are sent and received with raw
sockets inside a network namespace; the switch runs as a real `python -m inaemu switch` process.
"""

from __future__ import annotations

import json
import os
import queue
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest

from p4switch.ports.impairment import LinkImpairment, PortImpairment
from p4switch.ports.pcap import read_pcap

from .vethnet import VethNet, interface_exists, receive_frames

PROJECT_ROOT = Path(__file__).resolve().parents[2]
WIRE_JSON = Path(__file__).with_name("wire.json")
ETHER_TYPE = 0x88B5
LOSS, SEED = 0.3, 11


def frame(seq: int, src: int) -> bytes:
    header = bytes.fromhex("ffffffffffff") + bytes([2, 0, 0, 0, 0, src])
    return header + ETHER_TYPE.to_bytes(2, "big") + seq.to_bytes(4, "big") + bytes(46)


class SwitchProcess:
    """`inaemu switch` as a child process whose stdout lines are read by a thread."""

    def __init__(self, *argv: str) -> None:
        self.process = subprocess.Popen(
            [sys.executable, "-m", "inaemu", "switch", *argv], cwd=PROJECT_ROOT,
            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        self.lines: queue.Queue[str | None] = queue.Queue()
        threading.Thread(target=self._read, daemon=True).start()

    def _read(self) -> None:
        for line in self.process.stdout:
            self.lines.put(line.rstrip("\n"))
        self.lines.put(None)

    def first_line(self, timeout: float = 60.0) -> str | None:
        try:
            return self.lines.get(timeout=timeout)
        except queue.Empty:
            return None

    def rest(self) -> list[str]:
        out = []
        while (line := self.lines.get(timeout=10)) is not None:
            out.append(line)
        return out

    def cpu_seconds(self) -> float:
        with open(f"/proc/{self.process.pid}/stat") as stat:
            fields = stat.read().rsplit(")", 1)[1].split()
        return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")

    def kill(self) -> None:
        if self.process.poll() is None:
            self.process.kill()
            self.process.wait(10)


def predicted_survivors(sent: list[bytes], direction: str) -> list[bytes]:
    model = PortImpairment(LinkImpairment(loss=LOSS), seed=SEED, port=2)
    draw = model.drop_on_egress if direction == "out" else model.drop_on_ingress
    return [data for data in sent if not draw()]


@pytest.mark.root
def test_switch_forwards_loses_as_seeded_captures_idles_and_exits(tmp_path):
    net = VethNet(2)
    s1, s2 = net.switch_ends[1], net.switch_ends[2]
    switch = None
    try:
        h1, h2 = net.host_socket(1), net.host_socket(2)
        switch = SwitchProcess(str(WIRE_JSON), "--no-grpc", "-i", f"1@{s1}", "-i", f"2@{s2}",
                               "--pcap", str(tmp_path), "--loss", f"2:{LOSS}",
                               "--seed", str(SEED), "--log-file", str(tmp_path / "sw.log"))
        ready = switch.first_line()
        assert ready == "inaemu switch ready: device 0, 2 ports, grpc off", \
            switch.process.stderr.read() if ready is None else ready

        forth = [frame(i, src=1) for i in range(200)]
        for data in forth:
            h1.send(data)
        forth_expected = predicted_survivors(forth, "out")     # port 2 egress loss
        # wait for as many as predicted (generous quiet time for a loaded machine); the summary
        # and the pcaps below show that no more than those left
        assert receive_frames(h2, ETHER_TYPE, expected=len(forth_expected),
                              quiet_s=3.0) == forth_expected

        back = [frame(1000 + i, src=2) for i in range(200)]
        for data in back:
            h2.send(data)
        back_expected = predicted_survivors(back, "in")         # port 2 ingress loss
        assert receive_frames(h1, ETHER_TYPE, expected=len(back_expected),
                              quiet_s=3.0) == back_expected
        assert 0 < len(forth_expected) < 200 and 0 < len(back_expected) < 200

        before = switch.cpu_seconds()
        time.sleep(2.0)
        idle_cpu = switch.cpu_seconds() - before
        assert idle_cpu < 0.2, f"idle switch used {idle_cpu:.2f} s of CPU in 2 s"

        switch.process.send_signal(signal.SIGTERM)
        assert switch.process.wait(timeout=20) == 0, switch.process.stderr.read()
        summary = switch.rest()
        h1.close()
        h2.close()
    finally:
        if switch is not None:
            switch.kill()
        net.close()

    assert summary == [
        f"inaemu switch: port 1 ({s1}): rx 200 tx {len(back_expected)} lost-in 0 lost-out 0",
        f"inaemu switch: port 2 ({s2}): rx 200 tx {len(forth_expected)} "
        f"lost-in {200 - len(back_expected)} lost-out {200 - len(forth_expected)}",
        "inaemu switch: packet code: Python (a per-packet trace runs the traced Python code)",
    ]
    log = (tmp_path / "sw.log").read_text()
    assert log.count("packet in: port 1,") == 200
    assert log.count("packet in: port 2,") == len(back_expected)   # lost before the pipeline
    assert log.count("packet out: port 2,") == 200     # egress loss happens after the pipeline
    capture = {name: [r.data for r in read_pcap(tmp_path / f"{name}.pcap")]
               for name in (f"{s1}_in", f"{s1}_out", f"{s2}_in", f"{s2}_out")}
    assert capture[f"{s1}_in"] == forth
    assert capture[f"{s2}_out"] == forth_expected
    assert capture[f"{s2}_in"] == back                 # ingress losses still arrived
    assert capture[f"{s1}_out"] == back_expected
    assert not interface_exists(s1) and not interface_exists(s2)
    assert net.namespace not in subprocess.run(["ip", "netns", "list"], capture_output=True,
                                               text=True).stdout
    assert switch.process.poll() is not None


@pytest.mark.root
def test_sigint_exits_cleanly_without_a_program():
    net = VethNet(1)
    switch = None
    try:
        switch = SwitchProcess("--no-p4", "--no-grpc", "-i", f"3@{net.switch_ends[1]}")
        assert switch.first_line() == "inaemu switch ready: device 0, 1 port, grpc off"
        h1 = net.host_socket(1)
        h1.send(frame(1, src=1))      # no program: dropped
        time.sleep(0.2)
        switch.process.send_signal(signal.SIGINT)
        assert switch.process.wait(timeout=20) == 0, switch.process.stderr.read()
        assert switch.rest() == [
            f"inaemu switch: port 3 ({net.switch_ends[1]}): rx 1 tx 0 lost-in 0 lost-out 0"]
        assert switch.process.stderr.read() == ""
        h1.close()
    finally:
        if switch is not None:
            switch.kill()
        net.close()


@pytest.mark.root
def test_failed_p4_assert_stops_the_switch_with_one_error_line(tmp_path):
    program = json.loads(WIRE_JSON.read_text())
    action = next(a for a in program["actions"] if a["name"] == "wire29")   # port 2 -> 1
    action["primitives"].append({"op": "assert", "parameters": [{"type": "expression", "value": {
        "op": "==", "left": {"type": "field", "value": ["standard_metadata", "ingress_port"]},
        "right": {"type": "hexstr", "value": "0x0001"}}}]})   # false for every port-2 packet
    path = tmp_path / "assert_wire.json"
    path.write_text(json.dumps(program))
    net = VethNet(2)
    switch = None
    try:
        switch = SwitchProcess(str(path), "--no-grpc", "-i", f"1@{net.switch_ends[1]}",
                               "-i", f"2@{net.switch_ends[2]}")
        assert switch.first_line() == "inaemu switch ready: device 0, 2 ports, grpc off"
        h2 = net.host_socket(2)
        h2.send(frame(1, src=2))
        assert switch.process.wait(timeout=20) == 1
        error = switch.process.stderr.read().strip().splitlines()
        assert len(error) == 1 and error[0].startswith(
            "inaemu switch: error: P4 assertion failed"), error
        h2.close()
    finally:
        if switch is not None:
            switch.kill()
        net.close()
