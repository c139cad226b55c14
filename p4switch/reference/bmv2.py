"""One real simple_switch process: start, control through simple_switch_CLI, send packets, stop.

Packets go through simple_switch's nanomsg packet port (`nanomsg.py`), so no interface or
namespace is needed. To know when a packet has finished (every copy transmitted or dropped),
the driver reads simple_switch's debug log as it is written and keeps a count of the copies in
flight, from the lines simple_switch writes at each step of a packet's life:

| log line                                   | copies in flight |
|--------------------------------------------|------------------|
| (a packet is sent to the switch)           | +1               |
| `Dropping packet at the end of ingress`    | -1               |
| `Dropping packet at the end of egress`     | -1               |
| `Transmitting packet of size N out of port P` | -1 (and one frame to read) |
| `Cloning packet to egress port P`          | +1               |
| `number of packets replicated : N` after `Cloning packet to MGID` | +N |
| `number of packets replicated : N` after `Multicast requested` | +N - 1 (the original ends) |
| `Replication requested for mgid M, which is not known to the PRE` | as N = 0 |
| `Resubmitting packet`, `Recirculating packet` | 0 (the copy re-enters ingress) |

The PRE logs the replica count before the replicas are made, so the count never touches zero
while a packet is still being replicated. When it is zero, the driver reads exactly as many
frames from the packet port as `Transmitting` lines appeared. No sleeping: a packet that has
not finished within the timeout (a recirculation loop) is an error.

The control plane is one simple_switch_CLI per switch (started with `cli_launcher.py` so that its
imports overlap the switch's start), driven line by line through its prompt; a command whose
output says `Error`/`Invalid`/... raises `Bmv2CommandError` with it. A switch that exits while a
packet is in it (BMv2 aborts on a failed `assert`) raises `SwitchStopped`.
"""

from __future__ import annotations

import os
import re
import select
import shutil
import socket
import subprocess
import tempfile
import threading
import time
from collections import deque
from pathlib import Path

from p4switch.runtime.errors import P4SwitchError

from .nanomsg import NanomsgError, PacketSocket
from .toolchain import Toolchain

PROMPT = b"RuntimeCmd: "
_PACKET_LINE = re.compile(r"\[thread (\d+)\] \[[0-9.]+\] \[cxt \d+\] (.*)$")
_REPLICATED = re.compile(r"\[thread (\d+)\] .*number of packets replicated : (\d+)")
_UNKNOWN_MGID = re.compile(r"\[thread (\d+)\] .*Replication requested for mgid \d+, which is "
                           r"not known to the PRE")
# how simple_switch_CLI reports a failure: a line starting with one of these (its error
# handlers print "Error: ..." and "Invalid <kind> operation (CODE)"; cmd prints "*** Unknown")
_CLI_FAILURE = re.compile(r"^(Error|Invalid |Traceback|Exception|\*\*\* Unknown|Could not)",
                          re.MULTILINE)


class Bmv2Error(P4SwitchError):
    """simple_switch or its CLI failed; the message is theirs."""


class SwitchRefused(Bmv2Error):
    """simple_switch would not load the JSON (its own message follows)."""


class Bmv2CommandError(Bmv2Error):
    """simple_switch_CLI refused a command."""


class SwitchStopped(Bmv2Error):
    """simple_switch exited while a packet was in it (BMv2 aborts on a failed assert)."""


def dying_with_parent(command: list[str]) -> list[str]:
    """`command` made to die when the process that starts it dies (Linux PR_SET_PDEATHSIG), so
    a killed test run leaves no simple_switch behind: through util-linux's `setpriv
    --pdeathsig`, never a Python `preexec_fn`. A preexec_fn makes subprocess fork() and run
    Python in the child, and in a process where gRPC is running (the P4Runtime server and
    client tests share the pytest process) gRPC's fork handlers crashed about 4 % of those
    children (SIGSEGV, SIGABRT, "epoll_wait error: Bad file descriptor" written into the
    switch's log): simple_switch "refused" a valid program, or its CLI died before it was
    given the port. Without setpriv the command runs as it is."""
    setpriv = shutil.which("setpriv")
    return [setpriv, "--pdeathsig", "KILL", "--", *command] if setpriv else list(command)


