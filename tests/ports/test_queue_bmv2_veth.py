"""Egress queues against the oracle: real simple_switch and `inaemu switch` on veths in a
network namespace of this test run, the same p4c-compiled programs and the same traffic.
They must agree in shape: rising enq_qdepth on a port drained at 200 pps, deq_qdepth back to 0
at the end, and ECN marks (tests/p4/ecn.p4) from the same point of a burst on.

Each burst reaches the switch whole: the switch is stopped (SIGSTOP) while the burst is sent,
the test sees every frame arrive on the switch's ingress veth, and only then is the switch
continued. So the queue depths follow from the queue's semantics (arrival order, capacity,
rate), not from whether a sender on a loaded machine outpaces a 5 ms drain: sending paced
by the sender's own scheduling let the queue drain mid-burst under load (enq_qdepth peaking
at 8, the last packet waiting 58 ms). A burst fits the switch's ingress while it is stopped
and its egress queue, so the receiver knows how many frames to wait for (no quiet-time timeout
that a stall could cut short).
"""

from __future__ import annotations

import contextlib
import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from tests.ports.test_queue_ecn_mininet import ecn_program

REF = Path("/opt/p4ref/bin")
HERE = Path(__file__).parent
NS = f"qdbm{os.getpid()}"        # one namespace per test run: concurrent runs never share it
THRIFT_PORT = "9391"             # inside that namespace
INAEMU = str(Path(sys.executable).with_name("inaemu"))
BURST = 30    # frames: a stopped simple_switch keeps 32 in its capture ring (measured), and
              # the egress queue holds 64: none is dropped or lost, all are counted out
DEADLINE_S = 60                  # a failure guard only: a healthy run needs well under 1 s

pytestmark = [pytest.mark.root,
              pytest.mark.skipif(not (REF / "simple_switch").exists(),
                                 reason="real BMv2 (/opt/p4ref) not installed")]

# argv: kind ("tele" or "ecn") and burst size. Sends the burst into port 1 (qdbmA0 -> qdbmA1),
# waits until a tap on qdbmA1 (the switch's ingress veth) has seen all of it, says "queued",
# then prints what port 2 (qdbmB1 -> qdbmB0) emitted until the whole burst came out.
TRAFFIC = """
import socket, struct, sys, time
kind, count = sys.argv[1], int(sys.argv[2])
def bound(name):
    s = socket.socket(socket.AF_PACKET, socket.SOCK_RAW, socket.htons(3))
    s.bind((name, 0))
    return s
tx, tap, rx = bound("qdbmA0"), bound("qdbmA1"), bound("qdbmB0")
eth = bytes.fromhex("000000099999" "000000090001" "0800")
def frame(i):
    if kind == "tele":    # port 2, priority 0, zeroed metadata, then the sequence number
        return bytes([2, 0]) + bytes(22) + i.to_bytes(4, "big") + bytes(32)
    ip = bytes([0x45, 1, 0, 24, 0, 1, 0, 0, 64, 17, 0, 0, 10, 9, 0, 1, 10, 9, 0, 2])
    return eth + ip + i.to_bytes(4, "big") + bytes(20)
def ours(d):
    return d[0] == 2 and len(d) >= 28 if kind == "tele" else d[12:14] == bytes([8, 0])
def collect(sock, n):
    got, end = [], time.monotonic() + %d
    while len(got) < n and time.monotonic() < end:
        sock.settimeout(max(0.01, end - time.monotonic()))
        try:
            d = sock.recv(2048)
        except socket.timeout:
            break
        if ours(d):
            got.append(d)
    return got
for i in range(count):
    tx.send(frame(i))
print("queued" if len(collect(tap, count)) == count else "lost on the way in", flush=True)
for d in collect(rx, count):
    if kind == "tele":
        print(struct.unpack_from("!I", d, 24)[0], *struct.unpack_from("!IIII", d, 2))
    else:
        print(int.from_bytes(d[34:38], "big"), d[15])
""" % DEADLINE_S


def run(*args: str, check: bool = True) -> subprocess.CompletedProcess:
    return subprocess.run(list(args), check=check, capture_output=True, text=True, timeout=60)


@pytest.fixture
def namespace():
    run("ip", "netns", "del", NS, check=False)     # left by a killed run whose pid was ours
    run("ip", "netns", "add", NS)
    try:
        inside = ["ip", "netns", "exec", NS]
        run(*inside, "ip", "link", "set", "lo", "up")
        for a, b in (("qdbmA0", "qdbmA1"), ("qdbmB0", "qdbmB1")):
            run(*inside, "ip", "link", "add", a, "type", "veth", "peer", "name", b)
            for name in (a, b):
                run(*inside, "sysctl", "-qw", f"net.ipv6.conf.{name}.disable_ipv6=1")
                run(*inside, "ip", "link", "set", name, "up")
        yield inside
    finally:
        run("ip", "netns", "del", NS, check=False)


