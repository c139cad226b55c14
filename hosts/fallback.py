"""The host aggregator of a job the switch could not hold whole (docs/fallback.md), sans-I/O.

When a job gets fewer switch slots (P) than its workers use (W, their pool), the switch sends
contributions and queries for slots P..W-1 to this aggregator (`ina.p4`'s `ina_fallback`
table). It runs the switch's own algorithm (docs/protocol.md §3, §3.1) on cells of its own, so
the workers cannot tell it from the switch and need no change:

* a cell per (slot, version): the member bitmap, the contributions still missing, the k lane
  sums (int32 lanes wrap modulo 2^32; int16/int8 lanes are summed per sub-lane and an
  overflow sets the cell's sticky overflow flag, docs/formats.md), the largest block exponent
  (`exp`, §5.2), and the sticky retx flag (a piece came by a retransmission, §3);
* a first copy of worker w's contribution marks w in the cell and clears w in the shadow cell
  (the same slot's other version), then overwrites (first) or adds; the last one completes the
  cell and a RESULT goes to every worker (count n, the triggering packet's chunk, version and
  format, the cell's exponent and overflow and retx flags);
* a duplicate gets the stored sum back (unicast RESULT, retx set) if the cell is complete,
  else nothing (hashed: the sum goes to that worker when the cell completes, beside the
  multicast, `answer_askers`);
* a QUERY gets a NACK if the cell lacks w's contribution, the RESULT if it is complete, else
  nothing (another worker's piece is missing; that worker asks too).

Why the results merge correctly: a chunk's slot is its position mod W, the same for every
worker, so all n contributions of a chunk go to the switch or all go here — never split.

With hashed sharing (`hashed=True`, docs/protocol.md §3.3) the switch sends here every chunk
that owns no cell of its shared pool — any slot, one use of a slot here and the next in the
switch — so a cell also keeps the chunk it holds: a contribution whose chunk differs from the
cell's starts a new round of that cell (its bit there is stale: set in a round before the
switch's), and a QUERY for another chunk gets a NACK. A completed cell's RESULT keeps the
packet's `next` flag, for the switch to claim the slot's next use when it multicasts it.

`tests/ina/test_fallback_differential.py` checks it replies to random packet streams byte for
byte as ina.p4 does. Input: one UDP payload; output: (worker id, payload) pairs to send to
those workers' port 48879 (worker id VIA_SWITCH: to the switch's aggregator address, port
48879, which multicasts it; `via_switch=True` sends completed cells that way: one packet
through the switch instead of n). Nothing here reads a clock (the switch has no timers
either; a child tier's stand-in, hosts/fallback_tier.py, has one timer of its own); bad input
is counted and ignored, never fatal.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from .ina_header import (FLAG_FORMAT, FLAG_NEXT, FLAG_OVERFLOW, FLAG_RETX, FLAG_VER, HEADER,
                         INA_UDP_PORT, Format, Kind, format_flags)
from .ina_wire import check_k

FALLBACK_PORT = INA_UDP_PORT + 1   # 48880: beside a worker's 48879 on the same host
MAX_MEMBERS = 254                  # as the switch: `pending` is 8 bits
VIA_SWITCH = -1                    # a reply for the switch's aggregator address to multicast


def fallback_port(job: int) -> int:
    """The UDP port of job `job`'s host aggregator when several share a host: 48880 + job."""
    return FALLBACK_PORT + job


# The header is parsed here with the shared definition (hosts/ina_header.py) but not with
# hosts/ina_wire.py's decoder, so the aggregator checks what the switch checks.
CELL_FLAGS = FLAG_OVERFLOW | FLAG_RETX      # what a cell keeps of its pieces' flags, sticky
# the sign bit of every sub-lane of a 32-bit lane, per lane format (its flag bits)
SIGN_BITS = {format_flags(Format.INT32): 0x80000000, format_flags(Format.INT16): 0x80008000,
             format_flags(Format.INT8): 0x80808080}
