"""The host aggregator of one *child tier* of a hashed tree job (docs/protocol.md §3.3, "Tiers";
§6), sans-I/O.

A child switch whose cell of the shared pool is not owned by a chunk forwards its members'
contributions and queries for that chunk here, and the parent's RESULT or NACK for it too. This
aggregator stands in for the child's cell, as ina.p4's child role does (§6): when the members'
contributions are all in, the cell waits for the parent and its partial sum goes up as the
child's member (`parent_member`) of the parent's job (target VIA_PARENT: the parent's
aggregator address, port 48879); the parent's RESULT completes the cell and goes to the child
switch's aggregator address (VIA_SWITCH), which multicasts it to the members and claims the
slot's next use. While the cell waits, a member's duplicate sends the partial sum up again
(retx), member 0's QUERY goes up as the child's, and a NACK from the parent sends the partial
sum up again. Everything else is `FallbackAggregator`'s (hashed: rounds told apart by chunk).

Unlike ina.p4's child (a switch has no timers), this stand-in **re-asks its parent on a timer
of its own**: a cell waiting for the parent sends its partial sum up again (retx) when the
parent's RESULT has not come within the tier's RTO. Why: a host-held chunk's recovery
otherwise waits for a member's timer, which backs off towards the workers' rto_max and must
climb switch -> host -> parent's host and back (up to 12 lossy links in a leaf-spine,
docs/fallback.md "Trees"), so every worker of the tier spends its retry budget on a piece only
the tier can fetch. The parent answers a repeated partial sum as any duplicate: the stored
RESULT if its cell completed, else nothing yet (the bit rule of §3: nothing is summed twice).

The RTO is `hosts/congestion.py`'s RFC 6298 estimator, doubled per expiry of a cell, up to
`rto_max`. Its samples run from a cell's *first* send to the parent's RESULT, resent or not:
the wait includes the parent's wait for its other members, and under Karn's rule only the
cells answered before their timer fired were sampled, so the estimate fell below the waits
and at no loss most partial sums went up twice (scripts/bench_hashed_trees.py, 0 % loss: 400
of 618 resent, the run 1.8x slower). Under loss the samples grow with the other members'
recoveries, so `rto_max` is low: 10 ms, the best of 5, 10, 20, 50 and 100 ms in that
benchmark (a waiting cell costs at most one packet per 10 ms, and `max_sends` of them; after
those a member's duplicate starts it again). `python -m hosts.fallback_udp` caps it at 0.1 s
(`--tier-rto-max`): real hosts' round trips are longer, and 10 ms flooded a Mininet fat-tree
with resends. Time is given as `now` (sans-I/O): `receive(payload, now)`, `next_deadline()`,
`expire(now)`.
"""

from __future__ import annotations

import heapq

import numpy as np

from .congestion import RtoEstimator
from .fallback import LANES, VIA_SWITCH, FallbackAggregator, _Cell
from .ina_header import FLAG_FORMAT, FLAG_NEXT, FLAG_OVERFLOW, FLAG_RETX, FLAG_VER, HEADER, Kind

VIA_PARENT = -2          # a packet for the parent aggregator's address, port 48879
WAITING = 255            # `pending` of a cell complete here, waiting for the parent (as §6)
CELL_FLAGS_FROM_PARENT = FLAG_OVERFLOW | FLAG_RETX   # what ina.p4's child keeps of them
TIER_RTO = 0.01          # before its first sample: the cap
TIER_RTO_MIN = 0.001
TIER_RTO_MAX = 0.01      # under loss the wait for the parent (its other members' recoveries
                         # included) inflates the estimate: the cap keeps the timer a timer
TIER_MAX_SENDS = 100     # a waiting cell's partial sum sent at most this often (1 s at the cap)


