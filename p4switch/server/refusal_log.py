"""The TLS front's refusal lines, at most `per_second` a second.

Why: every refused connection is one warning naming the peer and why (tls_front.py), which is
what an operator needs for a misconfigured controller, but a port scan or a plaintext client
retrying in a loop would then write thousands of lines a second to the switch's stderr. Within
each one-second window the first `per_second` refusals are logged; the rest are counted, and
one line says how many were not shown once the window is over (or at `flush()`, when the front
stops). The front's own count of refusals (the exit summary's) is kept apart and stays exact.
"""

from __future__ import annotations

import logging
import time
from typing import Callable

PER_SECOND = 10
WINDOW_S = 1.0


class RefusalLog:
    """`refused(peer, reason)` for each refusal; `schedule(delay, callback)` (the event loop's
    `call_later`) lets the not-shown count come out after a burst ends, without a later
    refusal; `clock` is replaceable for tests."""

    def __init__(self, logger: logging.Logger, per_second: int = PER_SECOND,
                 schedule: Callable[[float, Callable[[], None]], object] | None = None,
                 clock: Callable[[], float] = time.monotonic) -> None:
        if per_second < 1:
            raise ValueError(f"per_second: expected at least 1 line a second, got {per_second}")
        self.logger = logger
        self.per_second = per_second
        self.schedule = schedule
        self.clock = clock
        self.not_shown = 0                  # over the whole life, for tests and the curious
        self._window_start: float | None = None
        self._shown = 0
        self._held = 0                      # not shown in the current window, not yet told
        self._flush_pending = False

    def refused(self, peer: str, reason: str) -> None:
        now = self.clock()
        if self._window_start is None or now - self._window_start >= WINDOW_S:
            self.flush()
            self._window_start, self._shown = now, 0
        if self._shown < self.per_second:
            self._shown += 1
            self.logger.warning("P4Runtime TLS: refused %s: %s", peer, reason)
            return
        self._held += 1
        self.not_shown += 1
        if self.schedule is not None and not self._flush_pending:
            self._flush_pending = True
            remaining = max(0.0, self._window_start + WINDOW_S - now)
            self.schedule(remaining, self._flush_scheduled)

    def flush(self) -> None:
        """Say how many refusals were not shown since the last such line, if any."""
        if self._held:
            held, self._held = self._held, 0
            self.logger.warning(
                "P4Runtime TLS: %d more connection%s refused, not shown (at most %d lines a "
                "second; the exit summary counts them all)", held, "s" if held != 1 else "",
                self.per_second)

    def _flush_scheduled(self) -> None:
        self._flush_pending = False
        self.flush()


__all__ = ["PER_SECOND", "RefusalLog"]
