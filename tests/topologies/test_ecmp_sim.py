"""ECMP end to end without root: a simulated leaf-spine of p4src/l3_forward.p4 switches, configured
only over P4Runtime by the controller. Each UDP or TCP flow between two leaves crosses exactly one
spine, the one crc16(5-tuple) mod 2 names, every packet of a flow the same one, and the flows
spread over both spines."""

from __future__ import annotations

import pytest

from controller.fabric import Fabric
from inaemu.sim import control
from inaemu.sim.frames import PROTO_TCP, PROTO_UDP, ip_bytes
from inaemu.sim.network import SimNetwork
from inaemu.sim.switch_node import SwitchCost
from tests.ina.packets import ecmp_member, ip
from topologies.builders import fat_tree, leaf_spine

COST = SwitchCost(per_packet_s=10e-6, per_byte_s=0.0, per_copy_s=5e-6)
SPINE_LINKS = ("l1:3->sp1:1", "l1:4->sp2:1")   # leaf l1: hosts on 1-2, spines on 3-4
PACKETS_PER_FLOW = 3


@pytest.fixture(scope="module")
def l3_program() -> control.Program:
    return control.compile_program(str(control.L3_PROGRAM))


def _network(program: control.Program) -> SimNetwork:
    net = SimNetwork(leaf_spine(2, 2, 2, bw=1000), seed=1, switch_cost=COST)
    try:
        with Fabric(net.start_servers(), timeout=10.0) as fabric:
            control.push_program(fabric, program)
            assert control.install_host_routes(fabric) == 16
    finally:
        net.stop_servers()
    return net


def _delivered(net: SimNetwork) -> list[int]:
    return [net.links[name].counters.delivered_packets for name in SPINE_LINKS]


def test_flows_between_leaves_take_the_spine_their_hash_names(l3_program):
    net = _network(l3_program)
    h1, h3 = net.hosts["h1"], net.hosts["h3"]
    received: list[int] = []
    h3.listen(PROTO_UDP, 9000, lambda d: received.append(d.sport))
    flows = [(PROTO_UDP, sport) for sport in range(40000, 40008)] + \
            [(PROTO_TCP, sport) for sport in range(50000, 50004)]
    ident = 0
    chosen: list[int] = []
    for proto, sport in flows:
        before = _delivered(net)
        for _ in range(PACKETS_PER_FLOW):
            ident += 1
            if proto == PROTO_UDP:
                frame = h1.addressing.udp_frame(ip_bytes("10.0.0.3"), sport, 9000, b"x" * 64, ident)
            else:
                frame = h1.addressing.tcp_frame(ip_bytes("10.0.0.3"), sport, 9000, 1, 0, 0x10,
                                                b"", b"y" * 64, ident)
            net.loop.at(net.loop.now, h1.send_frame, frame)
        net.loop.run(until=net.loop.now + 0.01)
        after = _delivered(net)
        moved = [a - b for a, b in zip(after, before)]
        spine = ecmp_member(ip("10.0.0.1"), ip("10.0.0.3"), proto, sport, 9000, 2)
        assert moved[spine] == PACKETS_PER_FLOW and moved[1 - spine] == 0, (proto, sport, moved)
        chosen.append(spine)
    assert set(chosen) == {0, 1}                          # both spines carried flows
    assert sorted(received) == sorted(s for p, s in flows for _ in range(PACKETS_PER_FLOW)
                                      if p == PROTO_UDP)  # and every UDP packet arrived


def test_fat_tree_flows_spread_over_every_core(l3_program):
    """h1 -> h16 crosses edge e0_0 (hash shift 0: which aggregation switch) and then a0_0 or
    a0_1 (shift 1: which of its two cores). Had both tiers used the same hash bits, the flows
    that reached a0_0 would all pick c0 and those at a0_1 all c3 (polarisation)."""
    net = SimNetwork(fat_tree(4, bw=1000), seed=1, switch_cost=COST)
    try:
        with Fabric(net.start_servers(), timeout=10.0) as fabric:
            control.push_program(fabric, l3_program)
            control.install_host_routes(fabric)
    finally:
        net.stop_servers()
    up = ["a0_0:3->c0:1", "a0_0:4->c1:1", "a0_1:3->c2:1", "a0_1:4->c3:1"]
    h1 = net.hosts["h1"]
    for n, sport in enumerate(range(43000, 43032)):
        before = [net.links[name].counters.delivered_packets for name in up]
        frame = h1.addressing.udp_frame(ip_bytes("10.0.0.16"), sport, 9000, b"z" * 64, n + 1)
        net.loop.at(net.loop.now, h1.send_frame, frame)
        net.loop.run(until=net.loop.now + 0.01)
        moved = [net.links[name].counters.delivered_packets - b for name, b in zip(up, before)]
        agg = ecmp_member(ip("10.0.0.1"), ip("10.0.0.16"), PROTO_UDP, sport, 9000, 2, shift=0)
        core = ecmp_member(ip("10.0.0.1"), ip("10.0.0.16"), PROTO_UDP, sport, 9000, 2, shift=1)
        expected = [0, 0, 0, 0]
        expected[2 * agg + core] = 1
        assert moved == expected, (sport, moved)
    assert all(net.links[name].counters.delivered_packets > 0 for name in up)