LANES = np.dtype(">u4")


@dataclass
class FallbackCounters:
    """What the aggregator saw and did, per packet (the switch's §7 counters, and more)."""

    contributions: int = 0        # first copies accepted
    duplicates: int = 0           # copies of a contribution already in its cell
    results_multicast: int = 0    # cells completed (each sent to all n workers)
    results_unicast: int = 0      # a stored sum sent again to one worker
    queries: int = 0
    nacks: int = 0
    malformed: int = 0            # not an aggregation packet of this k (the switch: bad length)
    foreign: int = 0              # another job, a worker id >= n, a kind or format it never takes
    bad_slot: int = 0             # a slot outside first_slot..pool_size-1
    askers_answered: int = 0      # RESULTs sent at completion to members that asked before
    packets_sent: int = 0

    def as_dict(self) -> dict[str, int]:
        return dict(self.__dict__)


@dataclass
class _Cell:
    seen: int = 0                 # bit w: worker w's contribution is in
    pending: int = 0              # contributions missing; 0 = complete (seen != 0) or idle
    values: np.ndarray = field(default_factory=lambda: np.zeros(0, np.uint32))
    exp: int = 0                  # the largest block exponent of its contributions
    flags: int = 0                # FLAG_OVERFLOW once a packed sum overflowed, FLAG_RETX once
                                  # a piece came by a retransmission; sticky (CELL_FLAGS)
    chunk: int = -1               # hashed sharing: the chunk of the cell's round
    next_flag: int = 0            # a tier (hosts/fallback_tier.py): its members' `next`
    askers: int = 0               # bit w: worker w retransmitted while the cell was pending
    result_count: int = 0         # a tier: the `count` of the parent's RESULT
    format: int = 0               # a tier: its lane format's flag bits (its timer's resends)


