"""BMv2's own simple_switch_CLI, one session of ~130 commands (tests/thrift/cli_commands.txt),
against real simple_switch and against `inaemu switch --thrift-port`: the transcripts are the
same, but for the elapsed time, the port and the notifications socket `switch_info` shows.

Every table kind, indirect tables and selectors, counters, meters, registers, the multicast
engine, clone sessions, queues and reset_state, with the errors a user meets (duplicates,
expired handles, const defaults, members in use, bad indices). inaemu runs p4c's JSON (the same
input as BMv2) and its own compiler's.
"""

from __future__ import annotations

import re
import socket
import subprocess
import sys
import time
from pathlib import Path

import pytest

from p4switch.compiler import compile_file
from p4switch.reference import find_toolchain
from p4switch.reference.bmv2 import free_tcp_port

HERE = Path(__file__).parent
PROGRAM = HERE / "runtime_objects.p4"
COMMANDS = HERE / "cli_commands.txt"
TOOLCHAIN = find_toolchain()
needs_toolchain = pytest.mark.skipif(TOOLCHAIN is None, reason="reference toolchain not installed")
pytestmark = [needs_toolchain, pytest.mark.xdist_group("thrift_cli")]

ELAPSED = re.compile(r"^RuntimeCmd: \d{4,}$", re.MULTILINE)     # get_time_elapsed, in us
PORT = re.compile(r"^thrift_port\s+: \d+$", re.MULTILINE)
NOTIFICATIONS = re.compile(r"^notifications_socket\s+: \S+$", re.MULTILINE)


def transcript(port: int) -> str:
    with COMMANDS.open() as commands:
        done = subprocess.run([str(TOOLCHAIN.cli), "--thrift-port", str(port)], stdin=commands,
                              capture_output=True, text=True, timeout=120)
    text = done.stdout + done.stderr
    assert "Traceback" not in text, text[-3000:]
    text = NOTIFICATIONS.sub("notifications_socket: S", text)     # set for BMv2 below
    return PORT.sub("thrift_port: N", ELAPSED.sub("RuntimeCmd: <elapsed>", text))


def listening(proc: subprocess.Popen, port: int, deadline: float) -> bool:
    while time.monotonic() < deadline and proc.poll() is None:
        with socket.socket() as s:
            if s.connect_ex(("127.0.0.1", port)) == 0:
                return True
        time.sleep(0.05)
    return False


@pytest.fixture(scope="module")
def p4c_json(tmp_path_factory) -> Path:
    out = tmp_path_factory.mktemp("p4c") / "runtime_objects.json"
    subprocess.run([str(TOOLCHAIN.p4c), "-o", str(out), str(PROGRAM)], check=True,
                   capture_output=True, timeout=120)
    return out


@pytest.fixture(scope="module")
def bmv2_transcript(p4c_json) -> str:
    # device 3, as inaemu below; the notifications socket of a device id is machine-wide
    notifications = f"ipc://{p4c_json.parent}/notifications.ipc"
    for _ in range(3):                         # a port taken meanwhile: try another
        port = free_tcp_port()
        proc = subprocess.Popen([str(TOOLCHAIN.simple_switch), "--thrift-port", str(port),
                                 "--device-id", "3", "--notifications-addr", notifications,
                                 str(p4c_json)],
                                stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        try:
            if listening(proc, port, time.monotonic() + 60):
                return transcript(port)
        finally:
            proc.terminate()
            proc.wait(timeout=10)
    pytest.fail("simple_switch did not serve Thrift")


def inaemu_transcript(json_path: Path) -> str:
    proc = subprocess.Popen([sys.executable, "-m", "inaemu", "switch", str(json_path),
                             "--no-grpc", "--thrift-port", "0", "--device-id", "3"],
                            stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True)
    try:
        ready = proc.stdout.readline()
        match = re.search(r"thrift (\d+)$", ready.strip())
        assert match, ready
        return transcript(int(match.group(1)))
    finally:
        proc.terminate()
        assert proc.wait(timeout=30) == 0


def test_the_cli_session_on_p4cs_json_reads_as_on_simple_switch(bmv2_transcript, p4c_json):
    assert "Entry has been added with handle 16777217" in bmv2_transcript   # the session ran
    assert inaemu_transcript(p4c_json) == bmv2_transcript


def test_the_cli_session_on_inaemus_json_reads_as_on_simple_switch(bmv2_transcript, tmp_path):
    out = tmp_path / "runtime_objects.json"
    import json
    out.write_text(json.dumps(compile_file(PROGRAM).bmv2))
    assert inaemu_transcript(out) == bmv2_transcript
