"""Per-packet event tracing: `PacketTrace` receives events, `TextTrace` writes a readable log.

The runtime only calls these from the traced variant of the generated code (compiled when a
trace is attached), so `trace=None` costs nothing on the packet path. Subclass `PacketTrace` and
override the events you care about; every method is a no-op by default.

`TextTrace` lines start with the time (seconds, six decimals, from its `clock`: wall time by
default, the same clock as the pcap captures, so logs and captures merge; the simulator passes
its virtual clock) and the packet id in brackets: `1763707000.123456 [12]   table ...`. The clock
is read once per packet; every line of one packet carries that time. `link_loss` lines (a frame
the port model dropped, outside any pipeline run) use the id `-`. `inaemu trace` parses this
format (`inaemu/trace/reader.py`); change both together.
"""

from __future__ import annotations

import time
import zlib
from typing import Callable, TextIO

HEX_PREFIX_BYTES = 64   # bytes of a packet shown in hex: enough for Ethernet, IPv4, UDP and a small header after them


class PacketTrace:
    def packet_in(self, packet_id: int, port: int, data: bytes) -> None: ...
    def pipeline(self, name: str, instance_type: int, port: int | None = None,
                 rid: int | None = None) -> None: ...
    def parser_state(self, state: str) -> None: ...
    def extract(self, header: str, valid_index: int) -> None: ...
    def parser_error(self, code: int) -> None: ...
    def checksum_error(self, checksum: str) -> None: ...
    def checksum_update(self, checksum: str, value: int) -> None: ...
    def condition(self, name: str, result: bool) -> None: ...
    def table(self, name: str, hit: bool, entry, action: str | None, params,
              key: str = "") -> None: ...
    def action(self, name: str, params) -> None: ...
    def log_msg(self, fmt: str, values) -> None: ...
    def note(self, text: str) -> None: ...
    def emit(self, header: str) -> None: ...
    def clone(self, kind: str, session: int, config: dict) -> None: ...
    def multicast(self, mgid: int, replicas) -> None: ...
    def drop(self, reason: str) -> None: ...
    def packet_out(self, port: int, data: bytes) -> None: ...
    def packet_done(self, outputs) -> None: ...
    def link_loss(self, port: int, direction: str, data: bytes) -> None:
        """The port model dropped `data` arriving on (`in`) or leaving (`out`) `port`."""


def _format_message(fmt: str, values) -> str:
    out = fmt
    for value in values:
        out = out.replace("{}", str(value), 1)
    return out


def _hex_prefix(data: bytes) -> str:
    return data[:HEX_PREFIX_BYTES].hex() + ("..." if len(data) > HEX_PREFIX_BYTES else "")


class TextTrace(PacketTrace):
    """Writes one block of lines per packet, in the spirit of BMv2's debug log."""

    def __init__(self, file: TextIO, flush: bool = False,
                 clock: Callable[[], float] = time.time):
        self.file = file
        self.flush = flush
        self.clock = clock
        self.packet_id = 0
        self._prefix = f"{clock():.6f} [0] "

    def _line(self, text: str, depth: int = 1) -> None:
        self.file.write(self._prefix + "  " * depth + text + "\n")

    def packet_in(self, packet_id, port, data):
        self.packet_id = packet_id
        self._prefix = f"{self.clock():.6f} [{packet_id}] "
        self._line(f"packet in: port {port}, {len(data)} bytes: {_hex_prefix(data)}", 0)

    def pipeline(self, name, instance_type, port=None, rid=None):
        where = f" (egress port {port}, rid {rid})" if port is not None else ""
        self._line(f"{name} pipeline, instance type {instance_type}{where}", 0)

    def parser_state(self, state):
        self._line(f"parser state '{state}'")

    def extract(self, header, valid_index):
        self._line(f"extracted header '{header}'", 2)

    def parser_error(self, code):
        self._line(f"parser error {code}")

    def checksum_error(self, checksum):
        self._line(f"checksum '{checksum}' does not verify: checksum_error = 1")

    def checksum_update(self, checksum, value):
        self._line(f"checksum '{checksum}' updated to {value:#x}")

    def condition(self, name, result):
        self._line(f"condition '{name}' is {'true' if result else 'false'}")

    def table(self, name, hit, entry, action, params, key=""):
        if key:
            self._line(f"table '{name}': lookup key {key}")
        if hit and entry is not None:
            keys = ", ".join(repr(k) for k in entry.keys)
            what = f"hit entry {entry.handle} [{keys}]"
        elif not key:
            what = "no key, runs"
        else:
            what = "miss (default entry)"
        data = ", ".join(f"{p:#x}" for p in params)
        self._line(f"table '{name}': {what} -> action '{action}'({data})")

    def action(self, name, params):
        self._line(f"running action '{name}'", 2)

    def log_msg(self, fmt, values):
        self._line(f"log_msg: {_format_message(fmt, values)}", 2)

    def note(self, text):
        self._line(text)

    def emit(self, header):
        self._line(f"deparser emits '{header}'", 2)

    def clone(self, kind, session, config):
        target = f"port {config['port']}" if config.get("port") is not None else ""
        if config.get("mgid"):
            target += f"{' and ' if target else ''}multicast group {config['mgid']}"
        self._line(f"{kind} clone to session {session} ({target})")

    def multicast(self, mgid, replicas):
        copies = ", ".join(f"port {p} rid {r}" for p, r in replicas) or "no replicas"
        self._line(f"multicast group {mgid}: {copies}")

    def drop(self, reason):
        self._line(f"dropped: {reason}")

    def packet_out(self, port, data):
        self._line(f"packet out: port {port}, {len(data)} bytes: {_hex_prefix(data)}", 0)

    def packet_done(self, outputs):
        self._line(f"done: {len(outputs)} packet(s) out", 0)
        if self.flush:
            self.file.flush()

    def link_loss(self, port, direction, data):
        digest = zlib.crc32(data)
        self.file.write(f"{self.clock():.6f} [-] link loss: port {port} {direction}, "
                        f"{len(data)} bytes, crc32 {digest:08x}: {_hex_prefix(data)}\n")
        if self.flush:
            self.file.flush()
