"""Per-port, per-direction pcap captures, named as BMv2's `--pcap` names them.

`<iface>_in.pcap` holds every packet that arrived on the port, including those the impairment
model then dropped on ingress (they did arrive); `<iface>_out.pcap` holds every packet that left,
so egress losses are absent from it and delayed packets appear when they actually left.
"""

from __future__ import annotations

import time
from pathlib import Path
from typing import Callable

from p4switch.ports.errors import PortConfigError
from p4switch.ports.pcap import PcapWriter


class PcapCapture:
    """A `PacketTap` writing one pcap per port and direction into a directory."""

    def __init__(self, directory: str | Path, names: dict[int, str],
                 clock: Callable[[], float] = time.time) -> None:
        self.directory = Path(directory)
        try:
            self.directory.mkdir(parents=True, exist_ok=True)
        except OSError as error:
            raise PortConfigError(f"--pcap {directory}: cannot create directory: "
                                  f"{error.strerror}") from None
        self.clock = clock
        self._in: dict[int, PcapWriter] = {}
        self._out: dict[int, PcapWriter] = {}
        try:
            for port, name in names.items():
                self._in[port] = PcapWriter(self.directory / f"{name}_in.pcap")
                self._out[port] = PcapWriter(self.directory / f"{name}_out.pcap")
        except OSError as error:
            self.close()
            raise PortConfigError(f"--pcap {directory}: cannot write captures: "
                                  f"{error.strerror}") from None

    def arrived(self, port: int, data: bytes) -> None:
        writer = self._in.get(port)
        if writer is not None:
            writer.write(data, self.clock())

    def departed(self, port: int, data: bytes) -> None:
        writer = self._out.get(port)
        if writer is not None:
            writer.write(data, self.clock())

    def close(self) -> None:
        for writer in (*self._in.values(), *self._out.values()):
            writer.close()
