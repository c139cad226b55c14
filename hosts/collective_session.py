"""`CollectiveSession`: one rank of any plan-based all-reduce, as a sans-I/O state machine.

The caller owns one reliable ordered byte stream to and from every peer (TCP on Mininet, the
simulator's transport model); nothing here does I/O or reads a clock. `start(vector)` and
`receive(peer, bytes)` return `[(peer, bytes), ...]` to append to the streams to those peers.

Messages are hosts/ring_wire.py's `Segment`s (kind ALL_GATHER; whether the receiver adds or
keeps the data is its plan's business): `call` = the call number, `index` = the message's
number on its (sender, receiver) pair, `step` = 0. A message may arrive before the receiver
can use it (its operation waits on earlier ones): it is kept until then, also across the start
of a call. A message its receive already had in this call is an error, never applied twice.

A session's plan is for one vector length. `CollectiveCalls` runs calls of any lengths over
the same streams (a DDP hook's buckets): it owns the streams' decoders and numbers the calls
across lengths, so bytes of the next call that arrive with the end of the current one go to
the next call's session (docs/algorithms.md, "back-to-back calls").
Sums are accumulated in float32 (or float64); every element's final value is computed at one
rank and copied to the others, so every rank ends with the same bits. Anything that does not
match the plan raises `RingProtocolError` and the session is FAILED.
"""

from __future__ import annotations

import enum
from dataclasses import dataclass
from typing import Callable

import numpy as np

from .collective_plan import Op, Recv, Send, dependencies
from .errors import RingProtocolError, UsageError
from .ring_wire import HEADER_BYTES, RingKind, Segment, StreamDecoder, encode

ACCUMULATORS = {"float32": np.float32, "float64": np.float64}


class CollectiveState(enum.Enum):
    IDLE = "idle"
    RUNNING = "running"
    DONE = "done"
    FAILED = "failed"


@dataclass
class CollectiveCounters:
    messages_sent: int = 0
    bytes_sent: int = 0
    messages_received: int = 0
    bytes_received: int = 0


