"""A switch for the notification tests (learning, ageing): simple_switch or `inaemu switch
--no-grpc` as a child, its ports on a packet-in socket, its notifications on a PUB socket, its
Thrift runtime on a free port; yielded as (Thrift client, SUB socket, PAIR socket), with port 1
added and the subscription in place."""

from __future__ import annotations

import socket
import subprocess
import sys
import time
from contextlib import contextmanager
from pathlib import Path

from p4switch.ports.packetin import HEADER, PORT_ADD
from p4switch.thrift.client import RuntimeClient


REFERENCE = Path("/opt/p4ref/bin")
INAEMU_AS_SIMPLE_SWITCH = [sys.executable, "-m", "inaemu", "switch", "--no-grpc"]


def p4c_json(source: str, folder: Path) -> Path:
    """`source` compiled by real p4c-bm2-ss into FOLDER/p.json (and folders bmv2/, inaemu/ for
    the two switches' sockets)."""
    (folder / "p.p4").write_text(source)
    built = subprocess.run([str(REFERENCE / "p4c-bm2-ss"), str(folder / "p.p4"), "-o",
                            str(folder / "p.json")], capture_output=True, text=True,
                           timeout=300)
    assert built.returncode == 0, built.stderr
    for name in ("bmv2", "inaemu"):
        (folder / name).mkdir()
    return folder / "p.json"


def _free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


@contextmanager
def notifying_switch(command: list[str], program: Path, folder: Path, *, device_id: int,
                     topic: bytes = b"", recv_timeout_ms: int = 50):
    import pynng        # a pinned test dependency (pyproject.toml)
    packets, notes = f"ipc://{folder}/packets.ipc", f"ipc://{folder}/notes.ipc"
    port = _free_port()
    switch = subprocess.Popen(
        command + [str(program), "--packet-in", packets, "--notifications-addr", notes,
                   "--thrift-port", str(port), "--device-id", str(device_id),
                   "--log-level", "warn"],
        stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        deadline = time.monotonic() + 60
        while True:
            try:
                client = RuntimeClient(port=port)
                break
            except OSError:
                assert time.monotonic() < deadline and switch.poll() is None, "no Thrift"
                time.sleep(0.1)
        with client, pynng.Sub0(recv_timeout=recv_timeout_ms) as sub, \
                pynng.Pair0(send_timeout=10_000) as pair:
            sub.subscribe(topic)
            sub.dial(notes, block=True)
            pair.dial(packets, block=True)
            pair.send(HEADER.pack(PORT_ADD, 1, 0))
            time.sleep(0.3)        # the subscription reaches the publisher
            yield client, sub, pair
    finally:
        switch.terminate()
        switch.wait(timeout=20)


__all__ = ["INAEMU_AS_SIMPLE_SWITCH", "REFERENCE", "notifying_switch", "p4c_json"]
