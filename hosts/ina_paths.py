"""The two paths of an InaSession's chunks (docs/fallback.md): slots below `switch_slots` are
aggregated in the switch (path 0), the others by the job's host aggregator (path 1). Each path
delivers in order and has round trips of its own, so each has its own RTO estimator, and loss
detection (docs/protocol.md §4.1) compares a chunk only with chunks of its own path."""

from __future__ import annotations

from .congestion import RtoEstimator


class Paths:
    """Which path a slot takes, and that path's RTO estimator (shared with the session, which
    exposes them as `rto_estimator` and `host_rto_estimator`)."""

    def __init__(self, switch_slots: int, switch_rto: RtoEstimator, host_rto: RtoEstimator):
        self.switch_slots = switch_slots
        self.switch_rto = switch_rto
        self.host_rto = host_rto

    def path(self, slot: int) -> int:
        """0: the switch aggregates this slot; 1: the job's host aggregator does."""
        return 0 if slot < self.switch_slots else 1

    def estimator(self, slot: int) -> RtoEstimator:
        """The RTO of the slot's path: the switch's, or the host aggregator's."""
        return self.host_rto if slot >= self.switch_slots else self.switch_rto
