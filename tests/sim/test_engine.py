"""The event loop and one link direction: ordering, timing, queueing and loss."""

from __future__ import annotations

import math
import random

import pytest

from inaemu.sim.events import EventLoop
from inaemu.sim.host_node import Timer
from inaemu.sim.link import LinkDirection


def test_events_run_in_time_order_and_equal_times_in_scheduling_order() -> None:
    loop = EventLoop()
    ran: list[str] = []
    loop.at(2.0, ran.append, "late")
    for name in ("first", "second", "third"):
        loop.at(1.0, ran.append, name)
    loop.at(0.5, ran.append, "early")
    assert loop.run(until=10.0) == "idle"
    assert ran == ["early", "first", "second", "third", "late"]
    assert loop.now == 2.0 and loop.events_run == 5


def test_an_event_scheduled_for_now_runs_after_those_already_due() -> None:
    loop = EventLoop()
    ran: list[str] = []
    loop.at(1.0, lambda: (ran.append("a"), loop.after(0.0, ran.append, "c")))
    loop.at(1.0, ran.append, "b")
    loop.run(until=5.0)
    assert ran == ["a", "b", "c"]


def test_cancelled_events_do_not_run_and_past_times_clamp_to_now() -> None:
    loop = EventLoop()
    ran: list[str] = []
    event = loop.at(1.0, ran.append, "cancelled")
    loop.at(1.5, lambda: loop.at(0.2, ran.append, "clamped"))
    event.cancel()
    loop.run(until=5.0)
    assert ran == ["clamped"] and loop.now == 1.5


def test_run_stops_at_the_time_limit_or_when_done() -> None:
    loop = EventLoop()
    count = [0]

    def tick() -> None:
        count[0] += 1
        loop.after(1.0, tick)

    loop.at(0.0, tick)
    assert loop.run(until=4.5) == "time limit"
    assert count[0] == 5 and loop.now == 4.5
    assert loop.run(until=100.0, done=lambda: count[0] >= 8) == "done"
    assert count[0] == 8


def make_link(loop: EventLoop, *, bw_bps=100e6, delay_s=0.0, loss=0.0, seed=1,
              queue_bytes=10**9) -> tuple[LinkDirection, list[tuple[float, int]]]:
    arrivals: list[tuple[float, int]] = []
    link = LinkDirection(loop, "a:1", "b:1", bw_bps=bw_bps, delay_s=delay_s, loss=loss,
                         rng=random.Random(seed), queue_bytes=queue_bytes,
                         deliver=lambda frame: arrivals.append((loop.now, len(frame))))
    return link, arrivals


def test_a_1500_byte_frame_on_100_mbits_takes_120_us_plus_the_delay() -> None:
    loop = EventLoop()
    link, arrivals = make_link(loop, delay_s=0.002)
    link.send(bytes(1500))
    loop.run(until=1.0)
    assert arrivals == [(pytest.approx(120e-6 + 0.002, abs=1e-12), 1500)]


def test_frames_are_serialised_one_after_another() -> None:
    loop = EventLoop()
    link, arrivals = make_link(loop, delay_s=0.001)
    for size in (1500, 500, 1000):
        link.send(bytes(size))
    loop.at(0.01, link.send, bytes(100))          # the link is idle again by then
    loop.run(until=1.0)
    times = [t for t, _ in arrivals]
    assert times == [pytest.approx(t, abs=1e-12) for t in
                     (0.001 + 120e-6, 0.001 + 160e-6, 0.001 + 240e-6, 0.011 + 8e-6)]
    assert link.counters.delivered_bytes == 3100 and link.counters.delivered_packets == 4


def test_the_queue_drops_the_tail_beyond_its_byte_limit() -> None:
    loop = EventLoop()
    link, arrivals = make_link(loop, queue_bytes=4000)
    for _ in range(4):
        link.send(bytes(1500))                    # 1500 + 1500 fit, then 3000 + 1500 > 4000
    loop.at(130e-6, link.send, bytes(1500))       # the first has left the queue by then
    loop.run(until=1.0)
    assert len(arrivals) == 3
    assert link.counters.dropped_queue == 2 and link.counters.sent_packets == 5


def test_an_unshaped_link_has_only_its_delay() -> None:
    loop = EventLoop()
    link, arrivals = make_link(loop, bw_bps=None, delay_s=0.0005)
    link.send(bytes(9000))
    link.send(bytes(9000))
    loop.run(until=1.0)
    assert [t for t, _ in arrivals] == [0.0005, 0.0005]


@pytest.mark.parametrize("loss", [0.01, 0.1, 0.5])
def test_loss_rate_within_a_binomial_bound(loss: float) -> None:
    loop = EventLoop()
    link, arrivals = make_link(loop, bw_bps=None, loss=loss, seed=42)
    frames = 20000
    for _ in range(frames):
        link.send(b"x" * 60)
    loop.run(until=1.0)
    lost = link.counters.lost_packets
    assert lost + len(arrivals) == frames
    sigma = math.sqrt(frames * loss * (1 - loss))
    assert abs(lost - frames * loss) <= 5 * sigma, (lost, frames * loss, sigma)


def test_the_same_seed_loses_the_same_frames() -> None:
    def survivors(seed: int) -> list[bytes]:
        loop = EventLoop()
        delivered: list[bytes] = []
        link = LinkDirection(loop, "a:1", "b:1", bw_bps=None, delay_s=0.0, loss=0.3,
                             rng=random.Random(seed), deliver=delivered.append)
        for i in range(200):
            link.send(i.to_bytes(2, "big"))
        loop.run(until=1.0)
        return delivered

    assert survivors(7) == survivors(7)
    assert survivors(7) != survivors(8)


def test_bad_link_parameters_are_refused_with_the_link_name() -> None:
    loop = EventLoop()
    with pytest.raises(ValueError, match="a:1->b:1.*probability"):
        make_link(loop, loss=1.5)
    with pytest.raises(ValueError, match="bandwidth"):
        make_link(loop, bw_bps=0)


def timer_fires(*changes: tuple[float, float | None]) -> list[float]:
    """Arm a timer at 1.0, apply (at time, set deadline) changes, return when it fired."""
    loop = EventLoop()
    fired: list[float] = []
    timer = Timer(loop, lambda: fired.append(loop.now))
    timer.set(1.0)
    for at, deadline in changes:
        loop.at(at, timer.set, deadline)
    loop.run(until=100.0)
    return fired


def test_a_host_timer_fires_at_its_latest_deadline_only() -> None:
    assert timer_fires() == [1.0]
    assert timer_fires((0.5, 2.0)) == [2.0]                  # moved later
    assert timer_fires((0.5, 3.0), (0.7, 0.8)) == [0.8]      # later, then earlier
    assert timer_fires((0.5, None)) == []                    # cleared
    assert timer_fires((1.5, 4.0)) == [1.0, 4.0]             # re-armed after firing


def test_a_cancelled_host_timer_never_fires() -> None:
    loop = EventLoop()
    fired: list[float] = []
    timer = Timer(loop, lambda: fired.append(loop.now))
    timer.set(1.0)
    loop.at(0.5, timer.cancel)
    loop.run(until=10.0)
    assert fired == [] and timer.deadline is None
