"""The timer heap of an INA session's loss recovery (`ina_recovery.LossRecovery`).

A min-heap of timer entries `(deadline, key, tries, kind)` in Python's tuple order: the
earliest deadline first, then the lower key, tries and kind. Entries are never removed from
the middle: one whose chunk was answered or resent since is stale and skipped when it reaches
the top (the recovery decides that).

This class is the definition. The simulator's native core gives its sessions a heap of the
same contract kept in C structures (`inaemu/sim/native/timerheap.c`, its `TimerHeap`), so that
the heap's comparisons read a few C fields instead of following tuples to their floats; both
run heapq's algorithm, so the same pushes and pops leave the same entries in the same places
(tests/sim/test_timer_heap.py).
"""

from __future__ import annotations

import heapq
from typing import Iterator

Entry = tuple[float, int, int, int]


class TimerHeap:
    """A session's timers: push, pop and look at the earliest; `len`; iterate in heap order."""

    __slots__ = ("_entries",)

    def __init__(self) -> None:
        self._entries: list[Entry] = []

    def push(self, deadline: float, key: int, tries: int, kind: int) -> None:
        """Arm a timer. The deadline is kept as a float; NaN is refused (no order holds it)."""
        deadline = float(deadline)
        if deadline != deadline:
            raise ValueError("a timer's deadline must be a number, got nan")
        heapq.heappush(self._entries, (deadline, key, tries, kind))

    def pop(self) -> Entry:
        """The earliest entry, removed (IndexError when empty)."""
        if not self._entries:
            raise IndexError("pop from an empty timer heap")
        return heapq.heappop(self._entries)

    def top(self) -> Entry:
        """The earliest entry, left in place (IndexError when empty)."""
        if not self._entries:
            raise IndexError("top of an empty timer heap")
        return self._entries[0]

    def __len__(self) -> int:
        return len(self._entries)

    def __iter__(self) -> Iterator[Entry]:
        """The entries in the heap's own order (a snapshot: pushes and pops after do not
        change it)."""
        return iter(tuple(self._entries))