class CollectiveSession:
    """Rank `rank` of n running `plan` (a list of `Send`/`Recv`, hosts/collective_plan.py)."""

    def __init__(self, *, rank: int, n: int, plan: list[Op], length: int,
                 accumulate: str = "float32"):
        if not 1 <= n <= 0xFFFF or not 0 <= rank < n:
            raise UsageError(f"rank {rank!r} of n {n!r}: need 0 <= rank < n <= 65535")
        if accumulate not in ACCUMULATORS:
            raise UsageError(f"accumulate must be one of {sorted(ACCUMULATORS)}")
        self.rank, self.n, self.length, self.accumulate = rank, n, length, accumulate
        self.plan = list(plan)
        self.peers = sorted({op.peer for op in self.plan})
        self._deps = dependencies(self.plan)
        self._dependents: list[list[int]] = [[] for _ in self.plan]
        for i, deps in enumerate(self._deps):
            for d in deps:
                self._dependents[d].append(i)
        self._tag: list[int] = []           # per op: its number on its (sender, receiver) pair
        counts: dict[tuple[str, int], int] = {}
        for op in self.plan:
            key = ("s" if isinstance(op, Send) else "r", op.peer)
            self._tag.append(counts.get(key, 0))
            counts[key] = counts.get(key, 0) + 1
        self._recv_op = {(op.peer, self._tag[i]): i for i, op in enumerate(self.plan)
                         if isinstance(op, Recv)}
        self.state = CollectiveState.IDLE
        self.counters = CollectiveCounters()
        self.calls = 0
        self.result: np.ndarray | None = None
        self._decoders = {p: StreamDecoder() for p in self.peers}
        self._inbox: dict[tuple[int, int, int], Segment] = {}    # (call, peer, tag) -> message
        self._acc: np.ndarray | None = None

    @property
    def done(self) -> bool:
        return self.state is CollectiveState.DONE

    def start(self, vector, *, call: int | None = None) -> list[tuple[int, bytes]]:
        """Start the next call; `call` numbers it (on the wire) when calls of other sessions
        share the streams (`CollectiveCalls`): it may skip numbers, never go back."""
        values = np.asarray(vector)
        if values.ndim != 1 or values.dtype != np.float32 or values.size != self.length:
            raise UsageError(f"expected a 1-D float32 vector of {self.length}, got "
                             f"{values.dtype} {values.shape}")
        if self.state not in (CollectiveState.IDLE, CollectiveState.DONE):
            raise UsageError(f"cannot start in state {self.state.value}")
        if call is not None and call != self.calls:
            if call < self.calls:
                raise UsageError(f"call {call} after call {self.calls - 1}")
            if self._inbox:             # kept for a call number that is now skipped
                self._fail(f"messages of call {self.calls} but the next call is {call}")
            self.calls = call
        self.result = None
        self._acc = values.astype(ACCUMULATORS[self.accumulate], copy=True)
        self._waiting = [len(d) for d in self._deps]
        self._finished = [False] * len(self.plan)
        self._done_ops = 0
        self.state = CollectiveState.RUNNING
        out: list[tuple[int, bytes]] = []
        ready = [i for i, w in enumerate(self._waiting) if w == 0]
        self._run(ready, out)
        self._finish_if_done()
        return out

    def receive(self, peer: int, data: bytes) -> list[tuple[int, bytes]]:
        if self.state is CollectiveState.FAILED:
            raise UsageError("the session has failed")
        decoder = self._decoders.get(peer)
        if decoder is None:
            self._fail(f"data from rank {peer}, which this plan never hears from")
        self.counters.bytes_received += len(data)
        try:
            messages = decoder.feed(data)
        except RingProtocolError:
            self.state = CollectiveState.FAILED
            raise
        out: list[tuple[int, bytes]] = []
        for message in messages:
            if not isinstance(message, Segment):
                self._fail(f"unexpected HELLO from rank {peer}")
            self._deliver(peer, message, out)
        self._finish_if_done()
        return out

    def deliver(self, peer: int, message: Segment) -> list[tuple[int, bytes]]:
        """`receive` for a message its caller already decoded (`CollectiveCalls`)."""
        if self.state is CollectiveState.FAILED:
            raise UsageError("the session has failed")
        if peer not in self._decoders:
            self._fail(f"data from rank {peer}, which this plan never hears from")
        self.counters.bytes_received += HEADER_BYTES + message.values.nbytes
        out: list[tuple[int, bytes]] = []
        self._deliver(peer, message, out)
        self._finish_if_done()
        return out

    def expects_from(self, peer: int) -> bool:
        """Whether this call still needs data from `peer` (a driver may then treat the peer
        closing its connection as a failure; after that, it is just the peer being done)."""
        if self.state is not CollectiveState.RUNNING:
            return False
        return any(not self._finished[i] for i, op in enumerate(self.plan)
                   if isinstance(op, Recv) and op.peer == peer)

    # ---- internals --------------------------------------------------------------------------

    def _deliver(self, peer: int, message: Segment, out: list[tuple[int, bytes]]) -> None:
        self.counters.messages_received += 1
        if message.call not in (self.calls, self.calls + 1):
            self._fail(f"message of call {message.call} from rank {peer} during call "
                       f"{self.calls}")
        key = (message.call, peer, message.index)
        i = self._recv_op.get((peer, message.index))
        if i is None:
            self._fail(f"unexpected message {message.index} from rank {peer}")
        running = self.state is CollectiveState.RUNNING and message.call == self.calls
        if key in self._inbox or (running and self._finished[i]):
            self._fail(f"message {message.index} of call {message.call} from rank {peer} "
                       f"came twice")
        self._inbox[key] = message
        if running and self._waiting[i] == 0:
            self._run([i], out)

    def _fail(self, reason: str):
        self.state = CollectiveState.FAILED
        raise RingProtocolError(f"rank {self.rank}: {reason}")

    def _run(self, ready: list[int], out: list[tuple[int, bytes]]) -> None:
        """Run every operation in `ready` and, transitively, what they unblock (a receive only
        when its message is here)."""
        stack = list(reversed(ready))
        while stack:
            i = stack.pop()
            op = self.plan[i]
            if isinstance(op, Send):
                kind = RingKind.ALL_GATHER
                data = encode(Segment(kind=kind, call=self.calls, step=0, index=self._tag[i],
                                      values=self._acc[op.lo:op.hi]))
                self.counters.messages_sent += 1
                self.counters.bytes_sent += len(data)
                out.append((op.peer, data))
            else:
                message = self._inbox.pop((self.calls, op.peer, self._tag[i]), None)
                if message is None:
                    continue                # runs when its message arrives
                self._apply(op, message)
            self._done_ops += 1
            self._finished[i] = True
            for j in reversed(self._dependents[i]):
                self._waiting[j] -= 1
                if self._waiting[j] == 0:
                    stack.append(j)

    def _apply(self, op: Recv, message: Segment) -> None:
        if message.values.size != op.hi - op.lo:
            self._fail(f"message {message.index} from rank {op.peer} has {message.values.size} "
                       f"values, expected {op.hi - op.lo}")
        if message.values.dtype != self._acc.dtype:
            self._fail(f"message from rank {op.peer} is {message.values.dtype}, this session "
                       f"accumulates in {self._acc.dtype}")
        if op.reduce:
            self._acc[op.lo:op.hi] += message.values
        else:
            self._acc[op.lo:op.hi] = message.values

    def _finish_if_done(self) -> None:
        if self.state is CollectiveState.RUNNING and self._done_ops == len(self.plan):
            self.result = self._acc.astype(np.float32)
            self._acc = None
            self.calls += 1
            self.state = CollectiveState.DONE
            # messages of the next call that came early stay in the inbox


