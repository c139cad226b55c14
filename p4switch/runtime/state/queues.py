"""simple_switch's egress queues: one FIFO per (egress port, priority), drained at a set rate.

BMv2 queues every packet between ingress and egress. Each queue has a depth in packets (64 by
default; a packet arriving at a full queue is dropped) and a drain rate in packets per second
(0, the default, means unlimited). A packet's departure time is fixed when it is enqueued:
`max(now, departure of the previous packet of its queue + 1/rate)`, as BMv2's rate limiter
does. `enq_qdepth` and `deq_qdepth` count the packet's own queue (its port and priority), as
simple_switch 1.15.5 fills them (checked on veths: a priority-1 packet sees 0 while priority 0
of the same port has a backlog).

Nothing here reads a clock: callers pass times (the switch's clock, in seconds). A packet whose
departure time is already due goes to egress at once and never occupies the queue, so with no
rate set every queue stays empty (depth 0) and the runtime keeps its synchronous fast path.
Back-pressure: behind the queues, BMv2 has one bounded output stage shared by every port (its
output buffer and transmit thread, see p4switch/ports/output.py); when a port's socket blocks,
that stage fills and the egress threads stop taking packets out of the queues, so they fill up
and drop at their tail. `set_room(n)` says how many more packets egress may hand to that stage
now (None: unbounded, nothing blocks). With a room set, a packet leaves its queue only while
room is left, each departure takes one place, and one that cannot leave waits in its queue
(where P4 sees it in enq_qdepth/deq_qdepth) until the driver gives room again.
Priorities: `priority` (standard_metadata.priority) p must be below the number of queues per
port, else the packet is dropped (as BMv2 does); among departures due at the same instant the
higher priority goes first. Egress itself takes no time here, so strict priority only decides
ties; each priority queue has its own rate, as in BMv2.
"""

from __future__ import annotations

import heapq
from collections import deque
from itertools import count

from ..errors import InvalidArgument

DEFAULT_DEPTH = 64          # BMv2's default capacity of every egress queue, in packets
MAX_PORT = 511
MAX_PRIORITY_QUEUES = 8     # standard_metadata.priority is bit<3>
MAX_DEPTH = 1 << 31
MAX_RATE = 1 << 63

ADMIT_NOW, QUEUED, DROPPED = range(3)


