"""P4Runtime idle timeouts: which entries of ageing tables to report, and the reports.

A table whose P4Info says `idle_timeout_behavior: NOTIFY_CONTROL` (P4's `support_timeout =
true`) takes `idle_timeout_ns` on its entries. The runtime stamps every hit of such an entry
(p4switch/runtime: `table_idle`); a sweep every `SWEEP_S` seconds reports, in one
IdleTimeoutNotification to the primary client, each entry idle for at least its TTL that was
not reported since its last hit, and again each further TTL it stays idle (the P4Runtime
specification's rule; simple_switch_grpc instead sweeps every second and reports an entry
still idle every other sweep). A report carries the entry as written minus its action: table,
match, priority, metadata, idle_timeout_ns; as simple_switch_grpc's.

`due` is the rule, pure; `IdleSweeper` is the thread that applies it.
"""

from __future__ import annotations

import threading
from typing import Callable

SWEEP_S = 0.25


def due(entries: list[tuple[int, int, int]], reported: dict[int, float],
        now: float) -> list[int]:
    """Handles to report now. `entries`: (handle, TTL ns, ns idle) of one table; `reported`:
    handle -> when it was last reported (the switch clock's seconds, as `now`)."""
    out = []
    for handle, ttl_ns, idle_ns in entries:
        if ttl_ns <= 0 or idle_ns < ttl_ns:
            continue
        last_hit = now - idle_ns / 1e9
        at = reported.get(handle)
        if at is None or at < last_hit or (now - at) * 1e9 >= ttl_ns:
            out.append(handle)
    return out


class IdleSweeper:
    """Calls `sweep()` every `period_s` seconds on a daemon thread, from the first `start()`
    (a device starts it when a pipeline with an ageing table is committed) until `stop()`."""

    def __init__(self, sweep: Callable[[], None], period_s: float = SWEEP_S) -> None:
        self._sweep = sweep
        self.period_s = period_s
        self._lock = threading.Lock()
        self._thread: threading.Thread | None = None
        self._stop = threading.Event()

    def start(self) -> None:
        with self._lock:
            if self._stop.is_set() or self._thread is not None:
                return
            self._thread = threading.Thread(target=self._run, name="p4rt-idle-timeouts",
                                            daemon=True)
            self._thread.start()

    def _run(self) -> None:
        while not self._stop.wait(self.period_s):
            self._sweep()

    def stop(self) -> None:
        self._stop.set()
        with self._lock:
            thread = self._thread
        if thread is not None and thread is not threading.current_thread():
            thread.join(timeout=5.0)


__all__ = ["IdleSweeper", "SWEEP_S", "due"]
