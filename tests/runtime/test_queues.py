"""Egress queues as simple_switch models them: depth, rate, queueing metadata, tail drop,
priorities; the synchronous path unchanged when no rate is set (tests/runtime/queue_telemetry.p4
writes the metadata into the packet)."""

from __future__ import annotations

import struct
from pathlib import Path

import pytest

from p4switch.compiler import compile_file
from p4switch.runtime import LpmKey, Switch
from p4switch.runtime.errors import InvalidArgument

HERE = Path(__file__).parent
TELE = struct.Struct("!BBIIII")        # then the 48-bit egress timestamp


class FakeClock:
    def __init__(self, start: float = 0.0) -> None:
        self.now = start

    def __call__(self) -> float:
        return self.now


@pytest.fixture(scope="module")
def tele_config():
    return compile_file(str(HERE / "queue_telemetry.p4")).bmv2


@pytest.fixture(scope="module")
def ecn_config():
    return compile_file(str(HERE.parent / "p4" / "ecn.p4")).bmv2


def make(config, priority_queues: int = 1):
    sw = Switch(config, priority_queues=priority_queues)
    clock = FakeClock()
    sw.clock = clock
    return sw, clock


def tele(port: int, priority: int = 0) -> bytes:
    return bytes([port, priority]) + bytes(22)


def read(frame: bytes) -> dict:
    port, prio, enq_ts, enq_depth, delta, deq_depth = TELE.unpack(frame[:18])
    egress_ts = int.from_bytes(frame[18:24], "big")
    return {"port": port, "enq_ts": enq_ts, "enq": enq_depth, "delta": delta,
            "deq": deq_depth, "egress_ts": egress_ts}


def test_without_a_rate_the_queue_is_always_empty_and_receive_is_synchronous(tele_config):
    sw, clock = make(tele_config)
    for i in range(5):
        clock.now = (i + 1) * 0.25
        out = sw.receive(1, tele(2))
        assert len(out) == 1 and out[0][0] == 2
        got = read(out[0][1])
        assert (got["enq"], got["deq"], got["delta"]) == (0, 0, 0)
        assert got["enq_ts"] == got["egress_ts"] == (i + 1) * 250000   # us since the load
    assert sw.queue_next_due() is None and sw.queue_occupancy(2) == 0


def test_a_slow_port_shows_rising_enq_qdepth_and_drains_at_its_rate(tele_config):
    sw, clock = make(tele_config)
    sw.set_queue_rate(1000, 2)                 # 1 ms per packet
    first = sw.receive(1, tele(2))
    assert read(first[0][1])["enq"] == 0       # nothing waits: leaves at once
    for _ in range(9):                          # a burst at the same instant
        assert sw.receive(1, tele(2)) == []
    assert sw.queue_occupancy(2) == 9
    assert sw.queue_next_due() == pytest.approx(clock.now + 1e-3)
    assert sw.receive(1, tele(3)) != []        # another port is not held up
    departures = []
    for step in range(1, 10):
        clock.now = step * 1e-3 + 1e-7
        out = sw.release_queued()
        assert len(out) == 1
        departures.append(read(out[0][1]))
    assert [d["enq"] for d in departures] == list(range(9))          # rising depth
    assert [d["deq"] for d in departures] == list(range(8, -1, -1))  # depth left behind
    assert [d["delta"] for d in departures] == [1000 * k for k in range(1, 10)]
    assert all(d["egress_ts"] == d["enq_ts"] + d["delta"] for d in departures)
    assert sw.queue_next_due() is None and sw.release_queued() == []


def test_receive_first_lets_out_what_is_due_so_depth_is_the_depth_now(tele_config):
    sw, clock = make(tele_config)
    sw.set_queue_rate(100, 2)                  # 10 ms per packet
    for _ in range(4):
        sw.receive(1, tele(2))
    assert sw.queue_occupancy(2) == 3
    clock.now += 0.025                         # two departures due, nobody released them
    out = sw.receive(1, tele(2))
    assert [read(frame)["deq"] for _, frame in out] == [2, 1]   # at their own departure times
    assert [read(frame)["delta"] for _, frame in out] == [10000, 20000]
    assert sw.queue_occupancy(2) == 2          # the third waiting one and the new one
    clock.now += 1.0
    last = [read(frame) for _, frame in sw.release_queued()]
    assert [d["enq"] for d in last] == [2, 1]   # 2 ahead of the 4th; 1 of the new one


def test_a_full_queue_drops_at_the_tail(tele_config):
    sw, clock = make(tele_config)
    sw.set_queue_rate(10, 2)
    sw.set_queue_depth(3, 2)
    assert sw.get_queue_depth(2) == 3 and sw.get_queue_rate(2) == 10
    assert sw.get_queue_depth(4) == 64 and sw.get_queue_rate(4) == 0   # BMv2's defaults
    outs = [sw.receive(1, tele(2)) for _ in range(8)]
    assert len(outs[0]) == 1 and sw.queue_occupancy(2) == 3
    assert sw.queue_drops() == {2: 4}
    clock.now += 10
    assert [read(frame)["enq"] for _, frame in sw.release_queued()] == [0, 1, 2]


def test_setting_every_queue_overrides_earlier_per_port_values_as_bmv2(tele_config):
    sw, _ = make(tele_config)
    sw.set_queue_rate(5, 2)
    sw.set_queue_rate(7)
    assert sw.get_queue_rate(2) == sw.get_queue_rate(9) == 7
    sw.set_queue_rate(0)
    assert sw.receive(1, tele(2)) and sw.receive(1, tele(2))   # unlimited again


