"""Back-pressure in the simulator: a switch port behind a shaped link holds what its socket
refuses, so the queue builds in the switch's egress queue, where P4 sees it, not in the link.

The same experiment as tests/ports/test_backpressure_shaped.py, in virtual time: a 512 kbit/s
link on port 2, a flood of 1400-byte frames at 200 pps into port 1 and 20 pps of ECN-capable
100-byte probes into port 3 for 5 s, through tests/ports/backpressure.p4 (deq_qdepth written
into the packet, ECN marked from enq_qdepth 10). Real simple_switch on veths measured: deq_qdepth
up to 63, 48 % of the probes that got through marked, 479 flood frames through, ~99 frames in
the qdisc at most, nothing dropped by the link."""

from __future__ import annotations

import random
import struct
from pathlib import Path

import pytest

from p4switch.compiler import compile_file

from inaemu.sim.events import EventLoop
from inaemu.sim.link import LinkDirection
from inaemu.sim.switch_node import SwitchCost, SwitchNode

PROGRAM = Path(__file__).parents[1] / "ports" / "backpressure.p4"
SECONDS = 5.0


def frame(sport: int, size: int, tos: int) -> bytes:
    payload = bytes(size - 14 - 20 - 8)
    udp = struct.pack("!HHHH", sport, 7777, 8 + len(payload), 0) + payload
    ip = struct.pack("!BBHHHBBH4s4s", 0x45, tos, 20 + len(udp), 1, 0, 64, 17, 0,
                     bytes([10, 7, 0, 1]), bytes([10, 7, 0, 2]))
    return bytes.fromhex("0000000700020000000700010800") + ip + udp


@pytest.fixture(scope="module")
def run():
    loop = EventLoop()
    node = SwitchNode(loop, "s1", 1, cost=SwitchCost(0, 0, 0))
    node.switch.load_config(compile_file(str(PROGRAM)).bmv2)
    received: list[bytes] = []
    link = LinkDirection(loop, "s1:2", "h2:1", bw_bps=512e3, delay_s=0.0, loss=0.0,
                         rng=random.Random(1), deliver=received.append)
    node.attach_egress(2, link)
    backlog = []
    flood, probe = frame(1111, 1400, 0), frame(2222, 100, 1)
    for i in range(int(SECONDS * 200)):
        loop.at(i / 200, node.ingress(1), flood)
    for i in range(int(SECONDS * 20)):
        loop.at(i / 20 + 1e-4, node.ingress(3), probe)
    for i in range(int(SECONDS * 20)):
        loop.at(i / 20 + 2e-4, lambda: backlog.append(len(link._backlog)))
    assert loop.run(until=60.0) == "idle"
    return node, link, received, backlog


def test_the_queue_builds_in_the_switch_not_in_the_link(run):
    node, link, received, backlog = run
    rows = [(int.from_bytes(d[34:36], "big"), int.from_bytes(d[42:46], "big"), d[15] & 3)
            for d in received]
    probes = [row for row in rows if row[0] == 2222]
    flood_out = sum(row[0] == 1111 for row in rows)
    assert max(row[1] for row in rows) == 63
    assert link.counters.dropped_queue == 0                 # the link dropped nothing
    assert node.switch.queue_drops()[2] > 400               # the egress queue's tail did
    assert 90 <= max(backlog) <= 110                        # what the send buffer pays for
    marked = sum(row[2] == 3 for row in probes) / len(probes)
    assert abs(marked - 0.48) <= 0.12, marked               # BMv2 on veths: 0.48
    assert abs(flood_out - 479) <= 479 * 0.1, flood_out     # BMv2 on veths: 479


def test_the_queue_starts_once_the_socket_and_the_output_stage_are_full(run):
    _, _, received, _ = run
    depths = [int.from_bytes(d[42:46], "big") for d in received]
    # ~99 frames in the qdisc and ~130 past egress come first, unqueued (BMv2 on veths: the
    # first queued one was the 261st to 270th out); the queue has drained at the end
    first_queued = next(i for i, depth in enumerate(depths) if depth)
    assert 230 <= first_queued <= 290, first_queued
    assert depths[-1] == 0


def test_the_runtime_always_knows_the_room_the_output_stage_has():
    """After every flush of the output stage the runtime's room is the stage's free places
    (less the copies of the frame in service): the runtime spends its own copy as it admits
    packets, so the switch tells it the room after every flush, not only when it changed."""
    loop = EventLoop()
    node = SwitchNode(loop, "s1", 1, cost=SwitchCost(0, 0, 0))
    node.switch.load_config(compile_file(str(PROGRAM)).bmv2)
    link = LinkDirection(loop, "s1:2", "h2:1", bw_bps=512e3, delay_s=0.0, loss=0.0,
                         rng=random.Random(1), deliver=lambda frame: None)
    node.attach_egress(2, link)
    mismatches = []
    flush = node._flush_output

    def checked_flush() -> None:
        flush()
        room = node.output.room()
        if room is not None:
            room = max(0, room - node._in_service)
        if node.switch.queues.room != room:
            mismatches.append((loop.now, node.switch.queues.room, room))

    node._flush_output = checked_flush
    flood = frame(1111, 1400, 0)
    for i in range(1000):
        loop.at(i / 200, node.ingress(1), flood)
    assert loop.run(until=60.0) == "idle"
    assert node.switch.queue_drops()[2] > 400 and mismatches == []
