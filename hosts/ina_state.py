"""The INA worker state machine's vocabulary (hosts/ina_session.py): its states and the events
that move between them, what each input returns (`Step`), its traffic counters, and what it
keeps per chunk in flight (`Flight`). Plain data, no behaviour."""

from __future__ import annotations

import enum
from dataclasses import dataclass, fields
from typing import NamedTuple


class State(enum.Enum):
    IDLE = "idle"              # no call yet
    MAX_ROUND = "max_round"    # waiting for MAX_RESULT (the scale)
    DATA = "data"              # chunks in flight
    DONE = "done"              # `result` holds the last call's sum; start() may begin another
    FAILED = "failed"          # a chunk exhausted its retries; the session is unusable


class Event(enum.Enum):
    START = "start"                    # a float32 call
    START_INTEGERS = "start_integers"  # an int32 call (no MAX round)
    START_EMPTY = "start_empty"        # a call with no elements: nothing to exchange
    SCALE_AGREED = "scale_agreed"      # MAX_RESULT arrived
    LAST_RESULT = "last_result"        # every chunk's RESULT arrived
    GIVE_UP = "give_up"                # retries exhausted


TRANSITIONS: dict[tuple[State, Event], State] = {
    (State.IDLE, Event.START): State.MAX_ROUND,
    (State.DONE, Event.START): State.MAX_ROUND,
    (State.IDLE, Event.START_INTEGERS): State.DATA,
    (State.DONE, Event.START_INTEGERS): State.DATA,
    (State.IDLE, Event.START_EMPTY): State.DONE,
    (State.DONE, Event.START_EMPTY): State.DONE,
    (State.MAX_ROUND, Event.SCALE_AGREED): State.DATA,
    (State.DATA, Event.LAST_RESULT): State.DONE,
    (State.MAX_ROUND, Event.GIVE_UP): State.FAILED,
    (State.DATA, Event.GIVE_UP): State.FAILED,
}


class Step(NamedTuple):
    """What the caller must do now: send these payloads; call `timeout` at `deadline`.
    (A tuple: one is made per input, so it must be cheap.)"""

    send: tuple[bytes, ...]
    deadline: float | None


@dataclass(slots=True)
class Counters:
    """Traffic of a session (bytes are UDP payload bytes)."""

    packets_sent: int = 0
    bytes_sent: int = 0
    packets_received: int = 0
    bytes_received: int = 0
    retransmissions: int = 0        # every recovery packet: early, by timer, after a NACK
    fast_retransmissions: int = 0   # early: a later chunk's result came first (a QUERY, or the
                                    # values when queries are off)
    timer_retransmissions: int = 0  # the values resent because a timer expired (tail probes too)
    tail_probes: int = 0            # of those, the tail's probes of the earliest chunk (§4.2)
    nack_retransmissions: int = 0   # the values resent because the switch sent a NACK
    spurious_timeouts: int = 0      # a timer fired, then the first copy's result came back
    loss_events: int = 0            # data chunk transmissions found lost (early or by timer)
    congestion_events: int = 0      # loss events judged congestion: the window halved
    duplicates_ignored: int = 0     # results for chunks not in flight (or stale MAX results)
    malformed_ignored: int = 0      # undecodable, or a wrong count / impossible maximum
    foreign_ignored: int = 0        # another job, another worker, or not a result
    overflow_redos: int = 0         # chunks sent again at the safe scale (the switch flagged them)

    def copy(self) -> "Counters":
        return Counters(**{f.name: getattr(self, f.name) for f in fields(self)})

    def __sub__(self, other: "Counters") -> "Counters":
        return Counters(**{f.name: getattr(self, f.name) - getattr(other, f.name)
                           for f in fields(self)})


class Flight:
    """A chunk in flight (one is made per chunk sent: a plain class with slots, cheap)."""

    __slots__ = ("payload", "slot", "ver", "tries", "deadline", "sent_at", "serial",
                 "last_sent", "expiries", "suspect", "wait", "queried", "tail_probes")

    def __init__(self, payload: bytes, slot: int, ver: int, tries: int, deadline: float,
                 sent_at: float = 0.0, serial: int = 0, last_sent: float = 0.0,
                 wait: float = 0.0):
        self.payload = payload
        self.slot = slot
        self.ver = ver
        self.tries = tries
        self.deadline = deadline
        self.sent_at = sent_at      # the first transmission (an RTT sample if it is the only one)
        self.serial = serial        # of the latest transmission (congestion.CongestionEvents)
        self.last_sent = last_sent  # the latest transmission
        self.expiries = 0           # timer expiries (the backoff, and the give-up count)
        self.suspect = False        # a later transmission was answered: resend at reorder timer
        self.wait = wait            # the latest transmission's timer length
        self.queried = False        # the latest transmission was a QUERY (a NACK resends values)
        self.tail_probes = 0        # tail probes sent for it (LossRecovery.probe_tail)
