"""A switch on pcap files (`--use-files`) as a child process in a folder, for the tests: inaemu's
(`python -m inaemu switch`) or real simple_switch, started with the command line p4c's STF
harness (backends/bmv2/bmv2stf.py) uses, plus the frames, pcaps and waits the tests share.

The program is files_seq.p4: a frame's destination MAC's last byte is its egress port (0xff:
dropped); the switch writes the order in which it ran the frame (0, 1, ...) into the source
MAC and the port it arrived on into the EtherType. `tag` fills the payload so that each input
frame can be told apart.
"""

from __future__ import annotations

import errno
import os
import signal
import socket
import struct
import subprocess
import sys
import threading
import time
from pathlib import Path

from p4switch.ports.pcap import PcapRecord, PcapWriter, read_pcap

PROJECT_ROOT = Path(__file__).resolve().parents[2]
PROGRAM = Path(__file__).with_name("files_seq.p4")
DROP = 0xFF
# What simple_switch writes at the head of a --use-files output (pcap_open_dead(0, 0)).
BMV2_OUTPUT_HEADER = struct.pack("<IHHiIII", 0xA1B2C3D4, 2, 4, 0, 0, 0, 0)
INPUT_HEADER = struct.pack("<IHHiIII", 0xA1B2C3D4, 2, 4, 0, 0, 65535, 1)
DEADLINE = 60.0                  # seconds a condition may take before the test gives up


def frame(egress: int, tag: int) -> bytes:
    return bytes(5) + bytes([egress]) + bytes(6) + bytes(2) + bytes([tag]) * 20


def tag_of(data: bytes) -> int:
    return data[14]


def order_of(data: bytes) -> int:
    """The switch's processing order of this frame (files_seq.p4 writes it)."""
    return int.from_bytes(data[6:12], "big")


def arrival_port_of(data: bytes) -> int:
    return int.from_bytes(data[12:14], "big")


def record_bytes(timestamp: float, data: bytes) -> bytes:
    seconds = int(timestamp)
    micros = round((timestamp - seconds) * 1e6)
    return struct.pack("<IIII", seconds, micros, len(data), len(data)) + data


def write_input(path: Path, packets: list[tuple[float, bytes]]) -> None:
    """A regular input file: (timestamp, frame) in file order."""
    with PcapWriter(path, snaplen=65535) as writer:
        for timestamp, data in packets:
            writer.write(data, timestamp)


def output_records(path: Path) -> list[PcapRecord]:
    """An output file's records (a 0-byte file, as an idle port leaves it, has none)."""
    if not path.exists() or path.stat().st_size == 0:
        return []
    return read_pcap(path)


def wait_for(condition, what: str, process: subprocess.Popen | None = None):
    """Poll `condition()` until it is true (returned) or DEADLINE passes (AssertionError);
    stop early if `process` died."""
    deadline = time.monotonic() + DEADLINE
    while True:
        value = condition()
        if value:
            return value
        if process is not None and process.poll() is not None:
            raise AssertionError(f"the switch exited ({process.returncode}) while waiting "
                                 f"for {what}")
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out waiting for {what}")
        time.sleep(0.01)


def open_fifo_writer(path: Path, process: subprocess.Popen):
    """Open the FIFO `path` for writing once the switch has opened it for reading (as the
    harness's blocking open does, without hanging if the switch died first) and write a pcap
    header into it, as the harness's pcap writer does on opening."""
    def opened():
        try:
            return os.open(path, os.O_WRONLY | os.O_NONBLOCK)
        except OSError as error:
            if error.errno != errno.ENXIO:          # ENXIO: no reader yet
                raise
            return None
    fd = wait_for(opened, f"the switch to open {path.name}", process)
    os.set_blocking(fd, True)
    writer = os.fdopen(fd, "wb")
    writer.write(INPUT_HEADER)
    writer.flush()
    return writer


def free_tcp_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def harness_arguments(json_path: Path, ports: list[int], *, wait: int = 0,
                      thrift_port: int | None = None, device_id: int = 123) -> list[str]:
    """bmv2stf.py's simple_switch arguments (its RunBMV2.run), with these ports."""
    arguments = ["--log-file", "switch.log", "--log-flush", "--use-files", str(wait),
                 "--dump-packet-data", "10240",
                 "--thrift-port", str(thrift_port or free_tcp_port()),
                 "--device-id", str(device_id)]
    for port in sorted(ports):
        arguments += ["-i", f"{port}@pcap{port}"]
    return arguments + [str(json_path)]


class FilesSwitch:
    """A switch child process in `folder`; its stdout and stderr lines are read by threads."""

    def __init__(self, command: list[str], folder: Path) -> None:
        self.folder = folder
        self.process = subprocess.Popen(command, cwd=folder, stdout=subprocess.PIPE,
                                        stderr=subprocess.PIPE, text=True,
                                        env={**os.environ, "PYTHONPATH": str(PROJECT_ROOT)})
        self.stdout: list[str] = []
        self.stderr: list[str] = []
        self._readers = [threading.Thread(target=self._read, args=(stream, lines), daemon=True)
                         for stream, lines in ((self.process.stdout, self.stdout),
                                               (self.process.stderr, self.stderr))]
        for reader in self._readers:
            reader.start()

    @classmethod
    def inaemu(cls, folder: Path, arguments: list[str]) -> "FilesSwitch":
        return cls([sys.executable, "-m", "inaemu", "switch", "--no-grpc", *arguments], folder)

    def _read(self, stream, lines: list[str]) -> None:
        for line in stream:
            lines.append(line.rstrip("\n"))

    def wait_line(self, text: str, stream: str = "stdout") -> str:
        lines = self.stdout if stream == "stdout" else self.stderr
        return wait_for(lambda: next((line for line in lines if text in line), None),
                        f"{text!r} on the switch's {stream} (so far: {lines})", self.process)

    def outputs(self, port: int) -> list[PcapRecord]:
        return output_records(self.folder / f"pcap{port}_out.pcap")

    def wait_outputs(self, counts: dict[int, int]) -> dict[int, list[PcapRecord]]:
        """Wait until port P's output holds counts[P] records, for every P given."""
        def reached():
            got = {port: self.outputs(port) for port in counts}
            return got if all(len(got[p]) >= n for p, n in counts.items()) else None
        return wait_for(reached, f"output records {counts}", self.process)

    def wait_inputs_closed(self) -> None:
        """Wait until the switch has read every pcapN_in.pcap to its end (it closes them)."""
        def none_open():
            try:
                targets = [os.readlink(f"/proc/{self.process.pid}/fd/{fd}")
                           for fd in os.listdir(f"/proc/{self.process.pid}/fd")]
            except FileNotFoundError:       # an fd closed while listing: look again
                return False
            return not any(target.endswith("_in.pcap") for target in targets)
        wait_for(none_open, "the input files to be read to their end", self.process)

    def terminate(self) -> int:
        """SIGTERM, as the harness stops the switch; the exit status."""
        if self.process.poll() is None:
            self.process.send_signal(signal.SIGTERM)
        return self.wait_exit()

    def wait_exit(self) -> int:
        try:
            self.process.wait(timeout=DEADLINE)
        finally:
            if self.process.poll() is None:
                self.process.kill()
                self.process.wait()
        for reader in self._readers:           # every line the process wrote
            reader.join(timeout=DEADLINE)
        return self.process.returncode

    def kill(self) -> None:
        if self.process.poll() is None:
            self.process.kill()
            self.process.wait()
