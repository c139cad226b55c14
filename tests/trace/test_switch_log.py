"""The tracing hooks in the switch: time on every log line, a line per injected loss (and no
work without a trace), and `SwitchRecorder` writing the layout `inaemu trace` reads."""

from __future__ import annotations

import io
import threading
import zlib

from inaemu.trace.events import LinkLoss, PipelineRun
from inaemu.trace.layout import SwitchRecorder
from inaemu.trace.reader import parse_log, read_run
from p4switch.ports import Forwarder, ImpairmentPlan
from p4switch.runtime import PacketTrace, TextTrace


class Clock:
    def __init__(self, now: float) -> None:
        self.now = now

    def __call__(self) -> float:
        return self.now


def test_every_line_of_a_packet_carries_its_time():
    log, clock = io.StringIO(), Clock(12.5)
    trace = TextTrace(log, clock=clock)
    trace.packet_in(3, 1, bytes(70))
    clock.now = 13.0                                  # later lines keep the packet's time
    trace.action("x", ())
    trace.packet_out(2, bytes(10))
    trace.packet_done([(2, bytes(10))])
    lines = log.getvalue().splitlines()
    assert lines[0] == f"12.500000 [3] packet in: port 1, 70 bytes: {bytes(64).hex()}..."
    assert all(line.startswith("12.500000 [3] ") for line in lines)
    trace.link_loss(4, "out", b"\x01\x02")
    digest = zlib.crc32(b"\x01\x02")
    assert log.getvalue().splitlines()[-1] == \
        f"13.000000 [-] link loss: port 4 out, 2 bytes, crc32 {digest:08x}: 0102"
    events = parse_log(log.getvalue().splitlines(), "s1")
    assert [type(e) for e in events] == [PipelineRun, LinkLoss]


class Wire:
    """A switch double: every packet goes out on port 2; a trace that records losses."""

    def __init__(self, trace) -> None:
        self.lock = threading.RLock()
        self.trace = trace

    def receive_batch(self, items):
        return [(2, data) for _, data in items]


class Losses(PacketTrace):
    def __init__(self) -> None:
        self.seen = []

    def link_loss(self, port, direction, data):
        self.seen.append((port, direction, data))


def test_the_forwarder_reports_each_loss_to_the_trace():
    trace = Losses()
    plan = ImpairmentPlan.from_options(["0.5"], None)
    forwarder = Forwarder(Wire(trace), [1, 2], plan=plan, seed=1)
    frames = [bytes([i]) * 20 for i in range(40)]
    for frame in frames:
        forwarder.forward([(1, frame)], now=0.0)
    counters = forwarder.counters
    assert [(p, d) for p, d, _ in trace.seen].count((1, "in")) == counters[1].rx_lost > 0
    assert [(p, d) for p, d, _ in trace.seen].count((2, "out")) == counters[2].tx_lost > 0
    assert all(data in frames for _, _, data in trace.seen)


def test_no_trace_no_reports():
    switch = Wire(None)
    forwarder = Forwarder(switch, [1, 2], plan=ImpairmentPlan.from_options(["1"], None), seed=1)
    assert forwarder.forward([(1, b"x" * 20)], now=0.0) == []   # lost, nobody to tell


def test_recorder_writes_what_the_reader_reads(tmp_path):
    clock = Clock(100.0)
    recorder = SwitchRecorder(tmp_path / "trace", "s7", {1: "s7-eth1", 2: "s7-eth2"}, clock=clock)
    recorder.trace.packet_in(1, 1, b"\x00" * 20)
    recorder.trace.packet_done([])
    recorder.arrived(1, b"\x00" * 20)
    clock.now = 100.25
    recorder.departed(2, b"\x01" * 30)
    recorder.lost(2, "in", b"\x02" * 40)
    recorder.lost(1, "out", b"\x03" * 50)
    recorder.close()
    trace = read_run(tmp_path)
    described = [(type(e).__name__, e.time, getattr(e, "port", None),
                  getattr(e, "direction", None)) for e in trace.events]
    assert [t for _, t, _, _ in described] == sorted(t for _, t, _, _ in described)
    assert sorted(described, key=str) == sorted([
        ("PipelineRun", 100.0, 1, None), ("WireFrame", 100.0, 1, "in"),
        ("WireFrame", 100.25, 2, "out"), ("WireFrame", 100.25, 2, "in"),      # lost in: captured
        ("LinkLoss", 100.25, 2, "in"), ("LinkLoss", 100.25, 1, "out")], key=str)
    assert trace.iface("s7", 2) == "s7-eth2"
