"""A simulated switch drains its runtime's egress queues on the virtual clock."""

from __future__ import annotations

import struct
from pathlib import Path

from p4switch.compiler import compile_file

from inaemu.sim.events import EventLoop
from inaemu.sim.switch_node import SwitchCost, SwitchNode

PROGRAM = Path(__file__).parents[1] / "runtime" / "queue_telemetry.p4"


class Wire:
    """Stands in for a link direction: records (virtual time, frame)."""

    def __init__(self, loop: EventLoop) -> None:
        self.loop = loop
        self.sent: list[tuple[float, bytes]] = []

    def send(self, frame: bytes) -> None:
        self.sent.append((self.loop.now, frame))

    def writable(self) -> bool:        # an unshaped link: its socket always takes a frame
        return True


def test_queued_copies_leave_at_the_rate_in_virtual_time():
    loop = EventLoop()
    node = SwitchNode(loop, "s1", 1, cost=SwitchCost(0, 0, 0))
    node.switch.load_config(compile_file(str(PROGRAM)).bmv2)
    node.switch.set_queue_rate(1000, 2)        # 1 ms per packet
    wire = Wire(loop)
    node.egress[2] = wire
    deliver = node.ingress(1)
    for i in range(10):                        # 10 frames 0.1 ms apart
        loop.at(i * 1e-4, deliver, bytes([2, 0]) + bytes(22))
    assert loop.run(until=1.0) == "idle"
    times = [t for t, _ in wire.sent]
    assert len(times) == 10
    assert [round(t * 1e3, 6) for t in times] == [float(k) for k in range(10)]
    depths = [struct.unpack_from("!I", frame, 6)[0] for _, frame in wire.sent]
    assert depths == [0] + list(range(9))       # all arrive before the second departure
    deltas = [struct.unpack_from("!I", frame, 10)[0] for _, frame in wire.sent]
    assert deltas == [0] + [round(k * 1000 - k * 100) for k in range(1, 10)]
