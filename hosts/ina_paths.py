"""The two paths of an InaSession's chunks (docs/fallback.md): slots below `switch_slots` are
aggregated in the switch (path 0), the others by the job's host aggregator (path 1). Each path
delivers in order and has round trips of its own, so each has its own RTO estimator, and loss
detection (docs/protocol.md §4.1) compares a chunk only with chunks of its own path.

A slot has at most one chunk in flight (position p + W is sent after p's result), so the path
is kept per slot: fixed for static slices, set for each chunk sent with hashed sharing
(docs/protocol.md §3.3: the switch says in p's RESULT whether p + W got a cell)."""

from __future__ import annotations

from .congestion import RtoEstimator


class Paths:
    """Which path a slot takes, and that path's RTO estimator (shared with the session, which
    exposes them as `rto_estimator` and `host_rto_estimator`)."""

    def __init__(self, switch_slots: int, switch_rto: RtoEstimator, host_rto: RtoEstimator,
                 pool_size: int | None = None):
        self.switch_slots = switch_slots
        self.switch_rto = switch_rto
        self.host_rto = host_rto
        # per slot: 1 when its chunk in flight is the host aggregator's
        self.host = bytearray(int(s >= switch_slots)
                              for s in range(max(pool_size or 0, switch_slots)))

    def path(self, slot: int) -> int:
        """0: the switch aggregates this slot's chunk; 1: the job's host aggregator does."""
        return self.host[slot] if slot < len(self.host) else 1

    def estimator(self, slot: int) -> RtoEstimator:
        """The RTO of the slot's path: the switch's, or the host aggregator's."""
        return self.host_rto if self.path(slot) else self.switch_rto
