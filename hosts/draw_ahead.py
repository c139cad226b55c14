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
streams (`held`): 16,000 workers each holding a block ahead would be 4 GiB; the default holds
1,024 workers' next blocks. While it is open the interpreter's switch interval is shortened
(`switch_s`): a drawing thread needs the GIL back twice a block, and the simulation's thread,
which holds it nearly always, gives it up only when asked and the interval has passed (5 ms by
default: a thread then draws ~100 blocks a second, at 0.5 ms ~700, measured on this project's
2-core machine).
"""

from __future__ import annotations

import os
import sys
import threading
from collections import deque
from concurrent.futures import Future, ThreadPoolExecutor
from typing import Callable

# values drawn ahead and not yet read, over every stream (256 MiB): a block ahead for each of
# 1,024 INA workers (64 Ki values each); at 16 M most of them drew their next block on the
# simulation's thread while the drawing core idled (loop -10 % at 1,024 x 2 MiB, +0.2 GB)
HELD_VALUES = 1 << 26
SWITCH_S = 0.0005            # the interpreter's switch interval while drawing ahead

# worker(generator, count, magnitude): a job drawing `gradient_stream.draw`'s values on a
# thread that needs no GIL (with result(), cancel(), cancelled(), done(), as a Future), or
# None where it does not take the draw
DrawWorker = Callable[..., object]
_draw_worker: DrawWorker | None = None


def use_draw_worker(worker: DrawWorker | None) -> None:
    """`DrawAhead.submit_draw` asks `worker` first from now on (None: the drawing threads
    alone). It must draw the very values `gradient_stream.draw` would: the simulator installs
    its checked C drawer's (inaemu/sim/native/fast_normals.py)."""
    global _draw_worker
    _draw_worker = worker


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
        self._jobs: deque = deque()     # the draw worker's jobs, until done (ended at the exit)

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
        jobs, self._jobs = self._jobs, deque()
        # the draw worker's: the queued cancelled, then the one drawing waited for
        started = [job for job in jobs if not job.cancel() and not job.cancelled()]
        for job in started:
            job.result()
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

    def submit_draw(self, draw: Callable, generator, count: int, magnitude: float):
        """`draw(generator, count, magnitude)` ahead: by the draw worker where one is installed
        and takes it (its thread never waits for the GIL, which the simulation's thread holds
        nearly always), else on a drawing thread; a Future (or the worker's job, which answers
        the same calls), or None when closed. The generator is the job's until it is done."""
        if self._pool is None:
            return None
        worker = _draw_worker
        if worker is not None:
            job = worker(generator, count, magnitude)
            if job is not None:
                jobs = self._jobs
                while jobs and jobs[0].done():      # (done ones let go of their values)
                    jobs.popleft()
                jobs.append(job)
                return job
        return self._pool.submit(draw, generator, count, magnitude)

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
