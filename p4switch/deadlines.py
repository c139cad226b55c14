"""A daemon thread that runs work when its next deadline comes (digest lists' timeouts).

`work()` does what is due and returns the next deadline (time.monotonic() seconds) or None;
`wake()` makes the thread ask again at once (a new deadline may be nearer). A wake between the
thread's last `work()` and its wait makes the wait return at once, so no deadline is missed.
"""

from __future__ import annotations

import threading
import time
from typing import Callable

IDLE_WAIT_S = 1.0   # how long to wait when nothing is pending (a wake ends it sooner)


class DeadlineThread:
    def __init__(self, work: Callable[[], float | None], name: str) -> None:
        self._work = work
        self._name = name
        self._wake = threading.Event()
        self._stop = threading.Event()
        self._lock = threading.Lock()
        self._thread: threading.Thread | None = None

    def start(self) -> None:
        with self._lock:
            if self._stop.is_set() or self._thread is not None:
                return
            self._thread = threading.Thread(target=self._run, name=self._name, daemon=True)
            self._thread.start()

    def wake(self) -> None:
        self._wake.set()

    def _run(self) -> None:
        while not self._stop.is_set():
            deadline = self._work()
            wait = IDLE_WAIT_S if deadline is None else \
                min(IDLE_WAIT_S, max(0.0, deadline - time.monotonic()))
            self._wake.wait(wait)
            self._wake.clear()

    def stop(self) -> None:
        self._stop.set()
        self._wake.set()
        with self._lock:
            thread = self._thread
        if thread is not None and thread is not threading.current_thread():
            thread.join(timeout=5.0)


__all__ = ["DeadlineThread"]
