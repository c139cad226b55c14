"""Egress queues drained by the port side: in-process ports on an injected clock, and the
socket driver's event loop sleeping until the next departure (no spinning, no traffic needed)."""

from __future__ import annotations

import struct
import threading
import time
from pathlib import Path

import pytest

from p4switch.compiler import compile_file
from p4switch.driver import PacketDriver
from p4switch.ports import InProcessPorts
from p4switch.ports.errors import PortConfigError
from p4switch.ports.forwarding import Forwarder
from p4switch.ports.queue_options import QueuePlan
from p4switch.runtime import Switch
from tests.ports.test_driver import PairPort

PROGRAM = Path(__file__).parents[1] / "runtime" / "queue_telemetry.p4"


@pytest.fixture(scope="module")
def config():
    return compile_file(str(PROGRAM)).bmv2


def frame(port: int) -> bytes:
    return bytes([port, 0]) + bytes(22)


def enq_depth(data: bytes) -> int:
    return struct.unpack_from("!I", data, 6)[0]


class FakeClock:
    def __init__(self) -> None:
        self.now = 10.0

    def __call__(self) -> float:
        return self.now


def test_in_process_ports_drain_the_queue_on_their_clock(config):
    clock = FakeClock()
    switch = Switch(config)
    switch.clock = clock
    switch.set_queue_rate(100, 2)
    switch.set_queue_depth(5, 2)
    ports = InProcessPorts(switch, [1, 2], clock=clock)
    for _ in range(8):
        ports.send(1, frame(2))
    assert len(ports.take(2)) == 1              # the first leaves at once, 5 wait, 2 dropped
    assert ports.next_due() == pytest.approx(10.01)
    assert ports.poll() == 0                    # nothing due yet
    clock.now = 10.0301
    assert ports.poll() == 3
    assert [enq_depth(f) for f in ports.take(2)] == [0, 1, 2]
    assert ports.counters[2].tx == 4
    lines = ports.forwarder.summary_lines()
    assert "egress queue full, dropped: port 2 2" in lines
    assert ports.forwarder.discard_held() == 2 and ports.next_due() is None


def test_queue_options_parse_and_apply_broad_scopes_first(config):
    plan = QueuePlan.from_options(["2:0:7", "9"], ["3:100", "1000"])
    switch = Switch(config, priority_queues=2)
    plan.apply(switch)
    assert switch.get_queue_depth(2, 0) == 7 and switch.get_queue_depth(2, 1) == 9
    assert switch.get_queue_rate(3, 1) == 100 and switch.get_queue_rate(4) == 1000
    assert plan.ports_named() == {2, 3}
    for bad in (["x"], ["1:2:3:4"], ["-1"], ["600:5"], ["1:9:5"]):
        with pytest.raises(PortConfigError):
            QueuePlan.from_options(bad, None)
    with pytest.raises(PortConfigError, match="priority"):
        QueuePlan.from_options(["2:1:5"], None).apply(Switch(config))   # one queue per port


def test_the_driver_drains_at_the_rate_without_traffic_and_then_sleeps(config):
    switch = Switch(config)
    switch.set_queue_rate(200, 2)               # 5 ms per packet
    ports = {n: PairPort(n) for n in (1, 2)}
    driver = PacketDriver(Forwarder(switch, ports), list(ports.values()))
    turns = 0
    original_turn = driver._turn

    def counted_turn(selector):
        nonlocal turns
        turns += 1
        original_turn(selector)

    driver._turn = counted_turn
    thread = threading.Thread(target=driver.run, daemon=True)
    thread.start()
    try:
        for _ in range(20):
            ports[1].far.send(frame(2))
        got = ports[2].read_far(20, timeout=10.0)
        assert len(got) == 20
        depths = [enq_depth(f) for f in got]
        assert depths[0] == 0 and max(depths) >= 10    # the queue built up
        time.sleep(0.1)                         # the loop goes back into select
        settled = turns
        assert settled <= 3 * 20                # one wake-up per departure or so, no spinning
        time.sleep(0.2)
        assert turns == settled                 # empty queue: blocked in select, no timer
    finally:
        driver.stop()
        thread.join(10)
        driver.close()
        for port in ports.values():
            port.close()
    assert not thread.is_alive()
