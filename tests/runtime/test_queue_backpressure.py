"""Egress queues under back-pressure (`EgressQueues.set_room`, `Switch.set_output_room`): while
the ports' output stage is full, packets wait in their egress queue, where P4 sees the depth
(enq_qdepth/deq_qdepth), the queue drops at its tail when full, and packets leave in order as
room comes back, as simple_switch's do behind a blocked send. The same for the Python and the
native (C) packet code. tests/ports/backpressure.p4 writes deq_qdepth into a probe header and
marks ECN-capable packets from enq_qdepth 10 on."""

from __future__ import annotations

import struct
from pathlib import Path

import pytest

from p4switch.compiler import compile_file
from p4switch.runtime import Switch
from p4switch.runtime.errors import InvalidArgument
from p4switch.runtime.state.queues import ADMIT_NOW, DROPPED, QUEUED, EgressQueues

PROGRAM = Path(__file__).parents[1] / "ports" / "backpressure.p4"


# -- the queue state machine alone ---------------------------------------------------------------
def test_without_room_a_packet_waits_even_with_no_rate_and_keeps_fifo_order():
    queues = EgressQueues()
    assert queues.enqueue(2, 0, 0.0, "a") == (ADMIT_NOW, 0)     # no bound: straight through
    queues.set_room(0)
    assert queues.active and queues.next_due() is None           # wait for a port, not a time
    assert queues.enqueue(2, 0, 0.0, "b") == (QUEUED, 0)
    assert queues.enqueue(2, 0, 0.0, "c") == (QUEUED, 1)
    assert queues.pop_due(1.0) is None
    queues.set_room(1)
    # room for one: the one ahead leaves, a newcomer may not overtake the one still waiting
    assert queues.pop_due(1.0)[3:] == ("b", 1)
    assert queues.room == 0 and queues.pop_due(1.0) is None
    queues.set_room(5)
    assert queues.enqueue(2, 0, 1.0, "d") == (QUEUED, 1)
    assert [queues.pop_due(1.0)[3] for _ in range(2)] == ["c", "d"]
    assert queues.enqueue(2, 0, 1.0, "e") == (ADMIT_NOW, 0)     # empty again: takes a place
    assert queues.room == 2
    queues.set_room(None)
    assert not queues.active


def test_a_full_queue_drops_at_its_tail_while_the_ports_are_blocked():
    queues = EgressQueues()
    queues.set_depth(3)
    queues.set_room(0)
    verdicts = [queues.enqueue(1, 0, 0.0, i)[0] for i in range(5)]
    assert verdicts == [QUEUED] * 3 + [DROPPED] * 2 and queues.dropped == {1: 2}


def test_room_is_shared_by_every_port_as_bmv2s_output_buffer_is():
    queues = EgressQueues()
    queues.set_room(0)
    queues.enqueue(1, 0, 0.0, "p1")
    queues.enqueue(2, 0, 0.0, "p2")
    queues.set_room(1)
    assert queues.pop_due(0.0)[3] == "p1" and queues.pop_due(0.0) is None


@pytest.mark.parametrize("room", [-1, 1.5, True, "3"])
def test_a_bad_room_says_what_is_wrong(room):
    with pytest.raises(InvalidArgument, match="output room"):
        EgressQueues().set_room(room)


# -- through the whole switch, Python and native -------------------------------------------------
class FakeClock:
    now = 0.0

    def __call__(self) -> float:
        return self.now


def frame(sport: int, tos: int) -> bytes:
    udp = struct.pack("!HHHH", sport, 7777, 8 + 4 + 20, 0) + bytes(24)
    ip = struct.pack("!BBHHHBBH4s4s", 0x45, tos, 20 + len(udp), 1, 0, 64, 17, 0,
                     bytes([10, 7, 0, 1]), bytes([10, 7, 0, 2]))
    return bytes.fromhex("0000000700020000000700010800") + ip + udp


def seen(data: bytes) -> tuple[int, int, int]:
    """(source port, deq_qdepth written by egress, ecn)"""
    return int.from_bytes(data[34:36], "big"), int.from_bytes(data[42:46], "big"), data[15] & 3


@pytest.fixture(scope="module")
def config():
    return compile_file(str(PROGRAM)).bmv2


@pytest.mark.parametrize("native", [False, True])
def test_a_blocked_output_fills_the_queue_that_p4_sees_and_marks(config, native, monkeypatch,
                                                                  tmp_path):
    monkeypatch.setenv("INAEMU_NATIVE", "1" if native else "0")
    monkeypatch.setenv("INAEMU_NATIVE_CACHE", str(tmp_path / "native"))
    sw = Switch(config)
    assert ("egress" in sw.program.untraced.native_in_use) == native
    sw.clock = FakeClock()
    out = sw.receive(1, frame(1, 1))
    assert [seen(d) for _, d in out] == [(1, 0, 1)]           # nothing blocked: depth 0
    sw.set_output_room(0)                                     # port 2's socket is full
    for i in range(70):
        assert sw.receive(3, frame(100 + i, 1)) == []
    assert sw.queue_occupancy(2) == 64 and sw.queue_drops() == {2: 6}
    sw.set_output_room(3)
    left = [seen(d) for _, d in sw.release_queued()]
    # three leave, in arrival order, each seeing the depth it left behind; the eleventh
    # arrival and later found >= 10 waiting and were marked, the first ones were not
    assert left == [(100, 63, 1), (101, 62, 1), (102, 61, 1)]
    sw.set_output_room(None)
    rest = [seen(d) for _, d in sw.release_queued()]
    assert [r[0] for r in rest] == list(range(103, 164)) and rest[-1][1] == 0
    assert {r[2] for r in rest[:7]} == {1} and {r[2] for r in rest[7:]} == {3}
    assert sw.queue_occupancy(2) == 0
