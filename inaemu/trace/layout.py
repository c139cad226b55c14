"""Where a traced run keeps its captures, and a writer of them for virtual time.

The layout is the one `topologies.mininet_net.MininetNetwork(run_dir=D, trace=True, pcap=True)`
produces, so `inaemu trace` reads Mininet runs and simulator runs alike. Per switch `X` in D:

    D/X.log                      per-packet log (p4switch.runtime.trace.TextTrace format)
    D/X-pcap/<iface>_in.pcap     frames that arrived on a port (BMv2's --pcap naming)
    D/X-pcap/<iface>_out.pcap    frames that left on it
    D/X.ports.json               optional: {"1": "s1-eth1", ...}, port number of each iface

Without `X.ports.json`, the port is read from the interface name (`s1-eth3`, `port3` -> 3).
`inaemu run --trace --out OUT` puts D at `OUT/net` (Mininet) or `OUT/trace` (simulator);
`trace_dirs(OUT)` looks in OUT itself and in those two.

`SwitchRecorder` writes this layout for a switch that is not an `inaemu switch` process (the
simulator): the same log format and pcaps, stamped by the caller's clock (virtual time).
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable, TextIO

from inaemu.trace.events import TraceError

SUBDIRS = ("net", "trace")
_PORT_IN_NAME = re.compile(r"(?:-eth|port|eth)(\d+)$")
_LOG_LINE = re.compile(r"^(?:\d+\.\d+ )?\[(?:\d+|-)\] ")


def log_path(run_dir: Path, switch: str) -> Path:
    return Path(run_dir) / f"{switch}.log"


def pcap_dir(run_dir: Path, switch: str) -> Path:
    return Path(run_dir) / f"{switch}-pcap"


def ports_path(run_dir: Path, switch: str) -> Path:
    return Path(run_dir) / f"{switch}.ports.json"


def trace_dirs(out_dir: Path) -> list[Path]:
    """OUT and its `net/` and `trace/` subdirectories, those that exist."""
    out_dir = Path(out_dir)
    return [d for d in (out_dir, *(out_dir / s for s in SUBDIRS)) if d.is_dir()]


@dataclass
class SwitchFiles:
    """The captures of one switch found in a run directory (either part may be missing)."""

    name: str
    log: Path | None = None
    pcaps: dict[tuple[str, str], Path] = field(default_factory=dict)   # (iface, in|out) -> file
    ports: dict[str, int] = field(default_factory=dict)                 # iface -> port

    def port_of(self, iface: str) -> int | None:
        if iface in self.ports:
            return self.ports[iface]
        match = _PORT_IN_NAME.search(iface)
        return int(match.group(1)) if match else None


def _is_switch_log(path: Path) -> bool:
    try:
        with open(path, encoding="utf-8", errors="replace") as handle:
            first = handle.readline()
    except OSError:
        return False
    return first == "" or bool(_LOG_LINE.match(first))


def find_switches(out_dir: Path) -> list[SwitchFiles]:
    """Every switch with a log or captures under OUT (see `trace_dirs`), sorted by name."""
    found: dict[str, SwitchFiles] = {}
    for directory in trace_dirs(out_dir):
        for path in sorted(directory.glob("*.log")):
            if _is_switch_log(path):
                found.setdefault(path.stem, SwitchFiles(path.stem)).log = path
        for capture_dir in sorted(directory.glob("*-pcap")):
            if not capture_dir.is_dir():
                continue
            files = found.setdefault(capture_dir.name[:-len("-pcap")],
                                     SwitchFiles(capture_dir.name[:-len("-pcap")]))
            for pcap in sorted(capture_dir.glob("*.pcap")):
                iface, sep, direction = pcap.stem.rpartition("_")
                if sep and direction in ("in", "out"):
                    files.pcaps[(iface, direction)] = pcap
            files.ports.update(_read_ports(ports_path(directory, files.name)))
    return [found[name] for name in sorted(found)]


def _read_ports(path: Path) -> dict[str, int]:
    if not path.exists():
        return {}
    try:
        doc = json.loads(path.read_text())
        return {str(iface): int(port) for port, iface in doc.items()}
    except (OSError, ValueError, TypeError, AttributeError) as error:
        raise TraceError(f"{path}: expected {{\"PORT\": \"IFACE\", ...}}: {error}") from None


class SwitchRecorder:
    """Log + pcaps of one switch, in the layout above, stamped with `clock` (e.g. virtual time).

        rec = SwitchRecorder(run_dir, "s1", {1: "s1-eth1", 2: "s1-eth2"}, clock=loop.clock)
        switch.trace = rec.trace          # the pipeline's per-packet log
        rec.arrived(port, frame)          # a frame reached the switch on `port`
        rec.departed(port, frame)         # a frame left on `port`
        rec.lost(port, "in"|"out", frame) # a link lost it on its way in / out of `port`
        rec.close()

    A frame lost on its way in is also written to `<iface>_in.pcap`, one lost on its way out
    is not written to `_out.pcap`: the same convention as `inaemu switch`'s captures.
    """

    def __init__(self, run_dir: Path, switch: str, ports: dict[int, str], *,
                 clock: Callable[[], float]) -> None:
        from p4switch.ports.capture import PcapCapture
        from p4switch.runtime.trace import TextTrace
        run_dir = Path(run_dir)
        run_dir.mkdir(parents=True, exist_ok=True)
        ports_path(run_dir, switch).write_text(
            json.dumps({str(p): name for p, name in sorted(ports.items())}, indent=1))
        self._log: TextIO = open(log_path(run_dir, switch), "w", encoding="utf-8")
        self.trace = TextTrace(self._log, clock=clock)
        self._capture = PcapCapture(pcap_dir(run_dir, switch), dict(ports), clock=clock)

    def arrived(self, port: int, data: bytes) -> None:
        self._capture.arrived(port, data)

    def departed(self, port: int, data: bytes) -> None:
        self._capture.departed(port, data)

    def lost(self, port: int, direction: str, data: bytes) -> None:
        if direction not in ("in", "out"):
            raise ValueError(f"direction must be 'in' or 'out', got {direction!r}")
        if direction == "in":
            self._capture.arrived(port, data)
        self.trace.link_loss(port, direction, data)

    def close(self) -> None:
        self._capture.close()
        if not self._log.closed:
            self._log.close()
