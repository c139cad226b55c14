"""The errors the host side raises; all derive from `HostError` so a driver can catch one type."""

from __future__ import annotations


class HostError(Exception):
    """Base of every error an all-reduce can end with."""


class UsageError(HostError, ValueError):
    """A session method called in a state that does not allow it, or a bad argument."""


class PeerUnreachable(HostError):
    """A chunk (or the MAX round) got no result after every allowed transmission."""

    def __init__(self, *, job: int, slot: int, chunk: int | None, tries: int):
        what = "the MAX round" if chunk is None else f"chunk {chunk} (slot {slot})"
        super().__init__(f"job {job}: no result for {what} after {tries} transmissions; "
                         "a worker, the switch or the path to it is unreachable")
        self.job, self.slot, self.chunk, self.tries = job, slot, chunk, tries


class RingProtocolError(HostError):
    """The left neighbour's byte stream is not the message the ring expects next."""


class PeerFailed(HostError):
    """A ring neighbour closed its connection, reset it, or could not be reached."""


class AllreduceTimeout(HostError):
    """The all-reduce did not finish before its hard deadline."""