def free_tcp_port() -> int:
    """A TCP port free on every address, IPv4 and IPv6 (thrift listens on both)."""
    try:
        with socket.socket(socket.AF_INET6, socket.SOCK_STREAM) as s:
            s.setsockopt(socket.IPPROTO_IPV6, socket.IPV6_V6ONLY, 0)
            s.bind(("::", 0))
            return s.getsockname()[1]
    except OSError:                      # no IPv6 on this machine
        with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
            s.bind(("0.0.0.0", 0))
            return s.getsockname()[1]


class _LogWatcher:
    """Reads simple_switch's console log on a thread; counts copies in flight (see above)."""

    def __init__(self, stream):
        self.stream = stream
        self.cond = threading.Condition()
        self.in_flight = 0
        self.transmitted = 0
        self.lines: deque[str] = deque(maxlen=4000)
        self.packet_lines: list[str] = []      # the lines of the packet being processed
        self.closed = False
        self._clone_to_mgid: set[str] = set()  # threads whose next PRE count is a clone's
        self.thrift_started = False
        self.thread = threading.Thread(target=self._run, daemon=True, name="bmv2-log")
        self.thread.start()

    def _run(self) -> None:
        for raw in self.stream:
            line = raw.decode(errors="replace").rstrip("\n")
            with self.cond:
                self.lines.append(line)
                self._account(line)
                self.cond.notify_all()
        with self.cond:
            self.closed = True
            self.cond.notify_all()

    def _account(self, line: str) -> None:
        if "Thrift server was started" in line:
            self.thrift_started = True
        m = _REPLICATED.search(line) or _UNKNOWN_MGID.search(line)
        if m:
            self.packet_lines.append(line)
            count = int(m.group(2)) if m.re is _REPLICATED else 0
            thread = m.group(1)
            if thread in self._clone_to_mgid:
                self._clone_to_mgid.discard(thread)
                self.in_flight += count
            else:
                self.in_flight += count - 1
            return
        m = _PACKET_LINE.search(line)
        if not m:
            return
        self.packet_lines.append(line)
        thread, message = m.groups()
        if message.startswith(("Dropping packet at the end of",)):
            self.in_flight -= 1
        elif message.startswith("Transmitting packet of size"):
            self.in_flight -= 1
            self.transmitted += 1
        elif message.startswith("Cloning packet to egress port"):
            self.in_flight += 1
        elif message.startswith("Cloning packet to MGID"):
            self._clone_to_mgid.add(thread)

    def wait(self, predicate, timeout_s: float) -> bool:
        with self.cond:
            return self.cond.wait_for(lambda: predicate() or self.closed, timeout_s) \
                and predicate()


