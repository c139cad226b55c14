"""Switch logs and pcaps of a run directory -> one time-ordered stream of events.

The log format is `p4switch.runtime.trace.TextTrace`'s: every line is `TIME [ID] TEXT` (TIME may
be absent in logs written before lines carried it: such lines take the previous line's time).
Per packet, the lines between `packet in: ...` and `done: ...` become one `PipelineRun` (the
actions run, drops, multicast replicas, packets out); a `[-] link loss: ...` line becomes a
`LinkLoss`. A block cut short by the end of the file (a switch killed mid-packet) still counts.
Each pcap record becomes a `WireFrame`. Parsing is pure over lines and bytes (`parse_log`,
`wire_frames`); `read_run` does the file I/O. A malformed line or capture raises `TraceError`
naming the file, the line and the problem.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Iterable

from inaemu.trace.events import (Event, LinkLoss, Output, PipelineRun, TraceError, WireFrame)
from inaemu.trace.layout import SwitchFiles, find_switches

_LINE = re.compile(r"^(?:(?P<time>\d+\.\d+) )?\[(?P<id>\d+|-)\] (?P<text>.*)$")
_PACKET = re.compile(r"^packet (?P<dir>in|out): port (?P<port>\d+), (?P<length>\d+) bytes: "
                     r"(?P<hex>[0-9a-f]*)(?:\.\.\.)?$")
_ACTION = re.compile(r"^running action '(?P<name>[^']*)'$")
_MULTICAST = re.compile(r"^multicast group (?P<mgid>\d+): (?P<replicas>.*)$")
_REPLICA = re.compile(r"port (\d+) rid (\d+)")
_LOSS = re.compile(r"^link loss: port (?P<port>\d+) (?P<dir>in|out), (?P<length>\d+) bytes, "
                   r"crc32 (?P<crc>[0-9a-f]{8}): (?P<hex>[0-9a-f]*)(?:\.\.\.)?$")


@dataclass
class _Block:
    time: float
    packet_id: int
    port: int
    length: int
    head: bytes
    actions: list[str] = field(default_factory=list)
    drops: list[str] = field(default_factory=list)
    multicast: tuple[tuple[int, int], ...] | None = None
    outputs: list[Output] = field(default_factory=list)

    def close(self, switch: str) -> PipelineRun:
        return PipelineRun(time=self.time, switch=switch, packet_id=self.packet_id,
                           port=self.port, length=self.length, head=self.head,
                           actions=tuple(self.actions), drops=tuple(self.drops),
                           multicast=self.multicast, outputs=tuple(self.outputs))


def parse_log(lines: Iterable[str], switch: str, *, source: str = "<log>") -> list[Event]:
    """The events of one switch's log, in file order."""
    events: list[Event] = []
    block: _Block | None = None
    now = 0.0
    for number, raw in enumerate(lines, 1):
        line = raw.rstrip("\n")
        if not line.strip():
            continue
        match = _LINE.match(line)
        if match is None:
            raise TraceError(f"{source}:{number}: not a switch log line: {line[:80]!r}")
        if match.group("time") is not None:
            now = float(match.group("time"))
        text = match.group("text").strip()
        try:
            if match.group("id") == "-":
                events.append(_loss(text, now, switch))
                continue
            if text.startswith("packet in:"):
                if block is not None:
                    events.append(block.close(switch))
                port, length, head = _packet(text)
                block = _Block(now, int(match.group("id")), port, length, head)
            elif block is None:
                continue          # the tail of a block whose start the file does not have
            elif text.startswith("packet out:"):
                port, length, head = _packet(text)
                block.outputs.append(Output(port, length, head))
            elif text.startswith("running action "):
                block.actions.append(_ACTION.match(text).group("name"))
            elif text.startswith("multicast group "):
                replicas = _MULTICAST.match(text).group("replicas")
                block.multicast = tuple((int(p), int(r)) for p, r in _REPLICA.findall(replicas))
            elif text.startswith("dropped: "):
                block.drops.append(text[len("dropped: "):])
            elif text.startswith("done:"):
                events.append(block.close(switch))
                block = None
        except (AttributeError, ValueError) as error:
            raise TraceError(f"{source}:{number}: malformed line ({error or 'unexpected text'}): "
                             f"{line[:80]!r}") from None
    if block is not None:
        events.append(block.close(switch))
    return events


def _packet(text: str) -> tuple[int, int, bytes]:
    match = _PACKET.match(text)
    if match is None:
        raise ValueError("expected 'packet in|out: port P, N bytes: HEX'")
    return int(match.group("port")), int(match.group("length")), bytes.fromhex(match.group("hex"))


def _loss(text: str, now: float, switch: str) -> LinkLoss:
    match = _LOSS.match(text)
    if match is None:
        raise ValueError("expected 'link loss: port P in|out, N bytes, crc32 X: HEX'")
    return LinkLoss(time=now, switch=switch, port=int(match.group("port")),
                    direction=match.group("dir"), length=int(match.group("length")),
                    crc32=int(match.group("crc"), 16), head=bytes.fromhex(match.group("hex")))


def wire_frames(files: SwitchFiles) -> list[WireFrame]:
    """Every record of every capture of one switch, as `WireFrame`s (per file, in file order)."""
    from p4switch.ports.errors import PcapFormatError
    from p4switch.ports.pcap import read_pcap
    frames: list[WireFrame] = []
    for (iface, direction), path in sorted(files.pcaps.items()):
        try:
            records = read_pcap(path)
        except (PcapFormatError, OSError) as error:
            raise TraceError(str(error)) from None
        port = files.port_of(iface)
        frames += [WireFrame(time=r.timestamp, switch=files.name, port=port, iface=iface,
                             direction=direction, data=r.data) for r in records]
    return frames


@dataclass
class RunTrace:
    """Everything read from a run directory: which switches, and all events by time."""

    switches: list[SwitchFiles]
    events: list[Event]

    def has_log(self, switch: str) -> bool:
        return any(s.name == switch and s.log is not None for s in self.switches)

    def iface(self, switch: str, port: int) -> str | None:
        """The interface name of a switch port, when its captures or manifest say it."""
        for files in self.switches:
            if files.name == switch:
                for (iface, _), _path in files.pcaps.items():
                    if files.port_of(iface) == port:
                        return iface
        return None


def read_run(out_dir: Path, *, switches: set[str] | None = None) -> RunTrace:
    """Logs and captures of every switch under OUT (or only those named), merged by time."""
    out_dir = Path(out_dir)
    if not out_dir.is_dir():
        raise TraceError(f"{out_dir}: no such directory")
    found = [f for f in find_switches(out_dir) if switches is None or f.name in switches]
    events: list[Event] = []
    for files in found:
        if files.log is not None:
            try:
                with open(files.log, encoding="utf-8", errors="replace") as handle:
                    events += parse_log(handle, files.name, source=str(files.log))
            except OSError as error:
                raise TraceError(f"{files.log}: cannot read: {error.strerror}") from None
        events += wire_frames(files)
    events.sort(key=lambda event: event.time)      # stable: file order among equal times
    return RunTrace(found, events)