class FallbackAggregator:
    """The slots `first_slot`..`pool_size`-1 of one job (n workers, k lanes per packet)."""

    def __init__(self, *, job: int, n: int, k: int, first_slot: int, pool_size: int,
                 via_switch: bool = False, hashed: bool = False,
                 result_count: int | None = None, answer_askers: bool | None = None):
        """`via_switch`: a completed cell's RESULT goes once to the switch (target
        VIA_SWITCH), which multicasts it to the workers, instead of once to each worker.
        `hashed`: the job draws from the switch's shared pool (first_slot 0, rounds told apart
        by their chunk, §3.3). `result_count`: what its RESULTs carry in `count` (the whole
        tree's workers when it stands in for a tree's root; default n). `answer_askers`: a
        member whose retransmission (a duplicate, or a QUERY whose piece is in) came while the
        cell was still pending also gets the RESULT to itself when the cell completes, beside
        the multicast (default: with `hashed`; ina.p4 keeps no such list, so the flat
        aggregator, checked byte for byte against it, does not)."""
        if not 0 <= job <= 0xFFFF:
            raise ValueError(f"job must be 0..65535, got {job}")
        if not 1 <= n <= MAX_MEMBERS:
            raise ValueError(f"n must be 1..{MAX_MEMBERS}, got {n}")
        if not 0 <= first_slot < pool_size <= 0xFFFF:
            raise ValueError(f"need 0 <= first_slot < pool_size <= 65535, got {first_slot}, "
                             f"{pool_size}")
        self.job, self.n, self.k = job, n, check_k(k)
        self.first_slot, self.pool_size = first_slot, pool_size
        self.hashed = hashed
        self.result_count = n if result_count is None else result_count
        self.answer_askers = hashed if answer_askers is None else answer_askers
        self.counters = FallbackCounters()
        self._cells: dict[tuple[int, int], _Cell] = {}
        self._everyone = (VIA_SWITCH,) if via_switch else tuple(range(n))
        self._sizes = {Kind.CONTRIB: HEADER.size + 4 * k, Kind.QUERY: HEADER.size}
        self._from_above: frozenset = frozenset()   # kinds a parent aggregator sends (tiers)

    def receive(self, payload: bytes, now: float = 0.0) -> list[tuple[int, bytes]]:
        """One packet the switch forwarded; the (worker id, payload) pairs to send. `now`
        (seconds, any epoch) matters only to an aggregator with timers (a tier's)."""
        if len(payload) < HEADER.size:
            self.counters.malformed += 1
            return []
        kind, flags, job, worker, _pad, slot, chunk, count, exp = HEADER.unpack_from(payload)
        if kind in self._from_above and job == self.job and len(payload) == \
                self._sizes[kind] and self.first_slot <= slot < self.pool_size:
            return self._from_parent(kind, flags, worker, slot, chunk, count, exp, payload)
        if kind not in self._sizes or kind in self._from_above or job != self.job \
                or worker >= self.n or flags & FLAG_FORMAT == FLAG_FORMAT:
            self.counters.foreign += 1
            return []
        if len(payload) != self._sizes[kind]:
            self.counters.malformed += 1
            return []
        if not self.first_slot <= slot < self.pool_size:
            self.counters.bad_slot += 1
            return []
        ver = flags & FLAG_VER
        cell = self._cell(slot, ver)
        bit = 1 << worker
        reply = (flags, exp, slot, chunk)
        if self.hashed and cell.chunk != chunk:
            if kind == Kind.CONTRIB:     # a new round here: the cell's bits are of an old one
                cell.seen, cell.pending, cell.chunk, cell.askers = 0, 0, chunk, 0
            else:
                cell = _Cell()           # a QUERY for a round this cell does not hold: NACK
        if kind == Kind.QUERY:
            self.counters.queries += 1
            if not cell.seen & bit:
                self.counters.nacks += 1
                return self._send([worker], Kind.NACK, (flags & (FLAG_VER | FLAG_FORMAT),
                                                         exp, slot, chunk), None, count=0)
            if cell.pending == 0:
                return self._unicast(worker, cell, reply)
            cell.askers |= bit
            return self._query_while_pending(worker, cell, reply)
        if cell.seen & bit:
            self.counters.duplicates += 1
            if cell.pending == 0:
                return self._unicast(worker, cell, reply)
            cell.askers |= bit
            return self._duplicate_while_pending(worker, cell, reply)
        self.counters.contributions += 1
        cell.seen |= bit
        self._cell(slot, 1 - ver).seen &= ~bit
        values = np.frombuffer(payload, LANES, offset=HEADER.size)
        if cell.pending == 0:
            cell.values = values.astype(np.uint32)         # a copy, native order
            cell.exp, cell.flags = exp, flags & CELL_FLAGS
            cell.pending = self.n - 1
            cell.askers = 0
        else:
            cell.exp = max(cell.exp, exp)
            cell.flags |= (flags & CELL_FLAGS) | self._add(cell, values, flags)
            cell.pending -= 1
        if cell.pending:
            return []
        return self._complete(cell, reply)

    def next_deadline(self) -> float | None:
        """When `expire` next has work to do; None: never (this one has no timers)."""
        return None

    def expire(self, now: float) -> list[tuple[int, bytes]]:
        """What the timers due at `now` send (a tier's, hosts/fallback_tier.py)."""
        return []

    # -- what a tier (hosts/fallback_tier.py) does differently -----------------------------------
    def _complete(self, cell: _Cell, reply: tuple) -> list[tuple[int, bytes]]:
        """The cell's last contribution came: its sum to every worker (or the switch)."""
        self.counters.results_multicast += 1
        claim = reply[0] & FLAG_NEXT if self.hashed else 0    # the switch claims on multicast
        return self._send(self._everyone, Kind.RESULT, self._stored(cell, reply, claim),
                          cell.values) + self._answer_askers(cell, reply)

    def _answer_askers(self, cell: _Cell, reply: tuple) -> list[tuple[int, bytes]]:
        """The completed cell's RESULT to each member that retransmitted while it was pending:
        its timer has backed off while it waited for the others, so if the multicast copy is
        lost to it, the next try may be far off; this copy takes another path (a member on
        this host: none at all)."""
        askers, cell.askers = cell.askers, 0
        if not self.answer_askers or not askers:
            return []
        out = []
        for worker in range(self.n):
            if askers >> worker & 1:
                self.counters.askers_answered += 1
                out += self._unicast(worker, cell, reply)
        return out

    def _query_while_pending(self, worker: int, cell: _Cell, reply: tuple) -> list:
        """A QUERY for a cell still missing a piece: another member's, it asks too."""
        return []

    def _duplicate_while_pending(self, worker: int, cell: _Cell, reply: tuple) -> list:
        """A duplicate for a cell still aggregating: nothing to answer yet."""
        return []

    def _from_parent(self, kind, flags, worker, slot, chunk, count, exp, payload) -> list:
        """A RESULT or NACK from a parent aggregator: only a tier has one."""
        self.counters.foreign += 1
        return []

    def cell(self, slot: int, ver: int) -> tuple[int, int, np.ndarray]:
        """(member bitmap, missing contributions, lanes as uint32) of a cell, for tests."""
        c = self._cells.get((slot, ver), _Cell())
        return c.seen, c.pending, c.values.copy()

    @staticmethod
    def _add(cell: _Cell, values: np.ndarray, flags: int) -> int:
        """Add `values` into the cell as the switch does: int32 lanes wrap modulo 2^32; int16 and
        int8 lanes are summed per sub-lane without carries between them (a SWAR add), and an
        overflowing sub-lane (both addends of one sign, the sum of the other) returns
        FLAG_OVERFLOW."""
        fmt = flags & FLAG_FORMAT
        if fmt == 0:
            cell.values += values
            return 0
        stored = cell.values
        sign = np.uint32(SIGN_BITS[fmt])
        low = np.uint32(~SIGN_BITS[fmt] & 0xFFFFFFFF)
        total = ((stored & low) + (values & low)) ^ ((stored ^ values) & sign)
        overflowed = bool(np.any(~(stored ^ values) & (stored ^ total) & sign))
        cell.values = total
        return FLAG_OVERFLOW if overflowed else 0

    @staticmethod
    def _stored(cell: _Cell, reply: tuple, extra: int = 0) -> tuple:
        """A reply carrying the cell: its exponent and flags (overflow, retx), the packet's ver
        and format, and `extra` flag bits."""
        flags, _exp, slot, chunk = reply
        return (flags & (FLAG_VER | FLAG_FORMAT)) | cell.flags | extra, cell.exp, slot, chunk

    def _unicast(self, worker: int, cell: _Cell, reply: tuple) -> list[tuple[int, bytes]]:
        """The stored sum again to one worker: an answer to a duplicate or a QUERY, so retx."""
        self.counters.results_unicast += 1
        return self._send([worker], Kind.RESULT, self._stored(cell, reply, FLAG_RETX),
                          cell.values)

    def _cell(self, slot: int, ver: int) -> _Cell:
        cell = self._cells.get((slot, ver))
        if cell is None:
            cell = self._cells[(slot, ver)] = _Cell()
        return cell

    def _send(self, workers, kind: Kind, reply: tuple, values: np.ndarray | None, *,
              count: int | None = None) -> list[tuple[int, bytes]]:
        """The same packet to each of `workers`, their own id in `worker` (as the switch's
        egress writes it), with the flags of `reply` as they are."""
        flags, exp, slot, chunk = reply
        body = b"" if values is None else values.astype(LANES).tobytes()
        count = self.result_count if count is None else count
        out = [(w, HEADER.pack(kind, flags, self.job, max(w, 0), 0, slot, chunk,
                               count, exp) + body) for w in workers]
        self.counters.packets_sent += len(out)
        return out