class SimpleSwitch:
    """A running simple_switch with its CLI and packet port. Use as a context manager."""

    def __init__(self, toolchain: Toolchain, json_path: str | Path, *,
                 packet_timeout_s: float = 10.0, start_timeout_s: float = 20.0):
        self.toolchain = toolchain
        self.json_path = Path(json_path)
        self.packet_timeout_s = packet_timeout_s
        self._dir = Path(tempfile.mkdtemp(prefix="inaemu-bmv2-"))
        self.notifications_address = f"ipc://{self._dir}/notifications.ipc"
        self._proc: subprocess.Popen | None = None
        self._cli: subprocess.Popen | None = None
        self._socket: PacketSocket | None = None
        self._cli_buffer = b""
        try:
            self._start(start_timeout_s)
        except BaseException:
            self.close()
            raise

    # --- life cycle ---
    def _start(self, timeout_s: float) -> None:
        ipc = f"ipc://{self._dir}/packets.ipc"
        site = sorted(self.toolchain.root.glob("lib/python3*/site-packages"))
        self._cli = subprocess.Popen(       # imports while the switch starts (cli_launcher.py)
            dying_with_parent([_cli_python(self.toolchain.cli),
                               str(Path(__file__).with_name("cli_launcher.py"))]),
            stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
            env={**os.environ, "PYTHONUNBUFFERED": "1",
                 "PYTHONPATH": ":".join(str(p) for p in site)})
        for attempt in range(3):
            self.thrift_port = free_tcp_port()
            command = [str(self.toolchain.simple_switch), "--packet-in", ipc,
                       "--thrift-port", str(self.thrift_port),
                       "--notifications-addr", self.notifications_address,
                       "--log-console", "-L", "debug", str(self.json_path)]
            self._proc = subprocess.Popen(dying_with_parent(command), stdin=subprocess.DEVNULL,
                                          stdout=subprocess.PIPE, stderr=subprocess.STDOUT)
            self.log = _LogWatcher(self._proc.stdout)
            # simple_switch logs "Thrift server was started" before it binds the port: ready
            # means its own socket listens on the port (else the CLI could reach a stranger)
            if self.log.wait(lambda: self.log.thrift_started, timeout_s) and \
                    _wait_listening(self._proc, self.thrift_port, timeout_s):
                break
            # alive with its output open, not listening: slow, not refused. A switch that
            # refused the JSON closes its output a moment before it exits, so a poll() alone
            # here could still see it running (the refusal was then called a slow start).
            still_starting = self._proc.poll() is None and not self.log.closed
            self._kill_switch()
            self.log.thread.join(timeout=5)
            self._proc.stdout.close()
            text = "\n".join(self.log.lines)
            if "Address already in use" in text or "Could not bind" in text:
                continue                               # lost the port to someone: retry
            if still_starting:
                raise Bmv2Error(f"simple_switch did not start within {timeout_s:.0f} s "
                                f"(a busy machine?):\n{_tail(text)}")
            text = "\n".join(line for line in self.log.lines
                             if "program-options parser" not in line)
            raise SwitchRefused(f"simple_switch refused {self.json_path}:\n{_head(text)}")
        else:
            raise Bmv2Error("simple_switch could not get a free thrift port")
        self._socket = PacketSocket(ipc, timeout_s=self.packet_timeout_s)
        self._cli.stdin.write(f"{self.thrift_port} {self.json_path}\n".encode())
        self._cli.stdin.flush()
        banner = self._read_prompt(timeout_s)
        if _CLI_FAILURE.search(banner) or "Control utility" not in banner:
            raise Bmv2Error(f"simple_switch_CLI did not connect:\n{_tail(banner)}")

    def _kill_switch(self) -> None:
        if self._proc and self._proc.poll() is None:
            self._proc.terminate()
            try:
                self._proc.wait(timeout=5)
            except subprocess.TimeoutExpired:
                self._proc.kill()
                self._proc.wait()

    def close(self) -> None:
        """Stops the CLI and the switch and removes the socket files; safe to call twice."""
        if self._cli is not None:
            try:
                self._cli.stdin.close()
                self._cli.wait(timeout=5)
            except (OSError, subprocess.TimeoutExpired):
                self._cli.kill()
                self._cli.wait()
            self._cli.stdout.close()
            self._cli = None
        if self._socket is not None:
            self._socket.close()
            self._socket = None
        self._kill_switch()
        if self._proc is not None and not self._proc.stdout.closed:
            self.log.thread.join(timeout=5)
            self._proc.stdout.close()
        shutil.rmtree(self._dir, ignore_errors=True)

    def __enter__(self) -> SimpleSwitch:
        return self

    def __exit__(self, *exc) -> None:
        self.close()

    @property
    def alive(self) -> bool:
        return self._proc is not None and self._proc.poll() is None

    # --- control plane ---
    def _read_prompt(self, timeout_s: float) -> str:
        fd = self._cli.stdout.fileno()
        deadline = time.monotonic() + timeout_s
        while PROMPT not in self._cli_buffer:
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                raise Bmv2Error(f"simple_switch_CLI did not answer within {timeout_s:.0f} s:\n"
                                f"{_tail(self._cli_buffer.decode(errors='replace'))}")
            ready, _, _ = select.select([fd], [], [], remaining)
            if not ready:
                continue
            chunk = os.read(fd, 65536)
            if not chunk:
                raise Bmv2Error("simple_switch_CLI exited:\n"
                                + _tail(self._cli_buffer.decode(errors="replace")))
            self._cli_buffer += chunk
        out, _, self._cli_buffer = self._cli_buffer.partition(PROMPT)
        return out.decode(errors="replace")

    def cli(self, command: str, *, check: bool = True) -> str:
        """Runs one simple_switch_CLI command and returns its output."""
        if "\n" in command:
            raise ValueError("one command at a time")
        self._cli.stdin.write(command.encode() + b"\n")
        self._cli.stdin.flush()
        out = self._read_prompt(30.0)
        if check and _CLI_FAILURE.search(out):
            raise Bmv2CommandError(f"simple_switch_CLI refused '{command}': {out.strip()}")
        return out

    def parse_vset_change(self, add: bool, name: str, value: int, nbytes: int) -> None:
        """pvs_add/pvs_remove through `pvs_client.py` (the CLI's own pvs_add crashes BMv2)."""
        site = sorted(self.toolchain.root.glob("lib/python3*/site-packages"))
        env = {**os.environ, "PYTHONPATH": ":".join(str(s) for s in site)}
        done = subprocess.run(
            [_cli_python(self.toolchain.cli), str(Path(__file__).with_name("pvs_client.py")),
             str(self.thrift_port), "add" if add else "remove", name, f"{value:x}",
             str(nbytes)], capture_output=True, text=True, env=env, timeout=30)
        if done.returncode != 0:
            raise Bmv2CommandError(f"{'pvs_add' if add else 'pvs_remove'} {name} {value:#x}: "
                                   f"{(done.stdout + done.stderr).strip()}")

    # --- packets ---
    def send(self, port: int, frame: bytes) -> tuple[list[tuple[int, bytes]], list[str]]:
        """Sends one frame and waits until every copy has left or been dropped.

        Returns (frames out in the order simple_switch transmitted them, the packet's log lines).
        """
        log = self.log
        with log.cond:
            log.packet_lines = []
            log.in_flight += 1
            before = log.transmitted
        self._socket.send(port, frame)
        if not log.wait(lambda: log.in_flight == 0, self.packet_timeout_s):
            if log.closed or not self.alive:
                try:
                    self._proc.wait(timeout=5)
                except subprocess.TimeoutExpired:
                    pass
                raise SwitchStopped("simple_switch stopped while processing a packet:\n"
                                    + _tail("\n".join(log.lines)))
            raise Bmv2Error(f"the packet did not finish within {self.packet_timeout_s:.0f} s "
                            f"({log.in_flight} copies still in flight)")
        with log.cond:
            count = log.transmitted - before
            lines = list(log.packet_lines)
        outputs = []
        try:
            for _ in range(count):
                outputs.append(self._socket.receive())
        except NanomsgError as exc:
            raise Bmv2Error(f"simple_switch logged {count} transmissions but {len(outputs)} "
                            f"arrived: {exc}") from None
        return outputs, lines


