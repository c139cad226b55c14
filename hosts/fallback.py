"""The host aggregator of a job the switch could not hold whole (docs/fallback.md), sans-I/O.

When a job gets fewer switch slots (P) than its workers use (W, their pool), the switch sends
contributions and queries for slots P..W-1 to this aggregator (`ina.p4`'s `ina_fallback`
table). It runs the switch's own algorithm (docs/protocol.md §3, §3.1) on cells of its own, so
the workers cannot tell it from the switch and need no change:

* a cell per (slot, version): the member bitmap, the contributions still missing, the k sums
  (int32, wrapping modulo 2^32 as the switch's registers do);
* a first copy of worker w's contribution marks w in the cell and clears w in the shadow cell
  (the same slot's other version), then overwrites (first) or adds; the last one completes the
  cell and a RESULT goes to every worker (count n, the triggering packet's chunk and version);
* a duplicate gets the stored sum back (unicast RESULT) if the cell is complete, else nothing;
* a QUERY gets a NACK if the cell lacks w's contribution, the RESULT if it is complete, else
  nothing (another worker's piece is missing; that worker asks too).

Why the results merge correctly: a chunk's slot is its position mod W, the same for every
worker, so all n contributions of a chunk go to the switch or all go here — never split.

Input: one UDP payload; output: (worker id, payload) pairs to send to those workers' port
48879. Nothing here reads a clock (the switch has no timers either); bad input is counted and
ignored, never fatal.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from .ina_wire import (FLAG_VER, HEADER, INA_UDP_PORT, Kind, WireError, check_k, decode_header,
                       decode_values)

FALLBACK_PORT = INA_UDP_PORT + 1   # 48880: beside a worker's 48879 on the same host
MAX_MEMBERS = 254                  # as the switch: `pending` is 8 bits


@dataclass
class FallbackCounters:
    """What the aggregator saw and did, per packet (the switch's §7 counters, and more)."""

    contributions: int = 0        # first copies accepted
    duplicates: int = 0           # copies of a contribution already in its cell
    results_multicast: int = 0    # cells completed (each sent to all n workers)
    results_unicast: int = 0      # a stored sum sent again to one worker
    queries: int = 0
    nacks: int = 0
    malformed: int = 0            # not an aggregation packet of this k
    foreign: int = 0              # another job, a worker id >= n, a kind it never takes
    bad_slot: int = 0             # a slot outside first_slot..pool_size-1
    packets_sent: int = 0

    def as_dict(self) -> dict[str, int]:
        return dict(self.__dict__)


@dataclass
class _Cell:
    seen: int = 0                 # bit w: worker w's contribution is in
    pending: int = 0              # contributions missing; 0 = complete (seen != 0) or idle
    values: np.ndarray = field(default_factory=lambda: np.zeros(0, np.int32))


class FallbackAggregator:
    """The slots `first_slot`..`pool_size`-1 of one job (n workers, k values per packet)."""

    def __init__(self, *, job: int, n: int, k: int, first_slot: int, pool_size: int):
        if not 0 <= job <= 0xFFFF:
            raise ValueError(f"job must be 0..65535, got {job}")
        if not 1 <= n <= MAX_MEMBERS:
            raise ValueError(f"n must be 1..{MAX_MEMBERS}, got {n}")
        if not 0 <= first_slot < pool_size <= 0xFFFF:
            raise ValueError(f"need 0 <= first_slot < pool_size <= 65535, got {first_slot}, "
                             f"{pool_size}")
        self.job, self.n, self.k = job, n, check_k(k)
        self.first_slot, self.pool_size = first_slot, pool_size
        self.counters = FallbackCounters()
        self._cells: dict[tuple[int, int], _Cell] = {}
        self._everyone = tuple(range(n))

    def receive(self, payload: bytes) -> list[tuple[int, bytes]]:
        """One packet the switch forwarded; the (worker id, payload) pairs to send."""
        try:
            kind, job, worker, slot, chunk, ver, _retx, _count = decode_header(payload, self.k)
        except WireError:
            self.counters.malformed += 1
            return []
        if job != self.job or worker >= self.n or kind not in (Kind.CONTRIB, Kind.QUERY):
            self.counters.foreign += 1
            return []
        if not self.first_slot <= slot < self.pool_size:
            self.counters.bad_slot += 1
            return []
        cell = self._cell(slot, ver)
        bit = 1 << worker
        if kind is Kind.QUERY:
            self.counters.queries += 1
            if not cell.seen & bit:
                self.counters.nacks += 1
                return self._send([worker], Kind.NACK, slot, chunk, ver, None, count=0)
            if cell.pending == 0:
                self.counters.results_unicast += 1
                return self._send([worker], Kind.RESULT, slot, chunk, ver, cell.values)
            return []
        if cell.seen & bit:
            self.counters.duplicates += 1
            if cell.pending == 0:
                self.counters.results_unicast += 1
                return self._send([worker], Kind.RESULT, slot, chunk, ver, cell.values)
            return []
        self.counters.contributions += 1
        cell.seen |= bit
        self._cell(slot, 1 - ver).seen &= ~bit
        values = decode_values(payload)
        if cell.pending == 0:
            cell.values = values.astype(np.int32)      # a copy, native order
            cell.pending = self.n - 1
        else:
            cell.values += values                      # wraps modulo 2^32, as the switch
            cell.pending -= 1
        if cell.pending:
            return []
        self.counters.results_multicast += 1
        return self._send(self._everyone, Kind.RESULT, slot, chunk, ver, cell.values)

    def cell(self, slot: int, ver: int) -> tuple[int, int, np.ndarray]:
        """(member bitmap, missing contributions, sums) of a cell, for tests and monitoring."""
        c = self._cells.get((slot, ver), _Cell())
        return c.seen, c.pending, c.values.copy()

    def _cell(self, slot: int, ver: int) -> _Cell:
        cell = self._cells.get((slot, ver))
        if cell is None:
            cell = self._cells[(slot, ver)] = _Cell()
        return cell

    def _send(self, workers, kind: Kind, slot: int, chunk: int, ver: int,
              values: np.ndarray | None, *, count: int | None = None) -> list[tuple[int, bytes]]:
        """The same packet to each of `workers`, their own id in `worker` (as the switch's
        egress writes it); flags carry the version only."""
        body = b"" if values is None else values.astype(">i4").tobytes()
        count = self.n if count is None else count
        out = []
        for w in workers:
            header = HEADER.pack(kind, ver & FLAG_VER, self.job, w, 0, slot, chunk, count)
            out.append((w, header + body))
        self.counters.packets_sent += len(out)
        return out
