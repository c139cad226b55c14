"""Seeded gradients drawn on other cores, ahead of the thread that reads them.

Drawing a gradient's normals is ~10 ns a value, the largest single cost of a streamed
simulation (each INA worker reads its vector twice: the max pass, then the quantize pass a
block at a time as its window opens), and it runs on the simulation's own thread. NumPy draws
without the GIL (`Generator.standard_normal` and the float32 cast), so a thread can draw a
stream's next block while the event loop runs on; `GradientStream(ahead=)` asks for that
after each read in order. The values are the same ones: the stream's one generator draws
them in the same order, only on another thread (the stream waits for that draw before it
touches the generator again).

`DrawAhead` is that thread (or `threads` of them) and a budget of values held ahead over all
streams (`held`): 16,000 workers each holding a block ahead would be 4 GiB. While it is open
the interpreter's switch interval is shortened (`switch_s`): a drawing thread needs the GIL
back twice a block, and the simulation's thread, which holds it nearly always, gives it up
only when asked and the interval has passed (5 ms by default: a thread then draws ~100 blocks
a second, at 0.5 ms ~700, measured on this project's 2-core machine).
"""

from __future__ import annotations

import os
import sys
import threading
from concurrent.futures import Future, ThreadPoolExecutor
from typing import Callable

HELD_VALUES = 1 << 24        # values drawn ahead and not yet read, over every stream (64 MiB)
SWITCH_S = 0.0005            # the interpreter's switch interval while drawing ahead


def usable_cores() -> int:
    """The cores this process may run on (its CPU affinity, which a container or `taskset`
    narrows; `os.cpu_count` counts the machine's)."""
    try:
        return max(1, len(os.sched_getaffinity(0)))
    except (AttributeError, OSError):          # (no affinity on this platform)
        return max(1, os.cpu_count() or 1)


class DrawAhead:
    """Threads that draw streams' values ahead; a context manager (`with DrawAhead() as a:`)."""

    def __init__(self, threads: int | None = None, held: int = HELD_VALUES,
                 switch_s: float = SWITCH_S):
        """`threads`: drawing threads, by default the cores this process may run on less
        one, and none on a single core (there a drawing thread would only take turns with the
        reader: nothing is drawn ahead, `open` stays False)."""
        if threads is None:
            threads = usable_cores() - 1
        if threads < 0:
            raise ValueError(f"threads must be >= 0, got {threads}")
        self.threads, self.held_limit, self.switch_s = threads, held, switch_s
        self.held = 0                   # values drawn ahead, not yet read or given back
        self._lock = threading.Lock()
        self._pool: ThreadPoolExecutor | None = None
        self._switch: float | None = None

    def __enter__(self) -> "DrawAhead":
        if self.threads == 0:
            return self
        self._pool = ThreadPoolExecutor(self.threads, thread_name_prefix="inaemu-draw")
        self._switch = sys.getswitchinterval()
        sys.setswitchinterval(self.switch_s)
        return self

    def __exit__(self, *_exc) -> None:
        pool, self._pool = self._pool, None
        if pool is not None:
            pool.shutdown(wait=True, cancel_futures=True)
        self.held = 0       # what streams drew ahead and never read is theirs to drop
        if self._switch is not None:
            sys.setswitchinterval(self._switch)
            self._switch = None

    @property
    def open(self) -> bool:
        return self._pool is not None

    def submit(self, work: Callable, *args) -> Future | None:
        """`work(*args)` on a drawing thread, or None when closed (the caller works itself)."""
        pool = self._pool
        return None if pool is None else pool.submit(work, *args)

    def reserve(self, values: int) -> bool:
        """Room for `values` more values held ahead (then counted until `release`)? Never
        while closed."""
        with self._lock:
            if self._pool is None or self.held + values > self.held_limit:
                return False
            self.held += values
            return True

    def release(self, values: int) -> None:
        """`values` reserved are read (or dropped); after closing, nothing is counted."""
        with self._lock:
            if self._pool is not None:
                self.held -= values
