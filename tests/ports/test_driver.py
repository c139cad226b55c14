"""The packet driver's event loop without root: ports are datagram socketpairs.

Checks what the loop itself promises: batches through the forwarder, packet-out from another
thread wakes it, delayed packets leave when due with no traffic to wake the loop, and `stop()`
from another thread returns `run()`.
"""

from __future__ import annotations

import select
import socket
import threading

import pytest

from p4switch.driver import PacketDriver
from p4switch.ports.forwarding import Forwarder
from p4switch.ports.impairment import ImpairmentPlan

CPU_PORT = 64


class PairPort:
    """A switch port whose wire is a SOCK_DGRAM socketpair; the test holds the far end."""

    def __init__(self, port: int) -> None:
        self.port = port
        self._near, self.far = socket.socketpair(socket.AF_UNIX, socket.SOCK_DGRAM)
        self._near.setblocking(False)

    def fileno(self) -> int:
        return self._near.fileno()

    def receive_batch(self, limit: int) -> list[bytes]:
        frames = []
        while len(frames) < limit:
            try:
                frames.append(self._near.recv(65536))
            except BlockingIOError:
                break
        return frames

    def send(self, data: bytes) -> bool:
        self._near.send(data)
        return True

    def read_far(self, count: int, timeout: float = 10.0) -> list[bytes]:
        frames = []
        while len(frames) < count:
            ready, _, _ = select.select([self.far], [], [], timeout)
            if not ready:
                break
            frames.append(self.far.recv(65536))
        return frames

    def close(self) -> None:
        self._near.close()
        self.far.close()


class RouteDouble:
    routes = {1: [2], 2: [1], 3: [CPU_PORT], CPU_PORT: [1]}

    def __init__(self) -> None:
        self.lock = threading.RLock()
        self.batch_sizes: list[int] = []

    def receive_batch(self, items):
        assert self.lock._is_owned()
        self.batch_sizes.append(len(items))
        return [(target, data) for port, data in items for target in self.routes.get(port, [])]


@pytest.fixture
def rig():
    ports = {n: PairPort(n) for n in (1, 2, 3)}
    switch = RouteDouble()

    def start(plan: ImpairmentPlan = ImpairmentPlan(), batch_limit: int = 64):
        forwarder = Forwarder(switch, ports, plan=plan, cpu_port=CPU_PORT)
        packet_ins: list[bytes] = []
        driver = PacketDriver(forwarder, list(ports.values()), packet_in=packet_ins.append,
                              batch_limit=batch_limit)
        thread = threading.Thread(target=driver.run, daemon=True)
        thread.start()
        started.append((driver, thread))
        return driver, packet_ins

    started: list = []
    yield ports, switch, start
    for driver, thread in started:
        driver.stop()
        thread.join(10)
        assert not thread.is_alive(), "run() did not return after stop()"
        driver.close()
    for port in ports.values():
        port.close()


def test_frames_are_forwarded_in_bounded_batches(rig):
    ports, switch, start = rig
    for i in range(100):
        ports[1].far.send(b"frame%d" % i)   # queued before the loop runs: one big backlog
    driver, _ = start(batch_limit=16)
    assert ports[2].read_far(100) == [b"frame%d" % i for i in range(100)]
    assert max(switch.batch_sizes) <= 16
    assert driver.forwarder.counters[1].rx == 100 and driver.forwarder.counters[2].tx == 100


def test_packet_out_from_another_thread_and_packet_in(rig):
    ports, _, start = rig
    driver, packet_ins = start()
    sender = threading.Thread(target=driver.packet_out, args=(b"from-controller",))
    sender.start()
    sender.join()
    assert ports[1].read_far(1) == [b"from-controller"]
    ports[3].far.send(b"to-controller")
    ports[1].far.send(b"marker")            # processed after port 3's frame or with it
    assert ports[2].read_far(1) == [b"marker"]
    assert packet_ins == [b"to-controller"]


def test_delayed_frames_leave_without_other_traffic(rig):
    ports, _, start = rig
    driver, _ = start(ImpairmentPlan.from_options(None, ["2:30"]))
    ports[1].far.send(b"late")
    assert ports[2].read_far(1, timeout=5.0) == [b"late"]
    assert driver.forwarder.held == 0


def test_packet_out_without_cpu_port_is_counted_not_injected(rig):
    ports, switch, _ = rig
    forwarder = Forwarder(switch, ports)
    driver = PacketDriver(forwarder, list(ports.values()))
    driver.packet_out(b"nowhere")
    assert driver.packet_outs_dropped == 1
    driver.close()
