"""The native core's links and switch ports (inaemu/sim/native/link.c, switchports.c) against
the Python reference (link.py, switch_node.py), driven directly, fact for fact: every arrival,
loss, queue drop, `on_left`, socket refusal and wake-up at its virtual time, the trace, the
counters and the event count, where the whole runs of tests/sim/test_cores.py rarely reach a
full queue, a refusing socket or a crash."""

from __future__ import annotations

import random
import struct
from pathlib import Path

import pytest

from p4switch.compiler import compile_file

from inaemu.sim.cores import core_classes
from inaemu.sim.native import native_classes, why_not
from inaemu.sim.switch_node import SwitchCost

pytestmark = pytest.mark.skipif(native_classes() is None,
                                reason=f"no native core here: {why_not()}")

PROGRAM = Path(__file__).parents[1] / "ports" / "backpressure.p4"   # 1, 3 -> 2; 2 -> 1


@pytest.fixture(scope="module")
def program():
    return compile_file(str(PROGRAM)).bmv2


def udp_frame(sport: int, size: int, tos: int = 0, tag: int = 0) -> bytes:
    """A UDP frame of `size` bytes from 10.7.0.1 to 10.7.0.2; `tag` in the payload."""
    payload = tag.to_bytes(4, "big") + bytes(size - 14 - 20 - 8 - 4)
    udp = struct.pack("!HHHH", sport, 7777, 8 + len(payload), 0) + payload
    ip = struct.pack("!BBHHHBBH4s4s", 0x45, tos, 20 + len(udp), 1, 0, 64, 17, 0,
                     bytes([10, 7, 0, 1]), bytes([10, 7, 0, 2]))
    return bytes.fromhex("0000000700020000000700010800") + ip + udp


# -- links ----------------------------------------------------------------------------------------

LINK_CASES = {
    # name: (bw_bps, queue_bytes, loss, send_buffer, mean gap between sends)
    "shaped, small queue, lossy, small socket": (1e8, 6000, 0.1, 5000, 60e-6),
    "shaped, default queue and socket": (1e9, 1000 * 1514, 0.02, 212992, 5e-6),
    "unshaped, lossy": (None, 6000, 0.3, None, 20e-6),
}


def run_link(core: str, bw_bps, queue_bytes, loss, send_buffer, gap, seed=5):
    """One direction fed 800 frames of random sizes (some at the same instant, half with
    `on_left`, the link down for a while); everything it did, in order."""
    classes = core_classes(core)
    trace: list[str] = []
    loop = classes.loop(trace)
    log: list[tuple] = []
    link = classes.link(loop, "a:1", "b:2", bw_bps=bw_bps, delay_s=3e-5, loss=loss,
                        rng=random.Random(f"{seed}/a:1->b:2"),
                        deliver=lambda f: log.append(("arrive", loop.now, f[:4])),
                        queue_bytes=queue_bytes)
    link.on_lost = lambda f: log.append(("lost", loop.now, f[:4]))
    link.on_departed = lambda f: log.append(("departed", loop.now, f[:4]))
    if send_buffer is not None:
        link.attach_sender(lambda: log.append(("wake", loop.now, link.writable())), send_buffer)

    def left(frame: bytes) -> None:
        log.append(("left", loop.now, frame[:4]))

    def send(frame: bytes, on_left) -> None:
        if send_buffer is not None:
            writable = link.writable()
            log.append(("writable", loop.now, writable))
            if not writable:
                link.wait_writable()
        link.send(frame, on_left)

    plan = random.Random(seed)
    t = 0.0
    for i in range(800):
        if plan.random() > 0.2:         # else at the same instant as the one before
            t += plan.expovariate(1 / gap)
        frame = i.to_bytes(4, "big") + bytes(plan.randint(60, 1514) - 4)
        loop.at(t, send, frame, left if plan.random() < 0.5 else None)
    loop.at(t * 0.4, setattr, link, "up", False)
    loop.at(t * 0.45, setattr, link, "up", True)
    assert loop.run(until=10.0) == "idle"
    return log, trace, link.counters.as_dict(), loop.events_run, loop.now


@pytest.mark.parametrize("case", LINK_CASES, ids=list(LINK_CASES))
def test_a_native_link_does_what_the_python_one_does(case):
    python = run_link("python", *LINK_CASES[case])
    native = run_link("native", *LINK_CASES[case])
    assert native[0] == python[0]
    assert native[1] == python[1]
    assert native[2:] == python[2:]
    log, _trace, counters, _events, _now = python
    kinds = {entry[0] for entry in log}
    assert counters["lost_packets"] > 0 and {"arrive", "left", "lost", "departed"} <= kinds
    if case.startswith("shaped, small"):    # the paths this case is for were taken
        assert counters["dropped_queue"] > 0 and "wake" in kinds
        assert any(entry[0] == "writable" and entry[2] is False for entry in log)


