"""In-process ports: a switch whose links are Python calls, for tests and the simulator.

Same impairment model, counters and pcap captures as `inaemu switch` on sockets (they share the
`Forwarder`), but no sockets and no threads. Time comes from `clock` (monotonic seconds by
default); a simulator passes its virtual clock and calls `poll()` when it advances time. The
captures are stamped with that clock too when one is given (virtual time), else with wall time,
as `inaemu switch` stamps them.

    ports = InProcessPorts(switch, [1, 2], plan=ImpairmentPlan.from_options(["0.1"], None))
    ports.send(1, frame)
    ports.take(2)           # -> frames that left on port 2
"""

from __future__ import annotations

import time
from collections import defaultdict
from pathlib import Path
from typing import Callable, Iterable

from p4switch.ports.capture import PcapCapture
from p4switch.ports.forwarding import Forwarder, PortCounters
from p4switch.ports.impairment import ImpairmentPlan

OutputHandler = Callable[[int, bytes], None]


class InProcessPorts:
    """Ports numbered `ports` on `switch`; outputs go to `on_output` or to per-port outboxes."""

    def __init__(self, switch, ports: Iterable[int], *, plan: ImpairmentPlan = ImpairmentPlan(),
                 seed: int = 0, cpu_port: int | None = None,
                 clock: Callable[[], float] | None = None,
                 on_output: OutputHandler | None = None,
                 pcap_dir: str | Path | None = None, names: dict[int, str] | None = None) -> None:
        port_list = sorted(set(ports))
        self.names = names or {port: f"port{port}" for port in port_list}
        self.clock = clock or time.monotonic
        self._capture = (PcapCapture(pcap_dir, self.names, clock=clock or time.time)
                         if pcap_dir is not None else None)
        self.forwarder = Forwarder(switch, port_list, plan=plan, seed=seed, cpu_port=cpu_port,
                                   tap=self._capture)
        self._on_output = on_output
        self._outboxes: dict[int, list[bytes]] = defaultdict(list)

    @property
    def counters(self) -> dict[int, PortCounters]:
        return self.forwarder.counters

    def send(self, port: int, data: bytes) -> None:
        """A frame arrives on `port` now; whatever leaves immediately is delivered."""
        self.send_many([(port, data)])

    def send_many(self, arrivals: list[tuple[int, bytes]]) -> None:
        """Several frames arrive now, in order (one pipeline batch)."""
        now = self.clock()
        self._deliver(self.forwarder.release(now))
        self._deliver(self.forwarder.forward(list(arrivals), now))

    def poll(self) -> int:
        """Deliver delayed frames and egress-queue departures due by the clock (the switch's
        clock must be this one); returns how many."""
        due = self.forwarder.release(self.clock())
        self._deliver(due)
        return len(due)

    def next_due(self) -> float | None:
        """Clock time at which the next delayed or queued frame is due, or None."""
        return self.forwarder.next_due()

    def take(self, port: int) -> list[bytes]:
        """Frames that left on `port` since the last `take`, in order."""
        return self._outboxes.pop(port, [])

    def take_all(self) -> dict[int, list[bytes]]:
        """Frames that left on every port since the last call, by port."""
        outboxes, self._outboxes = dict(self._outboxes), defaultdict(list)
        return outboxes

    def close(self) -> None:
        """Flush and close the captures (if any)."""
        if self._capture is not None:
            self._capture.close()

    def _deliver(self, departures: list[tuple[int, bytes]]) -> None:
        if self._on_output is not None:
            for port, data in departures:
                self._on_output(port, data)
        else:
            for port, data in departures:
                self._outboxes[port].append(data)

    def __enter__(self) -> "InProcessPorts":
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.close()