def start_switch(inside: list[str], target: str, program: Path) -> subprocess.Popen:
    """`target` on the namespace's veths with port 2 drained at 200 pps, once it is ready: its
    ports are open (inaemu's ready line; simple_switch adds its interfaces before its Thrift
    server starts, and the rate is set through that server)."""
    ports = ["-i", "1@qdbmA1", "-i", "2@qdbmB1"]
    if target == "inaemu":
        switch = subprocess.Popen([*inside, INAEMU, "switch", str(program), *ports, "--no-grpc",
                                   "--queue-rate", "2:200"], stdout=subprocess.PIPE, text=True)
        assert switch.stdout.readline().startswith("inaemu switch ready")
        return switch
    # its own notifications socket: the default (/tmp/bmv2-0-notifications.ipc) is taken
    # by any other simple_switch of device 0 on this machine, and then this one exits
    notify = f"ipc://{program.parent}/bmv2-notifications.ipc"
    switch = subprocess.Popen([*inside, str(REF / "simple_switch"), "--thrift-port",
                               THRIFT_PORT, "--notifications-addr", notify, *ports,
                               str(program)],
                              stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    # until its Thrift server answers: a deadline, not a count of tries (a loaded
    # machine starts simple_switch slowly), and a switch that died says so
    deadline = time.monotonic() + 90
    while True:
        cli = subprocess.run([*inside, str(REF / "simple_switch_CLI"), "--thrift-port",
                              THRIFT_PORT], input="set_queue_rate 200 2\n",
                             capture_output=True, text=True, timeout=30)
        if cli.returncode == 0:
            return switch
        assert switch.poll() is None, f"simple_switch exited ({switch.returncode})"
        assert time.monotonic() < deadline, cli.stdout + cli.stderr
        time.sleep(0.2)


def through(inside: list[str], target: str, program: Path, kind: str, count: int) -> list[str]:
    """Lines the traffic script printed for a `count`-frame burst through `target`, which is
    stopped from before the first frame is sent until all of them have reached its veth."""
    switch = start_switch(inside, target, program)
    try:
        # `ip netns exec` execs the switch: this pid is the switch itself
        os.kill(switch.pid, signal.SIGSTOP)
        try:
            # the parent hears of the stop once every thread of the switch has stopped
            _, status = os.waitpid(switch.pid, os.WUNTRACED)
            assert os.WIFSTOPPED(status), f"{target} exited before the burst ({status:#x})"
            traffic = subprocess.Popen([*inside, sys.executable, "-c", TRAFFIC, kind,
                                        str(count)], stdout=subprocess.PIPE, text=True)
            queued = traffic.stdout.readline()
        finally:
            with contextlib.suppress(ProcessLookupError):     # gone: the assert above says so
                os.kill(switch.pid, signal.SIGCONT)
        out, _ = traffic.communicate(timeout=DEADLINE_S + 30)
        assert queued == "queued\n", (target, queued)
        assert switch.poll() is None, f"{target} exited ({switch.returncode})"
        return out.split("\n")[:-1]
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
        rows = [tuple(map(int, line.split())) for line in
                through(namespace, target, telemetry, "tele", BURST)]
        # one FIFO, nothing dropped: every packet out, in the order sent
        assert [r[0] for r in rows] == list(range(BURST)), (target, rows)
        enq, delta, deq = [r[2] for r in rows], [r[3] for r in rows], [r[4] for r in rows]
        # an arrival adds one packet to the queue; departures only take
        assert all(b <= a + 1 for a, b in zip(enq, enq[1:])), (target, enq)
        assert enq[0] == 0 and max(enq) >= 10 and enq[-1] >= max(enq) - 2, (target, enq)
        assert deq[-1] == 0 and max(deq) >= 10, (target, deq)
        assert delta[-1] > 100_000, (target, delta)      # the last waited > 100 ms (5 ms each)
        rows = [tuple(map(int, line.split())) for line in
                through(namespace, target, ecn, "ecn", BURST)]
        assert [r[0] for r in rows] == list(range(BURST)), (target, rows)
        marks = [r[1] for r in rows]
        first = marks.index(3)
        assert 10 <= first <= 14 and set(marks[:first]) == {1}, (target, marks)
        assert set(marks[first:]) == {3} and len(marks) - first >= 10, (target, marks)