def test_a_native_link_keeps_the_losses_of_the_seed():
    """The same seed loses the same frames on both cores; another seed loses others."""
    lost = {}
    for core in ("python", "native"):
        for seed in (5, 6):
            log = run_link(core, None, 6000, 0.3, None, 20e-6, seed=seed)[0]
            lost[core, seed] = [entry for entry in log if entry[0] == "lost"]
    assert lost["native", 5] == lost["python", 5] and lost["native", 6] == lost["python", 6]
    assert lost["python", 5] != lost["python", 6]


def test_a_native_link_checks_its_arguments():
    classes = core_classes("native")
    loop = classes.loop()
    with pytest.raises(ValueError, match="a:1->b:2: loss must be a probability"):
        classes.link(loop, "a:1", "b:2", bw_bps=None, delay_s=0.0, loss=1.5,
                     rng=random.Random(1), deliver=print)
    link = classes.link(loop, "a:1", "b:2", bw_bps=1e6, delay_s=0.0, loss=0.0,
                        rng=random.Random(1), deliver=print)
    with pytest.raises(ValueError, match="a:1->b:2: the send buffer must be positive"):
        link.attach_sender(print, 0)
    assert link.name == "a:1->b:2" and link.transmission_time(125) == pytest.approx(1e-3)


# -- switch ports ---------------------------------------------------------------------------------

def run_switch(core: str, program, *, crash: bool):
    """A slow switch with a 3-frame input queue: frames into port 1 over a link, into port 3
    directly, into port 2 (out on port 1, which has no link: unrouted); out on port 2 over a
    shaped link; optionally a crash while frames wait, and a restart (an empty switch)."""
    classes = core_classes(core)
    trace: list[str] = []
    loop = classes.loop(trace)
    node = classes.switch(loop, "s1", 1, cost=SwitchCost(20e-6, 1e-9, 3e-6), queue_packets=3)
    node.switch.load_config(program)
    received: list[tuple] = []
    out = classes.link(loop, "s1:2", "h2:1", bw_bps=50e6, delay_s=1e-5, loss=0.0,
                       rng=random.Random(1), deliver=lambda f: received.append((loop.now, f)))
    node.attach_egress(2, out)
    into = classes.link(loop, "h1:1", "s1:1", bw_bps=None, delay_s=2e-6, loss=0.0,
                        rng=random.Random(2), deliver=node.ingress(1))
    plan = random.Random(3)
    t = 0.0
    for i in range(400):
        t += plan.expovariate(1 / 25e-6)
        frame = udp_frame(1000 + i % 7, plan.randint(64, 1400), tag=i)
        port = plan.choice((1, 1, 3, 2))
        if port == 1:
            loop.at(t, into.send, frame)
        else:
            loop.at(t, node.ingress(port), frame)
    if crash:
        loop.at(t * 0.5, node.crash)
        loop.at(t * 0.7, node.restart)
    assert loop.run(until=10.0) == "idle"
    return (received, trace, node.counters.as_dict(), out.counters.as_dict(),
            into.counters.as_dict(), loop.events_run, loop.now)


@pytest.mark.parametrize("crash", [False, True], ids=["running", "crash and restart"])
def test_a_native_switch_serves_as_the_python_one(program, crash):
    python = run_switch("python", program, crash=crash)
    native = run_switch("native", program, crash=crash)
    assert native[0] == python[0]
    assert native[1] == python[1]
    assert native[2:] == python[2:]
    counters = python[2]
    assert counters["dropped_input_queue"] > 0 and counters["unrouted"] > 0
    assert any(" input-drop " in line for line in python[1])
    if crash:
        assert counters["dropped_down"] > 0


def run_relinked_switch(core: str, program):
    """Frames out on port 2 while its link is replaced halfway, and on port 1 (no link) until
    one is attached: the switch must follow `egress` as it changes (the native ports remember
    the links they emitted to)."""
    classes = core_classes(core)
    loop = classes.loop()
    node = classes.switch(loop, "s1", 1, cost=SwitchCost(0, 0, 0))
    node.switch.load_config(program)
    received: dict[str, list] = {"first": [], "second": [], "late": []}

    def link(name: str):
        return classes.link(loop, f"s1:{name}", "h:1", bw_bps=None, delay_s=1e-6, loss=0.0,
                            rng=random.Random(1),
                            deliver=lambda f: received[name].append((loop.now, f)))
    node.attach_egress(2, link("first"))
    for i in range(60):
        port = 3 if i % 2 else 2                   # (the program sends 2 out on 1, 3 out on 2)
        loop.at(i * 1e-4, node.ingress(port), udp_frame(1000 + i, 200, tag=i))
    loop.at(20e-4 + 5e-5, node.attach_egress, 2, link("second"))
    loop.at(40e-4 + 5e-5, node.attach_egress, 1, link("late"))
    assert loop.run(until=1.0) == "idle"
    return received, node.counters.as_dict()


