"""Back-pressure through the packet driver without root: port 2's wire is a datagram socketpair
whose far end the test does not read, so its socket fills and refuses frames exactly as a
port behind a full htb qdisc does. Nothing may be lost at the socket: the driver keeps what it
refused, the output stage fills (output.CAPACITY), then the switch's egress queue (64, tail
drops beyond), and once the far end is read everything kept comes out in order, the queued
packets carrying the depth they left behind (tests/ports/backpressure.p4 writes deq_qdepth)."""

from __future__ import annotations

import socket
import threading
from pathlib import Path

import pytest

from p4switch.compiler import compile_file
from p4switch.driver import PacketDriver
from p4switch.ports.forwarding import Forwarder
from p4switch.ports.output import CAPACITY
from p4switch.runtime import Switch
from tests.ports.test_driver import PairPort
from tests.runtime.test_queue_backpressure import frame, seen

PROGRAM = Path(__file__).parent / "backpressure.p4"
EXTRA = 20                       # frames beyond what the socket, the stage and the queue hold


class BlockingPairPort(PairPort):
    """A PairPort that sends like a raw-socket port: until the socket is full, no further."""

    def transmit(self, frames: list[bytes]) -> tuple[int, int]:
        for taken, data in enumerate(frames):
            try:
                self._near.send(data)
            except BlockingIOError:
                return taken, 0
        return len(frames), 0

    def capacity_for(self, data: bytes) -> int:
        """How many frames like `data` the socket takes before refusing (then read back)."""
        count = 0
        while True:
            try:
                self._near.send(data)
            except BlockingIOError:
                break
            count += 1
        self.far.setblocking(False)
        while True:
            try:
                self.far.recv(65536)
            except BlockingIOError:
                break
        self.far.setblocking(True)
        return count


@pytest.fixture(scope="module")
def config():
    return compile_file(str(PROGRAM)).bmv2


def test_a_full_socket_holds_frames_back_into_the_egress_queue(config):
    ports = {1: PairPort(1), 2: BlockingPairPort(2), 3: PairPort(3)}
    switch = Switch(config)
    forwarder = Forwarder(switch, ports)
    driver = PacketDriver(forwarder, list(ports.values()))
    thread = threading.Thread(target=driver.run, daemon=True)
    try:
        in_kernel = ports[2].capacity_for(frame(0, 1))
        total = in_kernel + CAPACITY + 64 + EXTRA
        thread.start()
        for i in range(total):
            ports[1].far.send(frame(i, 1))
        # the last EXTRA are dropped at the full queue: everything before them is held
        wait_for(lambda: switch.queue_drops().get(2, 0) == EXTRA)
        kept = ports[2].read_far(in_kernel + CAPACITY + 64, timeout=10.0)
        got = [seen(data) for data in kept]
        assert [g[0] for g in got] == list(range(in_kernel + CAPACITY + 64))
        assert {g[1] for g in got[:in_kernel + CAPACITY]} == {0}   # never waited in a queue
        assert [g[1] for g in got[in_kernel + CAPACITY:]] == list(range(63, -1, -1))
        # ECN: the queued ones that found >= 10 waiting were marked
        assert [g[2] for g in got[in_kernel + CAPACITY:]] == [1] * 10 + [3] * 54
        assert forwarder.counters[2].tx_errors == 0
        assert ports[2].read_far(1, timeout=0.5) == []            # nothing else came out
    finally:
        driver.stop()
        if thread.is_alive():
            thread.join(10)
        driver.close()
        for port in ports.values():
            port.close()
    assert not thread.is_alive(), "run() did not return after stop()"


def wait_for(condition, timeout: float = 20.0) -> None:
    """A failure guard for a condition the driver thread makes true."""
    done = threading.Event()
    for _ in range(int(timeout / 0.01)):
        if condition():
            return
        done.wait(0.01)
    raise AssertionError("condition not reached")
