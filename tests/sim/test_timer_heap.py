"""The INA sessions' timer heaps in C (inaemu/sim/native/timerheap.c): heapq's very lists,
push after push and pop after pop, with deadlines that tie, entries that differ only later,
and items that are not (float, ...) tuples at all."""

import heapq
import random

import pytest

from inaemu.sim.native import native_module, native_loop_class
from inaemu.sim.native import why_not as native_why_not

needs_c = pytest.mark.skipif(native_loop_class() is None,
                             reason=f"no native core here: {native_why_not()}")


def _entries(rng: random.Random, count: int) -> list:
    """Timer entries (deadline, key, tries, kind) whose deadlines often tie."""
    deadlines = [rng.choice((0.5, 0.25, 1e-3)) + rng.randrange(8) * 0.125 for _ in range(count)]
    return [(d, rng.randrange(5), rng.randrange(3), rng.randrange(3)) for d in deadlines]


@needs_c
@pytest.mark.parametrize("seed", range(6))
def test_pushes_and_pops_leave_heapqs_list(seed):
    module = native_module()
    rng = random.Random(seed)
    ours, theirs = [], []
    for entry in _entries(rng, 400):
        module.heap_push(ours, entry)
        heapq.heappush(theirs, entry)
        assert ours == theirs
        if rng.random() < 0.45:
            assert module.heap_pop(ours) == heapq.heappop(theirs)
            assert ours == theirs
    while theirs:
        assert module.heap_pop(ours) == heapq.heappop(theirs)
        assert ours == theirs


@needs_c
def test_other_items_are_ordered_as_python_orders_them():
    """Ints for deadlines, a float against an int, equal first items: Python's `<`."""
    module = native_module()
    items = [(3, "b"), (2.5, "z"), (2.5, "a"), (2, 9), (3.0, "a"), (1,), (2.5,)]
    ours, theirs = [], []
    for item in items:
        module.heap_push(ours, item)
        heapq.heappush(theirs, item)
    assert ours == theirs
    assert [module.heap_pop(ours) for _ in items] == [heapq.heappop(theirs) for _ in items]


@needs_c
def test_bad_heaps_are_refused_as_heapq_refuses_them():
    module = native_module()
    with pytest.raises(IndexError):
        module.heap_pop([])
    with pytest.raises(TypeError):
        module.heap_push((), (1.0,))
    with pytest.raises(TypeError):
        module.heap_pop(None)
    with pytest.raises(TypeError):          # (entries that do not compare)
        module.heap_push([(1.0, 2)], (1.0, "x"))
    assert module.heap_pop([(1.0, 2)]) == (1.0, 2)