def test_a_native_switch_follows_its_egress_links_as_they_change(program):
    python = run_relinked_switch("python", program)
    native = run_relinked_switch("native", program)
    assert native == python
    received, counters = native
    assert received["first"] and received["second"] and received["late"]
    assert max(t for t, _ in received["first"]) < min(t for t, _ in received["second"])
    assert counters["unrouted"] > 0


# -- back-pressure (tests/sim/test_backpressure.py's set-up on both cores) ------------------------

def run_backpressure(core: str, program, seconds: float = 2.0):
    """A 512 kbit/s link on port 2, a flood of 1400-byte frames at 200 pps into port 1 and
    20 pps of ECN-capable probes into port 3: the queue builds in the switch."""
    classes = core_classes(core)
    loop = classes.loop()
    node = classes.switch(loop, "s1", 1, cost=SwitchCost(0, 0, 0))
    node.switch.load_config(program)
    received: list[tuple] = []
    link = classes.link(loop, "s1:2", "h2:1", bw_bps=512e3, delay_s=0.0, loss=0.0,
                        rng=random.Random(1), deliver=lambda f: received.append((loop.now, f)))
    node.attach_egress(2, link)
    backlog, rooms = [], []
    flood, probe = udp_frame(1111, 1400), udp_frame(2222, 100, tos=1)
    for i in range(int(seconds * 200)):
        loop.at(i / 200, node.ingress(1), flood)
    for i in range(int(seconds * 20)):
        loop.at(i / 20 + 1e-4, node.ingress(3), probe)
    for i in range(int(seconds * 200)):
        loop.at(i / 200 + 2e-4, lambda: (backlog.append(len(link._backlog)),
                                         rooms.append((node.switch.queues.room, node._in_service,
                                                       len(node.output)))))
    assert loop.run(until=60.0) == "idle"
    return (received, backlog, rooms, node.counters.as_dict(), link.counters.as_dict(),
            node.switch.queue_drops(), loop.events_run, loop.now)


def test_back_pressure_is_the_same_on_both_cores(program):
    python = run_backpressure("python", program)
    native = run_backpressure("native", program)
    assert native[0] == python[0]
    assert native[1:] == python[1:]
    assert python[5][2] > 20 and max(python[1]) > 90 and python[4]["dropped_queue"] == 0


@pytest.mark.parametrize("core", ["python", "native"])
def test_a_frame_that_exactly_fills_the_queue_joins_it(core):
    """The byte limit counts the frames not yet serialised plus the new one: four 1514-byte
    frames fill 4 * 1514 bytes and join, the fifth is dropped; once the first has left the
    wire (at 1514 * 8 / 1e8 s) one more fits, exactly."""
    classes = core_classes(core)
    trace: list[str] = []
    loop = classes.loop(trace)
    arrived: list[float] = []
    link = classes.link(loop, "a:1", "b:2", bw_bps=1e8, delay_s=0.0, loss=0.0,
                        rng=random.Random(1), deliver=lambda f: arrived.append(loop.now),
                        queue_bytes=4 * 1514)
    frame = bytes(1514)
    serialised = 1514 * 8 / 1e8
    for _ in range(5):
        loop.at(0.0, link.send, frame)
    loop.at(serialised, link.send, frame)          # the first left at this very instant
    loop.at(serialised, link.send, frame)          # and there is room for one only
    assert loop.run(until=1.0) == "idle"
    assert link.counters.dropped_queue == 2 and link.counters.delivered_packets == 5
    assert arrived == [serialised * k for k in range(1, 6)]
    assert [line.split()[1:] for line in trace].count(["a:1->b:2", "queue-drop", "1514"]) == 2


def test_a_finished_native_network_is_collected():
    """The loop's entries hold links and switches that hold the loop: the C types show the
    collector what they hold, so a network left with frames in flight is freed."""
    import gc
    import weakref

    from inaemu.sim.network import SimNetwork
    from topologies.builders import star

    net = SimNetwork(star(2), seed=1, core="native")
    for link in net.links.values():
        link.send(udp_frame(1, 64))
    node = next(iter(net.switches.values()))
    node.ingress(1)(udp_frame(1, 64))
    kept = [weakref.ref(obj) for obj in (net.loop, link, node, next(iter(net.hosts.values())))]
    assert net.loop.pending_events > 0
    del net, link, node
    gc.collect()
    assert [ref() for ref in kept] == [None] * len(kept)
