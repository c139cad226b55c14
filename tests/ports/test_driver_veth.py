"""The packet driver on real veth pairs (root): raw sockets, batching, packet-in/out, stop.

The switch is a test double with the runtime's packet API, so this checks the socket layer and
the event loop alone; test_switch_veth.py runs the whole `inaemu switch` with the real runtime.
"""

from __future__ import annotations

import threading

import pytest

from p4switch.driver import PacketDriver
from p4switch.ports.forwarding import Forwarder
from p4switch.ports.impairment import ImpairmentPlan
from p4switch.ports.rawsock import RawSocketPort

from .vethnet import VethNet, receive_frames

ETHER_TYPE = 0x88B5
CPU_PORT = 64


class RouteDouble:
    """1 -> 2, 2 -> 1, 3 -> CPU, CPU -> 1 and 2."""

    routes = {1: [2], 2: [1], 3: [CPU_PORT], CPU_PORT: [1, 2]}

    def __init__(self) -> None:
        self.lock = threading.RLock()

    def receive_batch(self, items):
        return [(target, data) for port, data in items for target in self.routes.get(port, [])]


def frame(seq: int, src: int = 1) -> bytes:
    header = bytes.fromhex("020000000002") + bytes([2, 0, 0, 0, 0, src])
    return header + ETHER_TYPE.to_bytes(2, "big") + seq.to_bytes(4, "big") + bytes(46)


@pytest.fixture
def net():
    network = VethNet(3)
    yield network
    network.close()


def start_driver(net: VethNet, plan: ImpairmentPlan = ImpairmentPlan()):
    ports = [RawSocketPort(n, name) for n, name in net.switch_ends.items()]
    forwarder = Forwarder(RouteDouble(), [1, 2, 3], plan=plan, cpu_port=CPU_PORT)
    packet_ins: list[bytes] = []
    driver = PacketDriver(forwarder, ports, packet_in=packet_ins.append)
    thread = threading.Thread(target=driver.run, daemon=True)
    thread.start()
    return driver, thread, ports, packet_ins


def stop_driver(driver, thread, ports) -> None:
    driver.stop()
    thread.join(timeout=10)
    assert not thread.is_alive(), "driver.run() did not return after stop()"
    for port in ports:
        port.close()
    driver.close()


@pytest.mark.root
def test_frames_cross_the_driver_in_order(net):
    driver, thread, ports, packet_ins = start_driver(net)
    try:
        h1, h2, h3 = (net.host_socket(n) for n in (1, 2, 3))
        sent = [frame(i) for i in range(300)]
        for data in sent:
            h1.send(data)
        assert receive_frames(h2, ETHER_TYPE, expected=300) == sent
        h2.send(frame(7, src=2))
        assert receive_frames(h1, ETHER_TYPE, expected=1) == [frame(7, src=2)]
        h3.send(frame(8, src=3))
        driver.packet_out(frame(9, src=9))
        assert receive_frames(h1, ETHER_TYPE, expected=1) == [frame(9, src=9)]
        assert receive_frames(h2, ETHER_TYPE, expected=1) == [frame(9, src=9)]
        assert packet_ins == [frame(8, src=3)]
        for sock in (h1, h2, h3):
            sock.close()
    finally:
        stop_driver(driver, thread, ports)
    counters = driver.forwarder.counters
    assert (counters[1].rx, counters[2].tx) == (300, 301)
    assert (counters[CPU_PORT].rx, counters[CPU_PORT].tx) == (1, 1)


@pytest.mark.root
def test_delayed_frames_arrive_in_order(net):
    driver, thread, ports, _ = start_driver(net, ImpairmentPlan.from_options(None, ["2:20"]))
    try:
        h1, h2 = net.host_socket(1), net.host_socket(2)
        sent = [frame(i) for i in range(50)]
        for data in sent:
            h1.send(data)
        assert receive_frames(h2, ETHER_TYPE, expected=50) == sent
        h1.close()
        h2.close()
    finally:
        stop_driver(driver, thread, ports)
    assert driver.forwarder.held == 0
