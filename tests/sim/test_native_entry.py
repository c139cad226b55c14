"""The native switch ports' direct entry into the runtime (switchports.c `ports_pipeline`,
p4switch/runtime/switch.py `Switch.direct_entry`): on the common path the C port calls the
engine's fast path itself, under the switch's lock; whenever the runtime says it may not (a
trace attached, egress queues in use, no program) it goes through `Switch.receive`, and a
program reloaded mid-run is seen at the next frame. Each of these happens mid-run here, on
both cores, and everything the switch did must be the same."""

from __future__ import annotations

import random
from pathlib import Path

import pytest

from p4switch.compiler import compile_file
from p4switch.runtime import Switch
from p4switch.runtime.errors import InvalidArgument
from p4switch.runtime.trace import PacketTrace

from inaemu.sim.cores import core_classes
from inaemu.sim.native import native_classes, native_module, why_not
from inaemu.sim.switch_node import SwitchCost
from tests.sim.test_native_net import udp_frame

pytestmark = pytest.mark.skipif(native_classes() is None,
                                reason=f"no native core here: {why_not()}")

PORTS = Path(__file__).parents[1] / "ports"
BACKPRESSURE = PORTS / "backpressure.p4"   # 1, 3 -> 2; 2 -> 1; writes deq_qdepth into a probe
WIRE = PORTS / "wire.p4"                   # 1 <-> 2; 3 is dropped


@pytest.fixture(scope="module")
def programs():
    return compile_file(str(BACKPRESSURE)).bmv2, compile_file(str(WIRE)).bmv2


class Seen(PacketTrace):
    """The traced packets: (id, port, first bytes) of each, and what left for each."""

    def __init__(self):
        self.lines: list[tuple] = []

    def packet_in(self, packet_id, port, data):
        self.lines.append(("in", packet_id, port, data[:8]))

    def packet_done(self, outputs):
        self.lines.append(("done", [(port, len(data)) for port, data in outputs]))


class Watched(Switch):
    """A runtime Switch whose direct entry checks, at every direct call, that the switch's
    lock is held, and counts the calls (`receive` is not overridden: the entry applies)."""

    def __init__(self, lock=None):
        super().__init__(None, lock=lock)
        self.direct_calls = 0
        self.unlocked_calls = 0

    def direct_entry(self):
        entry = super().direct_entry()
        if entry is None:
            return None
        engine, fast, queues = entry

        def watched_fast(port, data):
            self.direct_calls += 1
            self.unlocked_calls += not self.lock._is_owned()
            return fast(port, data)

        return engine, watched_fast, queues


def run_changes(core: str, programs, lock=None):
    """400 frames into ports 1, 2 and 3 of a switch running backpressure.p4, with, mid-run:
    a trace attached then removed, a queue rate set on port 2 then cleared, and wire.p4
    loaded instead (port 3 is then dropped, no probe is written). `lock`: the switch's lock
    (None: an RLock)."""
    backpressure, wire = programs
    classes = core_classes(core)
    trace: list[str] = []
    loop = classes.loop(trace)
    runtime = Watched(lock)
    node = classes.switch(loop, "s1", 1, cost=SwitchCost(5e-6, 1e-9, 1e-6), queue_packets=64,
                          switch=runtime)
    runtime.load_config(backpressure)
    received: list[tuple] = []
    for port, peer in ((1, "h1"), (2, "h2")):
        link = classes.link(loop, f"s1:{port}", f"{peer}:1", bw_bps=100e6, delay_s=1e-5,
                            loss=0.0, rng=random.Random(port),
                            deliver=lambda f, port=port: received.append((loop.now, port, f)))
        node.attach_egress(port, link)
    plan = random.Random(11)
    t = 0.0
    for i in range(400):
        t += plan.expovariate(1 / 40e-6)
        frame = udp_frame(1000 + i % 5, plan.randint(64, 1400), tag=i)
        loop.at(t, node.ingress(plan.choice((1, 1, 2, 3))), frame)
    seen = Seen()

    def set_trace(value):
        runtime.trace = value

    loop.at(t * 0.15, set_trace, seen)
    loop.at(t * 0.30, set_trace, None)
    loop.at(t * 0.45, runtime.set_queue_rate, 5000, 2)
    loop.at(t * 0.60, runtime.set_queue_rate, 0, 2)
    loop.at(t * 0.80, runtime.load_config, wire)
    assert loop.run(until=10.0) == "idle"
    return (received, trace, seen.lines, node.counters.as_dict(), loop.events_run, loop.now,
            runtime.queue_drops()), node, runtime


@pytest.mark.parametrize("lock", ["RLock", "SwitchLock"])
def test_the_direct_entry_falls_back_whenever_the_runtime_says_so(programs, lock):
    """(Also with the SwitchLock the native core gives its switches, which the ports take in
    C: every direct call must still find it held.)"""
    python, _node, _runtime = run_changes("python", programs)
    native, node, runtime = run_changes(
        "native", programs, None if lock == "RLock" else native_module().SwitchLock())
    assert type(runtime.lock).__name__ == lock
    assert native[0] == python[0]
    assert native[1:] == python[1:]
    received, _trace, traced, counters = python[:4]
    # each change took effect: some packets traced, some probes saw a queue, port 3 dropped
    # after the reload (the last fifth of the plan sends none of its frames to port 2)
    assert traced and counters["processed"] == 400
    assert any(int.from_bytes(f[42:46], "big") for _t, port, f in received if port == 2
               and f[36:38] == (7777).to_bytes(2, "big"))
    # the native ports took both ways, the direct one only under the lock
    assert 0 < runtime.direct_calls < counters["processed"]
    assert node.direct_packets == runtime.direct_calls
    assert runtime.unlocked_calls == 0
    assert runtime._engine.packet_count > 0


class Counting(Switch):
    """`receive` overridden: the native ports must keep calling it."""

    def __init__(self):
        super().__init__(None)
        self.calls = 0

    def receive(self, port, packet):
        self.calls += 1
        return super().receive(port, packet)


def test_an_overridden_receive_is_always_called(programs):
    classes = core_classes("native")
    loop = classes.loop()
    runtime = Counting()
    node = classes.switch(loop, "s1", 1, cost=SwitchCost(0, 0, 0), switch=runtime)
    runtime.load_config(programs[0])
    for i in range(20):
        loop.at(i * 1e-5, node.ingress(1), udp_frame(1000, 100, tag=i))
    assert loop.run(until=1.0) == "idle"
    assert runtime.calls == 20 and node.direct_packets == 0 and node.unrouted == 20


@pytest.mark.parametrize("core", ["python", "native"])
def test_a_port_beyond_the_runtime_is_refused_as_receive_refuses_it(programs, core):
    """A port the runtime does not have takes the way through `receive`, which says why."""
    classes = core_classes(core)
    loop = classes.loop()
    node = classes.switch(loop, "s1", 1, cost=SwitchCost(0, 0, 0))
    node.switch.load_config(programs[0])
    loop.at(0.0, node.ingress(512), udp_frame(1000, 100))
    with pytest.raises(InvalidArgument, match="port"):
        loop.run(until=1.0)
