"""An INA session's timer heap: hosts/timer_heap.py's TimerHeap (the definition, heapq over
tuples) and the native core's TimerHeap in C (inaemu/sim/native/timerheap.c) hold the same
entries in the same places, push after push and pop after pop, with deadlines that tie,
entries that differ only in a later field, keys of the MAX round (-1) and large chunk
numbers; both refuse what has no place in the order."""

import heapq
import math
import random

import pytest

from hosts.timer_heap import TimerHeap
from inaemu.sim.native import native_loop_class, native_module
from inaemu.sim.native import why_not as native_why_not

needs_c = pytest.mark.skipif(native_loop_class() is None,
                             reason=f"no native core here: {native_why_not()}")


def _entries(rng: random.Random, count: int) -> list:
    """Timer entries (deadline, key, tries, kind) whose deadlines and keys often tie."""
    entries = []
    for _ in range(count):
        deadline = rng.choice((0.5, 0.25, 1e-3, -0.0, 0.0)) + rng.randrange(8) * 0.125
        key = rng.choice((-1, rng.randrange(5), rng.randrange(2**40)))
        entries.append((deadline, key, rng.randrange(3), rng.randrange(3)))
    return entries


def test_the_python_heap_is_heapqs_list_of_tuples():
    rng = random.Random(7)
    heap, theirs = TimerHeap(), []
    for entry in _entries(rng, 300):
        heap.push(*entry)
        heapq.heappush(theirs, entry)
        assert list(heap) == theirs
        if rng.random() < 0.4:
            assert heap.top() == theirs[0]
            assert heap.pop() == heapq.heappop(theirs)
    assert [heap.pop() for _ in range(len(heap))] == [heapq.heappop(theirs)
                                                       for _ in range(len(theirs))]


@needs_c
@pytest.mark.parametrize("seed", range(8))
def test_pushes_and_pops_leave_the_same_heap(seed):
    rng = random.Random(seed)
    ours, theirs = native_module().TimerHeap(), TimerHeap()
    for entry in _entries(rng, 400):
        ours.push(*entry)
        theirs.push(*entry)
        assert list(ours) == list(theirs)
        assert len(ours) == len(theirs)
        if rng.random() < 0.45:
            assert ours.top() == theirs.top()
            popped = ours.pop()
            assert popped == theirs.pop()
            assert [type(x) for x in popped] == [float, int, int, int]
            assert list(ours) == list(theirs)
    while theirs:
        assert ours.pop() == theirs.pop()
    assert len(ours) == 0 and not ours


@needs_c
def test_keys_are_handed_back_as_pushed():
    """The key object a timer was armed with is the one its entry gives back (the flight
    table's key: a C lookup of it finds the same entry)."""
    heap = native_module().TimerHeap()
    key = 2**50 + 3
    heap.push(1.5, key, 1, 0)
    assert heap.top()[1] is key
    assert heap.pop()[1] is key


@needs_c
def test_iteration_is_a_snapshot():
    heap = native_module().TimerHeap()
    for deadline in (3.0, 1.0, 2.0):
        heap.push(deadline, 1, 1, 0)
    entries = iter(heap)
    heap.pop()
    heap.push(0.5, 9, 1, 0)
    assert [e[0] for e in entries] == [1.0, 3.0, 2.0]


@pytest.mark.parametrize("make", [TimerHeap, pytest.param(
    lambda: native_module().TimerHeap(), marks=needs_c)], ids=["python", "native"])
def test_empty_heaps_and_nan_deadlines_are_refused(make):
    heap = make()
    with pytest.raises(IndexError, match="empty timer heap"):
        heap.pop()
    with pytest.raises(IndexError, match="empty timer heap"):
        heap.top()
    with pytest.raises(ValueError, match="nan"):
        heap.push(math.nan, 1, 1, 0)
    assert len(heap) == 0
    heap.push(2, 1, 1, 0)                          # (an int deadline is kept as a float)
    assert type(heap.top()[0]) is float
    assert heap.pop() == (2.0, 1, 1, 0) and len(heap) == 0


@needs_c
def test_the_native_heap_refuses_what_it_cannot_hold():
    heap = native_module().TimerHeap()
    with pytest.raises(TypeError, match="key must be an int"):
        heap.push(1.0, "x", 1, 0)
    with pytest.raises(TypeError, match="tries must be an int"):
        heap.push(1.0, 1, 1.5, 0)
    with pytest.raises(TypeError, match="kind must be an int"):
        heap.push(1.0, 1, 1, None)
    with pytest.raises(OverflowError):
        heap.push(1.0, 2**70, 1, 0)
    with pytest.raises(TypeError):
        heap.push(1.0, 1, 1)
    with pytest.raises(TypeError, match="no arguments"):
        native_module().TimerHeap([])
    assert len(heap) == 0                          # (nothing half-pushed)
    heap.push(1.0, 1, 1, 0)
    assert list(heap) == [(1.0, 1, 1, 0)]