class TierAggregator(FallbackAggregator):
    """One child tier's stand-in cells: `n` members, this tier being member `parent_member` of
    the parent's job."""

    def __init__(self, *, job: int, n: int, k: int, pool_size: int, parent_member: int,
                 rto: float = TIER_RTO, rto_min: float = TIER_RTO_MIN,
                 rto_max: float = TIER_RTO_MAX, max_sends: int = TIER_MAX_SENDS,
                 timer: bool = True):
        """`rto`, `rto_min`, `rto_max`: the timer's RTO (before a sample, its floor and its
        ceiling); `max_sends`: how often a waiting cell's partial sum may go up before the
        timer leaves it to the members' recovery; `timer=False`: no timer (as ina.p4's child)."""
        super().__init__(job=job, n=n, k=k, first_slot=0, pool_size=pool_size,
                         via_switch=True, hashed=True)
        if not 0 <= parent_member <= 0xFF:
            raise ValueError(f"parent_member must be 0..255, got {parent_member}")
        if not 0 < rto_min <= rto_max or not 0 < rto:
            raise ValueError(f"need 0 < rto_min <= rto_max and 0 < rto, got rto {rto}, "
                             f"rto_min {rto_min}, rto_max {rto_max}")
        if max_sends < 1:
            raise ValueError(f"max_sends must be at least 1, got {max_sends}")
        self.parent_member = parent_member
        self.partials_up = 0
        self.timer = timer
        self.max_sends = max_sends
        self.rto = RtoEstimator(initial=rto, minimum=rto_min, maximum=rto_max)
        self.timer_resends = 0      # partial sums the timer sent up again
        self.timer_gave_up = 0      # waiting cells left to the members after max_sends
        self._now = 0.0
        # (slot, ver) -> [chunk, partial sums sent, time of the first, deadline, time of the
        # last]; and a heap of (deadline, slot, ver), stale entries skipped when they come up
        self._waiting: dict[tuple[int, int], list] = {}
        self._deadlines: list[tuple[float, int, int]] = []
        self._sizes.update({Kind.RESULT: HEADER.size + 4 * k, Kind.NACK: HEADER.size})
        self._from_above = frozenset((Kind.RESULT, Kind.NACK))

    def receive(self, payload: bytes, now: float = 0.0) -> list[tuple[int, bytes]]:
        self._now = now
        return super().receive(payload, now)

    def next_deadline(self) -> float | None:
        deadlines = self._deadlines
        while deadlines and self._stale(deadlines[0]):
            heapq.heappop(deadlines)
        return deadlines[0][0] if deadlines else None

    def expire(self, now: float) -> list[tuple[int, bytes]]:
        """Every waiting cell whose timer is due sends its partial sum up again."""
        self._now = now
        out: list[tuple[int, bytes]] = []
        deadlines = self._deadlines
        while deadlines and deadlines[0][0] <= now:
            entry = heapq.heappop(deadlines)
            if self._stale(entry):
                continue
            _, slot, ver = entry
            chunk, sends = self._waiting[(slot, ver)][:2]
            if sends >= self.max_sends:
                del self._waiting[(slot, ver)]
                self.timer_gave_up += 1
                continue
            cell = self._cells[(slot, ver)]
            self.timer_resends += 1
            out += self._up(cell, (ver | cell.format, cell.exp, slot, chunk), retx=True)
        return out

    def _stale(self, entry: tuple[float, int, int]) -> bool:
        """A heap entry no longer the cell's deadline: answered, re-armed, or a new round."""
        deadline, slot, ver = entry
        state = self._waiting.get((slot, ver))
        if state is None or state[3] != deadline:
            return True
        cell = self._cells.get((slot, ver))
        if cell is None or cell.pending != WAITING or cell.chunk != state[0]:
            del self._waiting[(slot, ver)]
            return True
        return False

    def _arm(self, slot: int, ver: int, chunk: int) -> None:
        """The partial sum of (slot, ver) just went up: (re)start its timer."""
        if not self.timer:
            return
        state = self._waiting.get((slot, ver))
        if state is None or state[0] != chunk:
            state = self._waiting[(slot, ver)] = [chunk, 0, self._now, 0.0, 0.0]
        state[1] += 1
        state[4] = self._now
        state[3] = self._now + self.rto.timer(state[1])
        heapq.heappush(self._deadlines, (state[3], slot, ver))

    def _complete(self, cell: _Cell, reply: tuple) -> list[tuple[int, bytes]]:
        cell.pending = WAITING
        cell.next_flag = reply[0] & FLAG_NEXT     # the members' `next`: the parent claims on it
        cell.format = reply[0] & FLAG_FORMAT
        return self._up(cell, reply, retx=False)

    def _up(self, cell: _Cell, reply: tuple, *, retx: bool) -> list[tuple[int, bytes]]:
        """The cell's partial sum to the parent, as member `parent_member` (count 0)."""
        flags, _exp, slot, chunk = reply
        self.partials_up += 1
        self._arm(slot, flags & FLAG_VER, chunk)
        out_flags = (flags & (FLAG_VER | FLAG_FORMAT)) | cell.flags | cell.next_flag | \
            (FLAG_RETX if retx else 0)
        return self._send_as([VIA_PARENT], Kind.CONTRIB, (out_flags, cell.exp, slot, chunk),
                             cell.values, worker=self.parent_member, count=0)

    def _timer_covers(self, cell: _Cell, reply: tuple) -> bool:
        """Whether the waiting cell's partial sum went up less than half an RTO ago while this
        tier's own timer still re-asks: then a member's duplicate does not climb again (it is
        answered when the RESULT comes, `_answer_askers`). Climbing on every duplicate
        multiplied the packets by the tiers: in a 3-tier fat-tree every tier's timer resends
        arrive one tier up as duplicates (5 % loss, 100 KiB: 8.2 MiB sent per host instead of
        1.3, the run 4-5x slower than with this gate); never climbing on them left the leaf-spine's recoveries to the 10 ms
        timer (10 % loss: 0.82 s median instead of 0.63; scripts/bench_hashed_trees.py)."""
        state = self._waiting.get((reply[2], reply[0] & FLAG_VER))
        return self.timer and state is not None and state[0] == cell.chunk and \
            state[1] < self.max_sends and self._now - state[4] < self.rto.timer(1) / 2

    def _query_while_pending(self, worker: int, cell: _Cell, reply: tuple) -> list:
        if cell.pending != WAITING or worker != 0:
            return []
        flags, exp, slot, chunk = reply
        return self._send_as([VIA_PARENT], Kind.QUERY, (flags & (FLAG_VER | FLAG_FORMAT) |
                                                        FLAG_RETX, exp, slot, chunk),
                             None, worker=self.parent_member, count=0)

    def _duplicate_while_pending(self, worker: int, cell: _Cell, reply: tuple) -> list:
        if cell.pending != WAITING or self._timer_covers(cell, reply):
            return []
        return self._up(cell, reply, retx=True)

    def _from_parent(self, kind, flags, worker, slot, chunk, count, exp, payload) -> list:
        cell = self._cells.get((slot, flags & FLAG_VER))
        if cell is None or cell.pending != WAITING or cell.chunk != chunk:
            self.counters.duplicates += 1        # not waiting: a duplicate, as ina.p4 counts
            return []
        reply = (flags, exp, slot, chunk)
        if kind == Kind.NACK:                    # the parent lacks this tier's partial sum
            return self._up(cell, reply, retx=True)
        state = self._waiting.pop((slot, flags & FLAG_VER), None)
        if state is not None:      # from its first send, resent or not: see the module's doc
            self.rto.sample(self._now - state[2])
        cell.values = np.frombuffer(payload, LANES, offset=HEADER.size).astype(np.uint32)
        cell.exp, cell.flags, cell.pending = exp, flags & CELL_FLAGS_FROM_PARENT, 0
        cell.result_count = count
        self.counters.results_multicast += 1
        # to the child switch, which multicasts it (keeping the parent's count) and claims the
        # slot's next use if the parent claimed (`next`)
        return self._send_as([VIA_SWITCH], Kind.RESULT, (flags & (FLAG_VER | FLAG_FORMAT | FLAG_NEXT) |
                                                 cell.flags, exp, slot, chunk),
                             cell.values, worker=0, count=count) + \
            self._answer_askers(cell, reply)

    def _unicast(self, worker: int, cell: _Cell, reply: tuple) -> list[tuple[int, bytes]]:
        """The global sum again to one member: with the parent's count, as ina.p4's child."""
        self.counters.results_unicast += 1
        return self._send_as([worker], Kind.RESULT, self._stored(cell, reply, FLAG_RETX),
                             cell.values, worker=worker, count=cell.result_count)

    def _send_as(self, targets, kind, reply, values, *, worker: int, count: int):
        """Like `_send`, with the `worker` field given (the parent's member id, not a target's)."""
        flags, exp, slot, chunk = reply
        body = b"" if values is None else values.astype(LANES).tobytes()
        packet = HEADER.pack(kind, flags, self.job, worker, 0, slot, chunk, count, exp) + body
        self.counters.packets_sent += len(targets)
        return [(target, packet) for target in targets]
