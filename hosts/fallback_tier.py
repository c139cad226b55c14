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
"""

from __future__ import annotations

import numpy as np

from .fallback import LANES, VIA_SWITCH, FallbackAggregator, _Cell
from .ina_header import FLAG_FORMAT, FLAG_NEXT, FLAG_OVERFLOW, FLAG_RETX, FLAG_VER, HEADER, Kind

VIA_PARENT = -2          # a packet for the parent aggregator's address, port 48879
WAITING = 255            # `pending` of a cell complete here, waiting for the parent (as §6)
CELL_FLAGS_FROM_PARENT = FLAG_OVERFLOW | FLAG_RETX   # what ina.p4's child keeps of them


class TierAggregator(FallbackAggregator):
    """One child tier's stand-in cells: `n` members, this tier being member `parent_member` of
    the parent's job."""

    def __init__(self, *, job: int, n: int, k: int, pool_size: int, parent_member: int):
        super().__init__(job=job, n=n, k=k, first_slot=0, pool_size=pool_size,
                         via_switch=True, hashed=True)
        if not 0 <= parent_member <= 0xFF:
            raise ValueError(f"parent_member must be 0..255, got {parent_member}")
        self.parent_member = parent_member
        self.partials_up = 0
        self._sizes.update({Kind.RESULT: HEADER.size + 4 * k, Kind.NACK: HEADER.size})
        self._from_above = frozenset((Kind.RESULT, Kind.NACK))

    def _complete(self, cell: _Cell, reply: tuple) -> list[tuple[int, bytes]]:
        cell.pending = WAITING
        cell.next_flag = reply[0] & FLAG_NEXT     # the members' `next`: the parent claims on it
        return self._up(cell, reply, retx=False)

    def _up(self, cell: _Cell, reply: tuple, *, retx: bool) -> list[tuple[int, bytes]]:
        """The cell's partial sum to the parent, as member `parent_member` (count 0)."""
        flags, _exp, slot, chunk = reply
        self.partials_up += 1
        out_flags = (flags & (FLAG_VER | FLAG_FORMAT)) | cell.flags | cell.next_flag | \
            (FLAG_RETX if retx else 0)
        return self._send_as([VIA_PARENT], Kind.CONTRIB, (out_flags, cell.exp, slot, chunk),
                             cell.values, worker=self.parent_member, count=0)

    def _query_while_pending(self, worker: int, cell: _Cell, reply: tuple) -> list:
        if cell.pending != WAITING or worker != 0:
            return []
        flags, exp, slot, chunk = reply
        return self._send_as([VIA_PARENT], Kind.QUERY, (flags & (FLAG_VER | FLAG_FORMAT) |
                                                        FLAG_RETX, exp, slot, chunk),
                             None, worker=self.parent_member, count=0)

    def _duplicate_while_pending(self, worker: int, cell: _Cell, reply: tuple) -> list:
        return self._up(cell, reply, retx=True) if cell.pending == WAITING else []

    def _from_parent(self, kind, flags, worker, slot, chunk, count, exp, payload) -> list:
        cell = self._cells.get((slot, flags & FLAG_VER))
        if cell is None or cell.pending != WAITING or cell.chunk != chunk:
            self.counters.duplicates += 1        # not waiting: a duplicate, as ina.p4 counts
            return []
        reply = (flags, exp, slot, chunk)
        if kind == Kind.NACK:                    # the parent lacks this tier's partial sum
            return self._up(cell, reply, retx=True)
        cell.values = np.frombuffer(payload, LANES, offset=HEADER.size).astype(np.uint32)
        cell.exp, cell.flags, cell.pending = exp, flags & CELL_FLAGS_FROM_PARENT, 0
        cell.result_count = count
        self.counters.results_multicast += 1
        # to the child switch, which multicasts it (keeping the parent's count) and claims the
        # slot's next use if the parent claimed (`next`)
        return self._send_as([VIA_SWITCH], Kind.RESULT, (flags & (FLAG_VER | FLAG_FORMAT | FLAG_NEXT) |
                                                 cell.flags, exp, slot, chunk),
                             cell.values, worker=0, count=count)

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
