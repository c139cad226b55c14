"""Two hosts exchange UDP frames through one simulated switch running p4src/l3_forward.p4,
configured over P4Runtime by the controller: routing works and the timing is the model's."""

from __future__ import annotations

import pytest

from controller.fabric import Fabric
from inaemu.sim import control
from inaemu.sim.frames import PROTO_UDP, ip_bytes, parse
from inaemu.sim.network import SimNetwork
from inaemu.sim.switch_node import SwitchCost
from topologies.builders import star

ECHO_PORT = 7
COST = SwitchCost(per_packet_s=30e-6, per_byte_s=0.0, per_copy_s=10e-6)


@pytest.fixture(scope="module")
def l3_program() -> control.Program:
    return control.compile_program(str(control.L3_PROGRAM))


def build(program: control.Program, **options) -> SimNetwork:
    net = SimNetwork(star(2, bw=100, delay_ms=0.5), seed=1, switch_cost=COST, **options)
    try:
        with Fabric(net.start_servers(), timeout=10.0) as fabric:
            control.push_program(fabric, program)
            control.install_host_routes(fabric)
    finally:
        net.stop_servers()
    return net


def test_ping_through_l3_forward(l3_program) -> None:
    net = build(l3_program)
    h1, h2 = net.hosts["h1"], net.hosts["h2"]
    replies: list[tuple[float, bytes]] = []

    def echo(datagram) -> None:
        h2.send_frame(h2.addressing.udp_frame(datagram.src_ip, ECHO_PORT, datagram.sport,
                                              datagram.payload, h2.next_ident()))

    h2.listen(PROTO_UDP, ECHO_PORT, echo)
    h1.listen(PROTO_UDP, 40000, lambda d: replies.append((net.loop.now, d.payload)))
    payload = b"ping" * 364                                  # a 1498-byte frame
    frame = h1.addressing.udp_frame(ip_bytes("10.0.0.2"), 40000, ECHO_PORT, payload, 1)
    assert len(frame) == 1498
    net.loop.at(0.0, h1.send_frame, frame)
    net.loop.run(until=1.0)
    one_way = 2 * (1498 * 8 / 100e6 + 0.0005) + COST.service_time(1498, 1)
    assert replies == [(pytest.approx(2 * one_way, abs=1e-12), payload)]
    # the switch rewrote the frame as l3_forward does: destination MAC of h2, TTL - 1
    forwarded = net.links["s1:2->h2:0"].counters
    assert forwarded.delivered_packets == 1 and forwarded.delivered_bytes == 1498
    assert net.switches["s1"].counters.processed == 2
    rx, tx = net.switch_report()["s1"]["received"], net.switch_report()["s1"]["emitted"]
    assert (rx, tx) == (2, 2)


def test_the_switch_rewrites_mac_and_ttl(l3_program) -> None:
    net = build(l3_program)
    seen: list[bytes] = []
    net.links["s1:2->h2:0"].deliver = seen.append      # capture the raw frame h2 would get
    frame = net.hosts["h1"].addressing.udp_frame(ip_bytes("10.0.0.2"), 1, 2, b"hello", 9)
    net.loop.at(0.0, net.hosts["h1"].send_frame, frame)
    net.loop.run(until=1.0)
    (out,) = seen
    assert out[0:6] == bytes.fromhex("02000a000002")       # h2's MAC
    assert out[22] == frame[22] - 1                         # TTL decremented
    datagram = parse(out)
    assert datagram.payload == b"hello" and datagram.dst_ip == ip_bytes("10.0.0.2")


def test_a_busy_switch_queues_then_drops_beyond_its_input_queue(l3_program) -> None:
    net = build(l3_program, switch_queue_packets=3)
    h1 = net.hosts["h1"]
    arrived: list[float] = []
    net.hosts["h2"].listen(PROTO_UDP, 9, lambda d: arrived.append(net.loop.now))
    for i in range(6):   # all six reach the switch at the same instant
        frame = h1.addressing.udp_frame(ip_bytes("10.0.0.2"), 9, 9, bytes(18), i)
        net.loop.at(0.0, net.switches["s1"].receive, 1, frame)
    net.loop.run(until=1.0)
    service = COST.service_time(60, 1)
    assert net.switches["s1"].counters.dropped_input_queue == 2     # 1 in service + 3 queued
    assert len(arrived) == 4
    gaps = [b - a for a, b in zip(arrived, arrived[1:])]
    assert gaps == [pytest.approx(service, abs=1e-12)] * 3
