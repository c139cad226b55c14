"""The event engine: a virtual clock and a heap of timed callbacks.

Why a heap with sequence numbers: two events due at the same virtual time must always run in
the order they were scheduled, or two runs with the same seed could diverge (the heap alone
would compare the callbacks). Time is a float in seconds and only moves forward.

Nothing here knows about packets: links, switches and hosts schedule plain callbacks.
Cancellation is lazy (a cancelled event stays in the heap and is skipped when it comes up),
which keeps `cancel` O(1) for the host timers that are re-armed on every packet.
"""

from __future__ import annotations

import heapq
from typing import Any, Callable


class Event:
    """A scheduled callback; `cancel()` makes it a no-op."""

    __slots__ = ("time", "action", "args")

    def __init__(self, time: float, action: Callable[..., Any], args: tuple):
        self.time = time
        self.action: Callable[..., Any] | None = action
        self.args = args

    def cancel(self) -> None:
        self.action = None
        self.args = ()

    @property
    def pending(self) -> bool:
        return self.action is not None


def _heap_time(time: float, now: float) -> float:
    """`time` as the heap keeps it: a float not earlier than `now`, +0.0 for -0.0; a NaN has
    no place in the order (the native loop orders times as their bits): ValueError."""
    if time != time:
        raise ValueError("an event's time must be a number, got nan")
    return (now if time < now else time) + 0.0


class EventLoop:
    """Virtual time plus the events still to run.

    `run(until=, done=, done_every=1)` returns why it stopped: "done" (`stop()` was called, or
    the predicate became true), "idle" (nothing left to do) or "time limit". The predicate is
    asked before the first event, then before every `done_every`-th one after it (a progress
    hook need not cost a call per event), and once more when the heap is empty. A trace, when
    given, is a list that receives one text line per traced fact (`record`): the determinism
    tests compare two runs' traces. An event's time is a float not earlier than now (an
    earlier one runs now, -0.0 is 0.0); a NaN is refused with ValueError.

    Heap entries are `(time, sequence, action, args, event)`: `at` makes an `Event` that can be
    cancelled and holds the action itself (the entry's action and args are None; it is skipped
    when its event's action is gone); `post` is the per-frame
    path (link arrivals, switch service ends) and makes no object beyond the entry.
    """

    def __init__(self, trace: list[str] | None = None):
        self.now = 0.0
        self.events_run = 0
        self.trace = trace
        self._heap: list[tuple] = []     # (time, seq, ...) compare in C; seq is unique
        self._seq = 0
        self._stopped = False

    def clock(self) -> float:
        """The virtual time; given to every `p4switch.runtime.Switch` as `sw.clock`."""
        return self.now

    def at(self, time: float, action: Callable[..., Any], *args: Any) -> Event:
        """Run `action(*args)` at virtual time `time` (not earlier than now); cancellable."""
        time = _heap_time(time, self.now)
        self._seq += 1
        event = Event(time, action, args)
        # the action lives in the event only, so that cancel() lets go of it (and of what it
        # holds) at once rather than when the entry comes up
        heapq.heappush(self._heap, (time, self._seq, None, None, event))
        return event

    def after(self, delay: float, action: Callable[..., Any], *args: Any) -> Event:
        return self.at(self.now + delay, action, *args)

    def post(self, time: float, action: Callable[[Any], Any], arg: Any) -> None:
        """Run `action(arg)` at `time` (not earlier than now); not cancellable, and cheaper."""
        time = _heap_time(time, self.now)
        self._seq += 1
        heapq.heappush(self._heap, (time, self._seq, action, (arg,), None))

    def stop(self) -> None:
        """End `run` before the next event ("done")."""
        self._stopped = True

    def record(self, line: str) -> None:
        """Add one line to the trace (prefixed with the time), if tracing."""
        if self.trace is not None:
            self.trace.append(f"{self.now:.9f} {line}")

    @property
    def pending_events(self) -> int:
        return sum(1 for entry in self._heap if entry[4] is None or entry[4].pending)

    def run(self, *, until: float, done: Callable[[], bool] | None = None,
            done_every: int = 1) -> str:
        if isinstance(done_every, bool) or not isinstance(done_every, int) or done_every < 1:
            raise ValueError(f"done_every must be a positive integer, got {done_every!r}")
        heap = self._heap
        pop = heapq.heappop
        self._stopped = False
        ran = self.events_run
        ask = 1                 # events until the predicate is asked again
        try:
            while heap:
                if self._stopped:
                    return "done"
                if done is not None:
                    ask -= 1
                    if not ask:
                        ask = done_every
                        if done():
                            return "done"
                when = heap[0][0]
                if when > until:
                    self.now = until
                    return "time limit"
                _, _, action, args, event = pop(heap)
                if event is not None:
                    action = event.action
                    if action is None:
                        continue
                    args = event.args
                self.now = when
                ran += 1
                action(*args)
            return "done" if self._stopped or (done is not None and done()) else "idle"
        finally:
            self.events_run = ran