def test_priority_beyond_the_queues_per_port_is_dropped_as_bmv2(tele_config):
    sw, _ = make(tele_config)                   # one queue per port: only priority 0
    assert sw.receive(1, tele(2, priority=1)) == []
    assert len(sw.receive(1, tele(2, priority=0))) == 1
    sw4, _ = make(tele_config, priority_queues=4)
    assert len(sw4.receive(1, tele(2, priority=3))) == 1
    assert sw4.receive(1, tele(2, priority=4)) == []


def test_priority_queues_have_their_own_rate_and_their_own_depth(tele_config):
    sw, clock = make(tele_config, priority_queues=2)
    sw.set_queue_rate(1000, 2, 0)              # only priority 0 is slow
    for _ in range(3):
        sw.receive(1, tele(2, priority=0))
    out = sw.receive(1, tele(2, priority=1))   # its own queue: leaves at once
    assert len(out) == 1
    got = read(out[0][1])
    assert got["enq"] == 0 and got["deq"] == 0   # its own queue's depth, as BMv2 1.15.5
    assert sw.queue_occupancy(2, 0) == 2 and sw.queue_occupancy(2, 1) == 0
    with pytest.raises(InvalidArgument):
        sw.set_queue_rate(10, 2, 2)
    clock.now += 1
    assert [read(frame)["deq"] for _, frame in sw.release_queued()] == [1, 0]


def test_ties_leave_higher_priority_first(tele_config):
    sw, clock = make(tele_config, priority_queues=2)
    sw.set_queue_rate(1000, 2)
    sw.receive(1, tele(2, 0))
    sw.receive(1, tele(2, 1))                  # both queues' first packets leave at once
    sw.receive(1, tele(2, 0))
    sw.receive(1, tele(2, 1))                  # these two are both due 1 ms later
    clock.now += 1e-3
    out = sw.release_queued()
    assert [frame[1] for _, frame in out] == [1, 0]


def test_multicast_replicas_each_take_their_port_queue(tele_config):
    sw, clock = make(tele_config)
    sw.mc_group_set(1, [(2, 0), (3, 0)])
    sw.set_queue_rate(1000, 2)
    assert [port for port, _ in sw.receive(1, tele(255))] == [2, 3]
    assert [port for port, _ in sw.receive(1, tele(255))] == [3]    # port 2's copy waits
    clock.now += 1e-3
    out = sw.release_queued()
    assert [port for port, _ in out] == [2] and read(out[0][1])["delta"] == 1000


def test_a_trace_sees_enqueue_dequeue_and_tail_drop(tele_config):
    import io

    from p4switch.runtime.trace import TextTrace
    sw, clock = make(tele_config)
    log = io.StringIO()
    sw.trace = TextTrace(log)
    sw.set_queue_rate(1000, 2)
    sw.set_queue_depth(1, 2)
    for _ in range(3):
        sw.receive(1, tele(2))
    clock.now += 1
    assert len(sw.release_queued()) == 1
    text = log.getvalue()
    assert "enqueued on port 2 queue 0 (depth 0)" in text
    assert "egress queue of port 2 full" in text and "dequeued from port 2 queue 0" in text


def test_a_new_program_empties_the_queues_but_keeps_their_settings(tele_config):
    sw, _ = make(tele_config)
    sw.set_queue_rate(10, 2)
    for _ in range(3):
        sw.receive(1, tele(2))
    sw.load_config(tele_config)
    assert sw.queue_occupancy(2) == 0 and sw.queue_next_due() is None
    assert sw.get_queue_rate(2) == 10


def test_bad_queue_arguments_are_invalid(tele_config):
    sw, _ = make(tele_config)
    for call in (lambda: sw.set_queue_rate(-1), lambda: sw.set_queue_depth(1.5),
                 lambda: sw.set_queue_depth(3, 512), lambda: sw.set_queue_rate(3, None, 0),
                 lambda: sw.queue_occupancy(2, 1), lambda: Switch(None, priority_queues=9)):
        with pytest.raises(InvalidArgument):
            call()


def ecn_packet(tos: int) -> bytes:
    eth = bytes.fromhex("000000000001" "0000000000aa" "0800")
    ip = bytes([0x45, tos, 0, 20, 0, 1, 0, 0, 64, 17, 0, 0, 10, 0, 0, 1, 10, 0, 0, 2])
    return eth + ip


def test_ecn_marks_once_the_queue_reaches_the_threshold(ecn_config):
    sw, clock = make(ecn_config)
    sw.table_add("ipv4_lpm", [LpmKey(0x0A000002, 32)], "ipv4_forward", [2, 2])
    sw.table_set_default("ecn_config", "set_threshold", [5])
    sw.set_queue_rate(1000, 2)
    tos = []
    for _ in range(40):                        # offered at 5000 pps: the queue builds
        clock.now += 2e-4
        tos += [frame[15] for _, frame in sw.receive(1, ecn_packet(0x1))]
    clock.now += 1
    tos += [frame[15] for _, frame in sw.release_queued()]
    assert len(tos) == 40
    first_mark = tos.index(0x3)
    assert 0 < first_mark and set(tos[:first_mark]) == {0x1} and set(tos[first_mark:]) == {0x3}
    sw.set_queue_rate(0, 2)
    clock.now += 1
    assert [frame[15] for _, frame in sw.receive(1, ecn_packet(0x1))] == [0x1]   # drained
