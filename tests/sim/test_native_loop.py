"""The native event loop's `run` against events.py's (the rest of the loop's contract is
checked event for event by tests/sim/test_cores.py): when the `done` predicate is asked, and
what `run` refuses, and the order events run in."""

from __future__ import annotations

import random

import pytest

from inaemu.sim.cores import core_classes
from inaemu.sim.native import native_classes, why_not

pytestmark = pytest.mark.skipif(native_classes() is None,
                                reason=f"no native core here: {why_not()}")


def asked_at(core: str, done_every: int, true_after: int, events: int = 50):
    """Run `events` chained events with a predicate that turns true once `true_after` events
    have run: the events run when it was asked, why the run stopped, and the events run."""
    loop = core_classes(core).loop()
    asked, ran = [], [0]      # (events.py's events_run is only brought up to date by run's end)

    def step(left: int) -> None:
        ran[0] += 1
        if left:
            loop.post(loop.now + 1e-6, step, left - 1)

    def done() -> bool:
        asked.append(ran[0])
        return ran[0] >= true_after

    loop.post(0.0, step, events - 1)
    why = loop.run(until=1.0, done=done, done_every=done_every)
    return asked, why, loop.events_run


@pytest.mark.parametrize("done_every", [1, 3, 7, 64])
@pytest.mark.parametrize("true_after", [0, 10, 1000])
def test_done_is_asked_at_the_same_events_on_both_cores(done_every, true_after):
    python = asked_at("python", done_every, true_after)
    assert asked_at("native", done_every, true_after) == python
    asked, why, ran = python
    assert asked[0] == 0 and why == ("done" if true_after <= 50 else "idle")
    if true_after == 1000:       # never true: asked every done_every events, and at the end
        assert asked == list(range(0, 50, done_every)) + [50] and ran == 50


@pytest.mark.parametrize("core", ["python", "native"])
@pytest.mark.parametrize("bad", [0, -1, True, 2.0])
def test_run_refuses_a_bad_done_every(core, bad):
    loop = core_classes(core).loop()
    with pytest.raises(ValueError, match="done_every must be a positive integer"):
        loop.run(until=1.0, done=lambda: False, done_every=bad)


def run_order(core: str, seed: int) -> tuple[list, str]:
    """A seeded schedule of a few thousand events on one loop: times drawn from a small set
    (many ties, kept in posting order), events that post and schedule more while they run,
    some cancelled, `post` and `at` mixed. The order they ran in, and why the run ended."""
    rng = random.Random(seed)
    loop = core_classes(core).loop()
    ran: list = []
    times = [rng.choice([0.0, 1e-6, 2e-6, 5e-6]) + rng.randrange(200) * 1e-6
             for _ in range(4000)]
    made = [0]

    def fire(tag) -> None:
        ran.append((tag, loop.now))
        if made[0] < 6000 and rng.random() < 0.6:
            for _ in range(rng.randint(1, 3)):
                made[0] += 1
                when = loop.now + rng.choice([0.0, 0.0, 1e-6, rng.random() * 5e-5])
                if rng.random() < 0.5:
                    loop.post(when, fire, ("p", made[0]))
                else:
                    event = loop.at(when, fire, ("a", made[0]))
                    if rng.random() < 0.1:
                        event.cancel()

    events = []
    for i, when in enumerate(times):
        if i % 3:
            loop.post(when, fire, ("p0", i))
        else:
            events.append(loop.at(when, fire, ("a0", i)))
    for event in rng.sample(events, len(events) // 8):
        event.cancel()
    why = loop.run(until=1.0)
    return ran, why


@pytest.mark.parametrize("seed", [1, 2, 3, 4])
def test_events_run_in_the_same_order_on_both_cores(seed):
    """The native queue (eventloop.c's heap) pops what events.py's heapq pops: time order,
    ties in posting order, cancelled events skipped, events made while running."""
    python = run_order("python", seed)
    native = run_order("native", seed)
    assert native == python
    ran, why = python
    assert why == "idle" and len(ran) > 4000
    assert [t for _, t in ran] == sorted(t for _, t in ran)


def edge_order(core: str, seed: int) -> list:
    """Events at times the native heap keys by their bits: -0.0 beside 0.0, times earlier than
    now (run now), infinity, and ties among them, posted before and while the loop runs, on
    heaps from one entry to a few hundred (so the sifts end at every kind of leaf). The order
    they ran in, with the time each saw."""
    rng = random.Random(seed)
    loop = core_classes(core).loop()
    ran: list = []
    choices = [-0.0, 0.0, -1.0, 1e-9, 2e-9, 1e300, float("inf")]

    def fire(tag) -> None:
        ran.append((tag, repr(loop.now)))
        if tag[1] < 300 and rng.random() < 0.5:
            when = rng.choice(choices + [loop.now, loop.now - 1e-9, -loop.now])
            loop.post(when, fire, ("made", tag[1] + 1))

    for i in range(rng.randrange(1, 300)):
        when = rng.choice(choices)
        if i % 2:
            loop.post(when, fire, ("p", i))
        else:
            loop.at(when, fire, ("a", i))
    assert loop.run(until=float("inf")) == "idle"
    return ran


@pytest.mark.parametrize("seed", range(8))
def test_signed_zeros_past_and_infinite_times_run_in_the_same_order_on_both_cores(seed):
    """-0.0 runs as 0.0 (the clock never reads -0.0), a past time runs now, infinity last, and
    ties keep their posting order: the native heap's keys (a time's bits and its sequence as
    one number) order as events.py's tuples do."""
    python = edge_order("python", seed)
    assert edge_order("native", seed) == python
    assert all(now != "-0.0" for _, now in python)


@pytest.mark.parametrize("core", ["python", "native"])
@pytest.mark.parametrize("how", ["at", "post", "after"])
def test_a_nan_time_is_refused_and_nothing_is_scheduled(core, how):
    """A NaN has no place in the order: ValueError, and the heap is as it was."""
    loop = core_classes(core).loop()
    ran: list = []
    loop.post(1.0, ran.append, "kept")
    schedule = {"at": lambda: loop.at(float("nan"), ran.append, "nan"),
                "post": lambda: loop.post(float("nan"), ran.append, "nan"),
                "after": lambda: loop.after(float("nan"), ran.append, "nan")}[how]
    with pytest.raises(ValueError, match="nan"):
        schedule()
    assert loop.run(until=2.0) == "idle"
    assert ran == ["kept"]
