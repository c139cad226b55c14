"""A peer of a `--packet-in` socket for the tests, in plain Python over sp.py's framing (no
nanomsg library), and an `inaemu switch --packet-in` child process to talk to.

The program is echo_port.p4: a frame leaves by the port it came in on, with that port number
in its source MAC.
"""

from __future__ import annotations

import json
import select
import socket
import subprocess
import sys
import time
from pathlib import Path

from p4switch.ports import sp
from p4switch.ports.packetin import HEADER, PACKET_IN, PACKET_OUT

PROGRAM = Path(__file__).with_name("echo_port.p4")
TIMEOUT = 30.0


def compiled_echo(folder: Path) -> Path:
    from p4switch.compiler import compile_file
    path = folder / "echo_port.json"
    path.write_text(json.dumps(compile_file(PROGRAM).bmv2))
    return path


def frame(tag: int, size: int = 20) -> bytes:
    """An Ethernet frame told apart by `tag` (its payload)."""
    return bytes(6) + bytes(6) + b"\x88\xb5" + bytes([tag]) * size


def ingress_of(data: bytes) -> int:
    """The ingress port echo_port.p4 wrote into the source MAC."""
    return int.from_bytes(data[6:12], "big")


class Peer:
    """One PAIR v0 connection to `address` (ipc://PATH or tcp://HOST:PORT)."""

    def __init__(self, address: str, timeout_s: float = TIMEOUT) -> None:
        scheme, _, rest = address.partition("://")
        if scheme == "ipc":
            self.sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
            target = rest
        else:
            host, _, port = rest.rpartition(":")
            self.sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
            target = (host, int(port))
        self.sock.settimeout(timeout_s)
        self.sock.connect(target)
        self.framing = sp.SPConnection(scheme)
        self.timeout_s = timeout_s
        self.inbox: list[bytes] = []
        try:
            self.sock.sendall(self.framing.greeting())
        except (BrokenPipeError, ConnectionResetError):
            self.closed = True          # the switch closed it first (it had a peer already)

    def send_message(self, message: bytes) -> None:
        self.sock.sendall(self.framing.frame(message))

    def send(self, port: int, data: bytes) -> None:
        self.send_message(HEADER.pack(PACKET_IN, port, len(data)) + data)

    def message(self, timeout_s: float | None = None) -> bytes | None:
        """The next message, or None if none comes within the timeout (or the switch closed
        the connection: see `closed`)."""
        if self.closed:
            return None
        deadline = time.monotonic() + (self.timeout_s if timeout_s is None else timeout_s)
        while not self.inbox:
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                return None
            ready, _, _ = select.select([self.sock], [], [], remaining)
            if not ready:
                return None
            try:
                data = self.sock.recv(65536)
            except ConnectionResetError:     # closed with our bytes unread
                data = b""
            if not data:
                self.closed = True
                return None
            self.inbox += self.framing.receive(data)
        return self.inbox.pop(0)

    def receive(self, timeout_s: float | None = None) -> tuple[int, bytes] | None:
        """The next PACKET_OUT as (port, frame), or None."""
        message = self.message(timeout_s)
        if message is None:
            return None
        kind, port, length = HEADER.unpack_from(message)
        assert kind == PACKET_OUT, message
        assert len(message) == HEADER.size + length
        return port, message[HEADER.size:]

    closed = False

    def close(self) -> None:
        self.sock.close()


class PacketInSwitch:
    """`python -m inaemu switch --no-grpc --packet-in ADDRESS JSON [extra...]` as a child."""

    def __init__(self, address: str, program: Path, *extra: str) -> None:
        self.address = address
        self.process = subprocess.Popen(
            [sys.executable, "-m", "inaemu", "switch", "--no-grpc", "--packet-in", address,
             str(program), *extra], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        self.ready = self.process.stdout.readline()
        if "ready" not in self.ready:
            self.process.kill()
            _, err = self.process.communicate(timeout=TIMEOUT)
            raise AssertionError(f"the switch did not start: {self.ready!r} {err}")

    def stop(self) -> tuple[str, str]:
        """SIGTERM; (the rest of stdout, stderr)."""
        self.process.terminate()
        out, err = self.process.communicate(timeout=TIMEOUT)
        return out, err

    def kill(self) -> None:
        if self.process.poll() is None:
            self.process.kill()
            self.process.communicate(timeout=TIMEOUT)


__all__ = ["PROGRAM", "PacketInSwitch", "Peer", "compiled_echo", "frame", "ingress_of"]