class CollectiveCalls:
    """Rank `rank`'s calls of any lengths over one ordered byte stream per peer, each call a
    `CollectiveSession` of the plan `plan_for(length)` (one session per length, reused).

    The streams' decoders and the call numbers belong here, not to the sessions: a peer that
    finished call c may already send call c + 1, whose bytes can arrive in the same read as
    the end of call c. They are decoded here and kept until call c + 1 starts (its session may
    be another length's); a message of a call before the current one or more than one ahead
    cannot come from a peer running the same calls and is an error. Same interface as a
    `CollectiveSession` for a driver: `start`, `receive`, `done`, `result`, `expects_from`,
    `counters` (over every call)."""

    def __init__(self, *, rank: int, n: int, plan_for: Callable[[int], list[Op]],
                 accumulate: str = "float32"):
        if not 1 <= n <= 0xFFFF or not 0 <= rank < n:
            raise UsageError(f"rank {rank!r} of n {n!r}: need 0 <= rank < n <= 65535")
        if accumulate not in ACCUMULATORS:
            raise UsageError(f"accumulate must be one of {sorted(ACCUMULATORS)}")
        self.rank, self.n, self.accumulate = rank, n, accumulate
        self.plan_for = plan_for
        self.counters = CollectiveCounters()
        self.calls = 0                      # calls started; the current one is calls - 1
        self.failed = False
        self._sessions: dict[int, CollectiveSession] = {}
        self._current: CollectiveSession | None = None
        self._decoders = {p: StreamDecoder() for p in range(n) if p != rank}
        self._early: list[tuple[int, Segment]] = []     # messages of call `calls`, by arrival

    @property
    def done(self) -> bool:
        return self._current is not None and self._current.done

    @property
    def result(self) -> np.ndarray | None:
        return None if self._current is None else self._current.result

    def session_for(self, length: int) -> CollectiveSession:
        if length not in self._sessions:
            self._sessions[length] = CollectiveSession(
                rank=self.rank, n=self.n, plan=self.plan_for(length), length=length,
                accumulate=self.accumulate)
        return self._sessions[length]

    def start(self, vector) -> list[tuple[int, bytes]]:
        if self.failed:
            raise UsageError("an earlier call failed")
        if self._current is not None and not self._current.done:
            raise UsageError("the current call is not done")
        session = self.session_for(np.asarray(vector).size)
        call, early = self.calls, self._early
        self._early = []
        out = self._guard(lambda: session.start(vector, call=call))
        self.calls += 1
        self._current = session
        for peer, message in early:
            out += self._guard(lambda: session.deliver(peer, message))
        self._count_sent(out)
        return out

    def receive(self, peer: int, data: bytes) -> list[tuple[int, bytes]]:
        if self.failed:
            raise UsageError("an earlier call failed")
        decoder = self._decoders.get(peer)
        if decoder is None:
            self._fail(f"data from rank {peer}, not a peer of rank {self.rank} of {self.n}")
        self.counters.bytes_received += len(data)
        messages = self._guard(lambda: decoder.feed(data))
        out: list[tuple[int, bytes]] = []
        for message in messages:
            if not isinstance(message, Segment):
                self._fail(f"unexpected HELLO from rank {peer}")
            self.counters.messages_received += 1
            current = self.calls - 1
            if message.call == current + 1:
                self._early.append((peer, message))     # the next call's: kept for it
            elif message.call == current:
                out += self._guard(lambda: self._current.deliver(peer, message))
            else:
                self._fail(f"message of call {message.call} from rank {peer} during call "
                           f"{current}")
        self._count_sent(out)
        return out

    def expects_from(self, peer: int) -> bool:
        return self._current is not None and self._current.expects_from(peer)

    def _count_sent(self, out: list[tuple[int, bytes]]) -> None:
        self.counters.messages_sent += len(out)
        self.counters.bytes_sent += sum(len(data) for _, data in out)

    def _guard(self, step):
        try:
            return step()
        except (RingProtocolError, UsageError):
            self.failed = True
            raise

    def _fail(self, reason: str):
        self.failed = True
        raise RingProtocolError(f"rank {self.rank}: {reason}")
