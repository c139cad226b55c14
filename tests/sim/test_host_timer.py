"""The hosts' timers: host_node.Timer and its C twin (hosttimer.c) on either event loop, run
through the same scripts (the firing times, the events the loop runs, the fields between
steps), and the native loop's own events (made and read at events.Event's slots)."""

from __future__ import annotations

import itertools

import pytest

from inaemu.sim.cores import core_classes
from inaemu.sim.events import Event
from inaemu.sim.host_node import Timer
from inaemu.sim.native import native_classes, native_module, why_not

pytestmark = pytest.mark.skipif(native_classes() is None,
                                reason=f"no native core here: {why_not()}")

COMBINATIONS = list(itertools.product(["python", "native"], ["python", "native"]))


def timer_class(name: str) -> type:
    return Timer if name == "python" else native_module().Timer


# (virtual time, operation): "set" with a deadline, "cancel", or "set" None
SCRIPT = [
    (0.0, ("set", 5.0)),          # armed at 5
    (1.0, ("set", 7.0)),          # later: the event at 5 is kept, and re-arms itself
    (2.0, ("set", 3.0)),          # earlier: a new event at 3
    (2.5, ("set", 3.0)),          # the same deadline: kept
    (4.0, ("set", 6.0)),          # (fired at 3) armed again
    (4.5, ("cancel",)),
    (8.0, ("set", 9.0)),
    (8.5, ("set", None)),         # no deadline: the event at 9 comes up and does nothing
    (10.0, ("set", 11.0)),
    (10.5, ("set", 10.75)),
    (10.6, ("set", 12.0)),
]


def run_script(loop_core: str, timer_name: str):
    """The script's steps on `loop_core`'s loop with `timer_name`'s timer: when the action ran,
    the fields after every step, and the events the loop ran."""
    loop = core_classes(loop_core).loop()
    fired: list[float] = []
    timer = timer_class(timer_name)(loop, lambda: fired.append(loop.now))
    seen = []

    def step(operation) -> None:
        before = timer._event
        if operation[0] == "set":
            timer.set(operation[1])
        else:
            timer.cancel()
        event = timer._event
        seen.append((loop.now, operation, timer.deadline, event is None,
                     event is before, None if event is None else (event.time, event.pending),
                     None if before is None else before.pending))

    for at, operation in SCRIPT:
        loop.at(at, step, operation)
    why = loop.run(until=100.0)
    return fired, seen, why, loop.events_run


@pytest.mark.parametrize("loop_core, timer_name", COMBINATIONS)
def test_both_timers_do_the_same_on_both_loops(loop_core, timer_name):
    reference = run_script("python", "python")
    assert run_script(loop_core, timer_name) == reference
    fired, seen, why, _ = reference
    # (the event at 9 finds no deadline; the one at 10.75, kept for 12, re-arms itself)
    assert fired == [3.0, 12.0] and why == "idle"
    kept = [entry[4] for entry in seen]
    assert kept[1] and not kept[2] and kept[3]       # later kept, earlier replaced, equal kept


@pytest.mark.parametrize("loop_core", ["python", "native"])
def test_a_replaced_event_is_cancelled_and_a_cancel_lets_go_of_both(loop_core):
    loop = core_classes(loop_core).loop()
    timer = timer_class("native")(loop, lambda: None)
    timer.set(2.0)
    first = timer._event
    timer.set(1.0)
    assert not first.pending and timer._event.pending and timer._event.time == 1.0
    second = timer._event
    timer.cancel()
    assert timer._event is None and timer.deadline is None and not second.pending
    assert loop.pending_events == 0


@pytest.mark.parametrize("name", ["python", "native"])
def test_an_action_that_raises_stops_the_run(name):
    loop = core_classes("native").loop()

    def boom() -> None:
        raise RuntimeError("boom")

    timer = timer_class(name)(loop, boom)
    timer.set(1.0)
    with pytest.raises(RuntimeError, match="boom"):
        loop.run(until=5.0)
    assert timer.deadline is None and timer._event is None


@pytest.mark.parametrize("name", ["python", "native"])
def test_a_deleted_field_is_an_attribute_error(name):
    timer = timer_class(name)(core_classes("native").loop(), lambda: None)
    del timer.deadline
    with pytest.raises(AttributeError):
        timer._fire()


def test_the_native_hosts_make_c_timers():
    classes = native_classes()
    assert classes.host.timer_class is native_module().Timer
    assert core_classes("python").host.timer_class is Timer


def test_the_native_loop_makes_and_reads_events_at_their_slots():
    loop = core_classes("native").loop()
    ran = []
    event = loop.at(1, ran.append, "a")
    assert type(event) is Event and event.time == 1.0 and type(event.time) is float
    assert event.action == ran.append and event.args == ("a",) and event.pending
    dropped = loop.at(0.5, ran.append, "b")
    dropped.cancel()
    assert loop.pending_events == 1
    loop.run(until=2.0)
    assert ran == ["a"] and loop.events_run == 1


def test_a_loop_given_another_event_class_makes_its_events_by_calling_it():
    made = []

    class CountedEvent(Event):
        __slots__ = ()

        def __init__(self, time, action, args):
            made.append(time)
            super().__init__(time, action, args)

    loop = native_module().Loop(None, CountedEvent)
    ran = []
    event = loop.at(2.0, ran.append, 1)
    assert type(event) is CountedEvent and made == [2.0]
    loop.run(until=3.0)
    assert ran == [1]
