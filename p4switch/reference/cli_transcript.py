"""A simple_switch_CLI session, run against real simple_switch and against `inaemu switch`.

BMv2's own CLI reads a command file (as `simple_switch_CLI < s1-commands.txt` does in
p4-learning's and many courses' set-ups) against a switch that loaded a BMv2 JSON and no ports;
what it prints is the transcript. `normalize` takes out what may differ between two correct
runs (the elapsed time `get_time_elapsed` prints, the port and notifications socket
`switch_info` shows). Used by tests/thrift/test_cli_transcript.py and scripts/cli_transcripts.py.
"""

from __future__ import annotations

import re
import socket
import subprocess
import sys
import tempfile
import time
from contextlib import contextmanager
from pathlib import Path

from .bmv2 import free_tcp_port
from .toolchain import Toolchain

ELAPSED = re.compile(r"^RuntimeCmd: \d{4,}$", re.MULTILINE)     # get_time_elapsed, in us
PORT = re.compile(r"^thrift_port\s+: \d+$", re.MULTILINE)
NOTIFICATIONS = re.compile(r"^notifications_socket\s+: \S+$", re.MULTILINE)
START_S = 60.0


class TranscriptError(Exception):
    """A switch that would not start, or a CLI that crashed (its traceback in the message)."""


def normalize(text: str) -> str:
    text = NOTIFICATIONS.sub("notifications_socket: S", text)
    return PORT.sub("thrift_port: N", ELAPSED.sub("RuntimeCmd: <elapsed>", text))


def run_cli(toolchain: Toolchain, port: int, commands: str, cwd: Path | None = None,
            timeout_s: float = 300.0) -> str:
    """The CLI's output for `commands` (its stdin), normalized."""
    done = subprocess.run([str(toolchain.cli), "--thrift-port", str(port)], input=commands,
                          capture_output=True, text=True, timeout=timeout_s, cwd=cwd)
    text = done.stdout + done.stderr
    if "Traceback" in text:
        raise TranscriptError(f"simple_switch_CLI crashed:\n{text[-3000:]}")
    return normalize(text)


def _listening(proc: subprocess.Popen, port: int, deadline: float) -> bool:
    while time.monotonic() < deadline and proc.poll() is None:
        with socket.socket() as s:
            if s.connect_ex(("127.0.0.1", port)) == 0:
                return True
        time.sleep(0.05)
    return False


@contextmanager
def serve_bmv2(toolchain: Toolchain, json_path: Path, device_id: int = 3):
    """Real simple_switch running `json_path` with no ports; yields its Thrift port."""
    with tempfile.TemporaryDirectory(prefix="cli-transcript-") as scratch:
        # the notifications socket of a device id is machine-wide: one of our own
        notifications = f"ipc://{scratch}/notifications.ipc"
        for _ in range(3):                     # a port taken meanwhile: try another
            port = free_tcp_port()
            proc = subprocess.Popen([str(toolchain.simple_switch), "--thrift-port", str(port),
                                     "--device-id", str(device_id), "--notifications-addr",
                                     notifications, str(json_path)],
                                    stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
                                    text=True)
            try:
                if _listening(proc, port, time.monotonic() + START_S):
                    yield port
                    return
                if proc.poll() is not None and "bind" not in (proc.stderr.read() or ""):
                    raise TranscriptError(f"simple_switch refused {json_path}")
            finally:
                proc.terminate()
                proc.wait(timeout=10)
        raise TranscriptError("simple_switch did not serve Thrift")


@contextmanager
def serve_inaemu(toolchain: Toolchain | None, json_path: Path, device_id: int = 3):
    """`inaemu switch JSON --thrift-port 0` (no ports, no P4Runtime); yields its Thrift port.
    It must then exit 0 on SIGTERM."""
    proc = subprocess.Popen([sys.executable, "-m", "inaemu", "switch", str(json_path),
                             "--no-grpc", "--thrift-port", "0", "--device-id", str(device_id)],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        ready = proc.stdout.readline()
        match = re.search(r"thrift (\d+)$", ready.strip())
        if match is None:
            proc.kill()
            raise TranscriptError(f"inaemu switch did not start: {ready}{proc.stderr.read()}")
        yield int(match.group(1))
    finally:
        if proc.poll() is None:
            proc.terminate()
        status = proc.wait(timeout=30)
    if status != 0:
        raise TranscriptError(f"inaemu switch exited {status}: {proc.stderr.read()[-2000:]}")


def bmv2_transcript(toolchain: Toolchain, json_path: Path, commands: str,
                    cwd: Path | None = None, device_id: int = 3) -> str:
    """`commands` against real simple_switch running `json_path`."""
    with serve_bmv2(toolchain, json_path, device_id) as port:
        return run_cli(toolchain, port, commands, cwd)


def inaemu_transcript(toolchain: Toolchain, json_path: Path, commands: str,
                      cwd: Path | None = None, device_id: int = 3) -> str:
    """`commands` against `inaemu switch --thrift-port 0` running `json_path`."""
    with serve_inaemu(toolchain, json_path, device_id) as port:
        return run_cli(toolchain, port, commands, cwd)