class EgressQueues:
    """Configuration and contents of every egress queue of one switch."""

    # (slots: the native core reads them at their offsets, inaemu/sim/native/attrs.c)
    __slots__ = ('priorities', 'default_depth', 'default_rate', '_depth', '_rate', '_fifo',
                 '_last', '_size', '_heap', '_seq', 'dropped', 'bad_priority', 'room', 'active')

    def __init__(self, priorities: int = 1) -> None:
        if isinstance(priorities, bool) or not isinstance(priorities, int) or \
                not 1 <= priorities <= MAX_PRIORITY_QUEUES:
            raise InvalidArgument(f"priority queues per port must be an integer in "
                                  f"1..{MAX_PRIORITY_QUEUES}, got {priorities!r}")
        self.priorities = priorities
        self.default_depth = DEFAULT_DEPTH
        self.default_rate = 0
        self._depth: dict[tuple[int, int], int] = {}
        self._rate: dict[tuple[int, int], int] = {}
        self._fifo: dict[tuple[int, int], deque] = {}
        self._last: dict[tuple[int, int], float] = {}    # last departure time scheduled
        self._size: dict[int, int] = {}                  # packets waiting, per port
        self._heap: list = []                            # (departure, rank, seq, port, prio)
        self._seq = count()
        self.dropped: dict[int, int] = {}                # tail drops (full queue), per port
        self.bad_priority = 0                            # drops for priority >= priorities
        self.room: int | None = None     # places left in the output stage (None: unbounded)
        self.active = False     # some rate is set or some packet waits: the queues matter

    # -- configuration (BMv2's set_queue_depth / set_queue_rate) -----------------------------
    def set_depth(self, depth: int, port: int | None = None, priority: int | None = None) -> None:
        """Depth in packets of every queue, of one port's queues, or of one (port, priority)."""
        _check_int("queue depth", depth, 0, MAX_DEPTH)
        self._configure(self._depth, "default_depth", depth, port, priority)

    def set_rate(self, pps: int, port: int | None = None, priority: int | None = None) -> None:
        """Drain rate in packets per second (0: unlimited), with the same scopes as depth."""
        _check_int("queue rate", pps, 0, MAX_RATE)
        self._configure(self._rate, "default_rate", pps, port, priority)
        self._update_active()

    def _configure(self, table: dict, default: str, value: int, port, priority) -> None:
        if port is None:
            if priority is not None:
                raise InvalidArgument("a queue priority needs a port")
            table.clear()                 # BMv2: "all" overrides every earlier per-port value
            setattr(self, default, value)
            return
        _check_int("egress port", port, 0, MAX_PORT)
        if priority is None:
            for prio in range(self.priorities):
                table[(port, prio)] = value
            return
        _check_int("queue priority", priority, 0, self.priorities - 1)
        table[(port, priority)] = value

    def _check_queue(self, port, priority) -> None:
        _check_int("egress port", port, 0, MAX_PORT)
        if priority is not None:
            _check_int("queue priority", priority, 0, self.priorities - 1)

    def depth(self, port: int, priority: int = 0) -> int:
        self._check_queue(port, priority)
        return self._depth.get((port, priority), self.default_depth)

    def rate(self, port: int, priority: int = 0) -> int:
        self._check_queue(port, priority)
        return self._rate.get((port, priority), self.default_rate)

    def occupancy(self, port: int, priority: int | None = None) -> int:
        """Packets waiting in one port's queues (all priorities) or in one of them."""
        self._check_queue(port, priority)
        if priority is None:
            return self._size.get(port, 0)
        fifo = self._fifo.get((port, priority))
        return len(fifo) if fifo else 0

    def set_room(self, room: int | None) -> None:
        """How many packets egress may still hand to the output stage (None: no bound)."""
        if room is not None:
            _check_int("output room", room, 0, MAX_DEPTH)
        self.room = room
        self._update_active()

    def _update_active(self) -> None:
        self.active = bool(self._heap) or self.room is not None or bool(self.default_rate) \
            or any(self._rate.values())

    # -- packets ------------------------------------------------------------------------------
    def enqueue(self, port: int, priority: int, now: float, item) -> tuple[int, int]:
        """Offer a packet at time `now`: (ADMIT_NOW | QUEUED | DROPPED, depth it found).

        ADMIT_NOW: its departure is due already; the caller runs egress at once (the packet
        never occupied the queue). QUEUED: stored with `item` until `pop_due` hands it back.
        """
        if priority >= self.priorities:
            self.bad_priority += 1
            return DROPPED, 0
        key = (port, priority)
        fifo = self._fifo.get(key)
        found = len(fifo) if fifo else 0
        if found >= self._depth.get(key, self.default_depth):
            self.dropped[port] = self.dropped.get(port, 0) + 1
            return DROPPED, found
        pps = self._rate.get(key, self.default_rate)
        last = self._last.get(key)
        departure = now
        if last is not None:
            scheduled = last + 1.0 / pps if pps else last
            if scheduled > now:
                departure = scheduled
        self._last[key] = departure
        if departure <= now and not found:
            room = self.room
            if room is None:
                return ADMIT_NOW, found
            if room:
                self.room = room - 1
                return ADMIT_NOW, found
        if fifo is None:
            fifo = self._fifo[key] = deque()
        fifo.append(item)
        self._size[port] = self._size.get(port, 0) + 1
        heapq.heappush(self._heap, (departure, self.priorities - 1 - priority,
                                    next(self._seq), port, priority))
        self.active = True
        return QUEUED, found

    def next_due(self) -> float | None:
        """Departure time of the next waiting packet, or None when every queue is empty or
        the output stage has no room (then the driver waits for a port, not for a time).
        Safe without the switch lock (the port driver polls it; a reload may empty the heap)."""
        if self.room == 0:
            return None
        try:
            return self._heap[0][0]
        except IndexError:
            return None

    def pop_due(self, now: float):
        """The next packet due by `now` as (departure, port, priority, item, packets left in
        its queue), or None. Equal departure times leave higher priority first, then in
        arrival order."""
        heap = self._heap
        if not heap or heap[0][0] > now or self.room == 0:
            return None
        if self.room is not None:
            self.room -= 1
        departure, _, _, port, priority = heapq.heappop(heap)
        fifo = self._fifo[(port, priority)]
        item = fifo.popleft()
        self._size[port] -= 1
        left = len(fifo)
        if not heap:
            self._update_active()
        return departure, port, priority, item, left

    def discard(self) -> int:
        """Forget every waiting packet (program change, shutdown); returns how many."""
        waiting = len(self._heap)
        self._heap.clear()
        self._fifo.clear()
        self._size.clear()
        self._last.clear()
        self._update_active()
        return waiting

    @property
    def waiting(self) -> int:
        return len(self._heap)

    def waiting_items(self):
        """Every waiting item (the engine's `(f, v, ...)` tuples), for in-place fix-ups."""
        for fifo in self._fifo.values():
            yield from fifo


def _check_int(what: str, value, low: int, high: int) -> None:
    if isinstance(value, bool) or not isinstance(value, int) or not low <= value <= high:
        raise InvalidArgument(f"{what} must be an integer in {low}..{high}, got {value!r}")
