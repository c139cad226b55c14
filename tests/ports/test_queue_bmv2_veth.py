"""Egress queues against the oracle: real simple_switch and `inaemu switch` on veths in a
network namespace of this test ("qdbm"), the same p4c-compiled programs and the same traffic.
They must agree in shape: rising enq_qdepth on a port drained at 200 pps, deq_qdepth back to 0
at the end, and ECN marks (tests/p4/ecn.p4) from the same point of a burst on."""

from __future__ import annotations

import json
import subprocess
import sys
import time
from pathlib import Path

import pytest

from tests.ports.test_queue_ecn_mininet import ecn_program

REF = Path("/opt/p4ref/bin")
HERE = Path(__file__).parent
NS = "qdbm"
THRIFT_PORT = "9391"
INAEMU = str(Path(sys.executable).with_name("inaemu"))

pytestmark = [pytest.mark.root,
              pytest.mark.skipif(not (REF / "simple_switch").exists(),
                                 reason="real BMv2 (/opt/p4ref) not installed")]

TELEMETRY_TRAFFIC = """
import socket, struct, time
tx = socket.socket(socket.AF_PACKET, socket.SOCK_RAW); tx.bind(("qdbmA0", 0))
rx = socket.socket(socket.AF_PACKET, socket.SOCK_RAW, socket.htons(3)); rx.bind(("qdbmB0", 0))
rx.settimeout(0.5)
for i in range(40):
    tx.send(bytes([2, 0]) + bytes(58))
    time.sleep(0.001)
while True:
    try:
        d = rx.recv(2048)
    except socket.timeout:
        break
    if d[0] == 2 and len(d) >= 24:
        print(*struct.unpack_from("!IIII", d, 2))
"""

ECN_TRAFFIC = """
import socket
tx = socket.socket(socket.AF_PACKET, socket.SOCK_RAW); tx.bind(("qdbmA0", 0))
rx = socket.socket(socket.AF_PACKET, socket.SOCK_RAW, socket.htons(3)); rx.bind(("qdbmB0", 0))
rx.settimeout(0.5)
eth = bytes.fromhex("000000099999" "000000090001" "0800")
for i in range(100):
    ip = bytes([0x45, 1, 0, 24, 0, 1, 0, 0, 64, 17, 0, 0, 10, 9, 0, 1, 10, 9, 0, 2])
    tx.send(eth + ip + i.to_bytes(4, "big") + bytes(20))
while True:
    try:
        d = rx.recv(2048)
    except socket.timeout:
        break
    if d[12:14] == bytes([8, 0]):
        print(d[15])
"""


def run(*args: str, check: bool = True) -> subprocess.CompletedProcess:
    return subprocess.run(list(args), check=check, capture_output=True, text=True, timeout=60)


@pytest.fixture
def namespace():
    run("ip", "netns", "del", NS, check=False)
    run("ip", "netns", "add", NS)
    inside = ["ip", "netns", "exec", NS]
    run(*inside, "ip", "link", "set", "lo", "up")
    for a, b in (("qdbmA0", "qdbmA1"), ("qdbmB0", "qdbmB1")):
        run(*inside, "ip", "link", "add", a, "type", "veth", "peer", "name", b)
        for name in (a, b):
            run(*inside, "sysctl", "-qw", f"net.ipv6.conf.{name}.disable_ipv6=1")
            run(*inside, "ip", "link", "set", name, "up")
    yield inside
    run("ip", "netns", "del", NS, check=False)


def through(inside: list[str], target: str, program: Path, traffic: str) -> list[str]:
    """Start `target` on the namespace's veths with port 2 drained at 200 pps, run `traffic`
    (a script sending on port 1 and printing what port 2 emitted), stop the switch."""
    ports = ["-i", "1@qdbmA1", "-i", "2@qdbmB1"]
    if target == "bmv2":
        # its own notifications socket: the default (/tmp/bmv2-0-notifications.ipc) is taken
        # by any other simple_switch of device 0 on this machine, and then this one exits
        notify = f"ipc://{program.parent}/bmv2-notifications.ipc"
        switch = subprocess.Popen([*inside, str(REF / "simple_switch"), "--thrift-port",
                                   THRIFT_PORT, "--notifications-addr", notify, *ports,
                                   str(program)],
                                  stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    else:
        switch = subprocess.Popen([*inside, INAEMU, "switch", str(program), *ports, "--no-grpc",
                                   "--queue-rate", "2:200"], stdout=subprocess.PIPE, text=True)
    try:
        if target == "bmv2":
            # until its Thrift server answers: a deadline, not a count of tries (a loaded
            # machine starts simple_switch slowly), and a switch that died says so
            deadline = time.monotonic() + 90
            while True:
                cli = subprocess.run([*inside, str(REF / "simple_switch_CLI"), "--thrift-port",
                                      THRIFT_PORT], input="set_queue_rate 200 2\n",
                                     capture_output=True, text=True, timeout=30)
                if cli.returncode == 0:
                    break
                assert switch.poll() is None, f"simple_switch exited ({switch.returncode})"
                assert time.monotonic() < deadline, cli.stdout + cli.stderr
                time.sleep(0.2)
        else:
            assert switch.stdout.readline().startswith("inaemu switch ready")
        time.sleep(0.3)
        sent = run(*inside, sys.executable, "-c", traffic)
        return sent.stdout.split("\n")[:-1]
    finally:
        switch.terminate()
        switch.wait(timeout=20)


def test_queue_metadata_and_ecn_marks_agree_with_simple_switch(namespace, tmp_path):
    telemetry = tmp_path / "tele.json"
    ecn = tmp_path / "ecn.json"
    compiled = run(str(REF / "p4c-bm2-ss"), "-o", str(telemetry),
                   str(HERE.parent / "runtime" / "queue_telemetry.p4"))
    assert compiled.returncode == 0
    reference_ecn = tmp_path / "ecn_p4c.json"
    run(str(REF / "p4c-bm2-ss"), "-o", str(reference_ecn), str(HERE.parent / "p4" / "ecn.p4"))
    ecn.write_text(json.dumps(ecn_program(10, json.loads(reference_ecn.read_text()))))
    for target in ("bmv2", "inaemu"):
        rows = [tuple(map(int, line.split()))
                for line in through(namespace, target, telemetry, TELEMETRY_TRAFFIC)]
        enq, delta, deq = [r[1] for r in rows], [r[2] for r in rows], [r[3] for r in rows]
        assert len(rows) == 40, target
        assert enq[0] == 0 and max(enq) >= 10 and enq[-1] >= max(enq) - 2, (target, enq)
        assert deq[-1] == 0 and max(deq) >= 10, (target, deq)
        assert delta[-1] > 100_000, (target, delta)      # the last waited > 100 ms (5 ms each)
        marks = [int(line) for line in through(namespace, target, ecn, ECN_TRAFFIC)]
        first = marks.index(3)
        assert 10 <= first <= 14 and set(marks[:first]) == {1}, (target, marks)
        assert set(marks[first:]) == {3} and len(marks) - first >= 10, (target, marks)
