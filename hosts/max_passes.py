"""Gradients' max passes, started before the streams that need them exist.

A streamed INA worker cannot send until its codec knows the largest |x| of its whole input
(the MAX round), so every worker's first act is a pass over its gradient: ~2.4 ns a value in
C, 4 s of CPU for 64 workers x 100 MiB, on both cores before any data frame moves. The
switches' set-up before that (~1 s for a k = 8 fat-tree) runs on one core; the passes need
nothing from it (a pass is a function of the seed, the rank and the length alone), so a run
can start them first (`passes_ahead`) and the idle core fills that second with them.

While such a `with passes_ahead(keys):` block is open, `GradientStream.max_bits` asks it
first (`take`, through `gradient_stream.use_passes`): a pass already done is its result, one
running is waited for, and one not started is the asker's to make (it then gives the result
back with `put`, or `drop`s its claim). Each key's pass is made once, so jobs with the same
inputs share them. Nothing outside that block sees these results: streams measured elsewhere
(tests, benchmarks) draw as they always have.
"""

from __future__ import annotations

import threading
from collections import deque
from contextlib import contextmanager
from typing import Iterable, Iterator, NamedTuple

from . import gradient_stream


class PassKey(NamedTuple):
    """What a gradient's max pass depends on (`GradientStream`'s arguments; the stream asks
    with the plain tuple, which equals this one)."""
    seed: int
    rank: int
    length: int
    magnitude: float = 1.0
    job: int | None = None


def max_pass(key: PassKey) -> int:
    """The max pass of the gradient `key` names: its largest |x| as float32 bits (one call:
    in C the thread then needs the GIL only between passes, which the set-up holds)."""
    generator = gradient_stream.generator_of(key.seed, key.rank, key.job)
    return gradient_stream.max_bits_of(generator, key.length, key.magnitude)


class MaxPasses:
    """Passes made once each, by a thread of its own or by whoever asks first."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._done: dict[PassKey, int] = {}
        self._running: dict[PassKey, threading.Event] = {}
        self._queue: deque[PassKey] = deque()
        self._thread: threading.Thread | None = None
        self.made_ahead = 0            # passes the thread made (tests, benchmarks)

    def start(self, keys: Iterable[PassKey]) -> None:
        """The passes of `keys` made in that order on a thread, until `stop`."""
        with self._lock:
            for key in keys:
                if key not in self._done and key not in self._running:
                    self._queue.append(key)
            if self._thread is None and self._queue:
                self._thread = threading.Thread(target=self._make_queued, daemon=True,
                                                name="inaemu-max-passes")
                self._thread.start()

    def take(self, key: PassKey) -> int | None:
        """The pass's result (waiting for it while another thread makes it), or None: the
        pass is now the caller's to make, who then calls `put` or `drop`."""
        while True:
            with self._lock:
                if key in self._done:
                    return self._done[key]
                running = self._running.get(key)
                if running is None:
                    self._running[key] = threading.Event()
                    return None
            running.wait()             # then done, or dropped: asked again

    def put(self, key: PassKey, top: int) -> None:
        with self._lock:
            self._done[key] = top
            self._running.pop(key).set()

    def drop(self, key: PassKey) -> None:
        """A claimed pass not made after all (its maker failed): the next asker makes it."""
        with self._lock:
            self._running.pop(key).set()

    def stop(self) -> None:
        """No more passes ahead: the thread ends after the one it is making."""
        with self._lock:
            self._queue.clear()
        self.wait()

    def wait(self) -> None:
        """Until the thread has made (or skipped) every pass it was given."""
        with self._lock:
            thread = self._thread
        if thread is not None:
            thread.join()

    def _make_queued(self) -> None:
        while True:
            with self._lock:
                while self._queue and (self._queue[0] in self._done
                                       or self._queue[0] in self._running):
                    self._queue.popleft()
                if not self._queue:
                    self._thread = None
                    return
                key = self._queue.popleft()
                self._running[key] = threading.Event()
            try:
                top = max_pass(key)
            except BaseException:
                self.drop(key)
                raise
            self.put(key, top)
            self.made_ahead += 1


_blocks = threading.Lock()
_depth = 0                       # `passes_ahead` blocks open (runs in threads share one)


@contextmanager
def passes_ahead(keys: Iterable[PassKey]) -> Iterator[MaxPasses]:
    """Max passes made on a thread from now on, for the streams of this block to take. A
    block opened inside another (a run in another thread) adds its keys to the open one's
    passes; the thread stops and the passes are let go when the outermost block closes."""
    global _depth
    with _blocks:
        passes = gradient_stream.passes_in_use()
        if _depth == 0 or passes is None:
            passes = MaxPasses()
            gradient_stream.use_passes(passes)
        _depth += 1
    try:
        passes.start(keys)
        yield passes
    finally:
        with _blocks:
            _depth -= 1
            last = _depth == 0
            if last:
                gradient_stream.use_passes(None)
        if last:
            passes.stop()