def _listening(pid: int, port: int) -> bool:
    """Whether process `pid` has a TCP socket listening on `port` (from /proc)."""
    try:
        inodes = {os.readlink(f"/proc/{pid}/fd/{fd}")[8:-1]
                  for fd in os.listdir(f"/proc/{pid}/fd")}
    except OSError:
        return False
    for table in ("/proc/net/tcp", "/proc/net/tcp6"):
        try:
            rows = Path(table).read_text().splitlines()[1:]
        except OSError:
            continue
        for row in rows:
            cols = row.split()
            local, state, inode = cols[1], cols[3], cols[9]
            if state == "0A" and int(local.rsplit(":", 1)[1], 16) == port and inode in inodes:
                return True
    return False


def _wait_listening(proc: subprocess.Popen, port: int, timeout_s: float) -> bool:
    """Polls until `proc` listens on `port`; False if it exits first or time runs out."""
    deadline = time.monotonic() + timeout_s
    while proc.poll() is None and time.monotonic() < deadline:
        if _listening(proc.pid, port):
            return True
        time.sleep(0.002)
    return False


def _cli_python(cli: Path) -> str:
    """The Python that runs simple_switch_CLI (the one with thrift), from its `#!` line."""
    first = cli.read_text(errors="replace").splitlines()[0]
    parts = first[2:].split() if first.startswith("#!") else []
    if parts and parts[0].endswith("env") and len(parts) > 1:
        return parts[1]
    return parts[0] if parts else "python3"


def _head(text: str, lines: int = 8) -> str:
    """The first lines (simple_switch says what is wrong first, then dumps the JSON)."""
    rows = text.strip().splitlines()
    more = f"\n(... {len(rows) - lines} more lines)" if len(rows) > lines else ""
    return "\n".join(rows[:lines]) + more


def _tail(text: str, lines: int = 25) -> str:
    return "\n".join(text.strip().splitlines()[-lines:])
