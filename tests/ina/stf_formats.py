"""p4src/ina_formats.stf: block maxima and packed int16/int8 lanes in p4src/ina.p4
(docs/protocol.md §1, §5, docs/formats.md); every expected byte computed here from the document.

    .venv/bin/python -m tests.ina.stf_formats     # rewrites p4src/ina_formats.stf

One file, k = 4, three jobs side by side:
- job 7 (flat, workers 0-2 on ports 1-3, pool 2 at cell 0): the 16-bit `bmax` is max-combined
  per cell, survives duplicates, queries and the shadow cell, and is overwritten (not max-ed
  with a stale value) when a slot is reused;
- job 5 (this switch a child, workers 0 and 1, base 16) and job 6 (this switch the root of a
  child aggregator, base 24): `bmax` goes up with the partial sum, comes down with the
  parent's RESULT, and goes up again after a NACK;
- job 9 (flat, workers 0-2, pool 2 at cell 32): int16 and int8 lanes summed per sub-lane, and
  the overflow flag (flags bit 4) set, kept and carried up and down the tree.
"""

from __future__ import annotations

import struct
from pathlib import Path

from .packets import (CONTRIB, NACK, QUERY, RESULT, Endpoint, eth_ipv4_udp, ip)
from .stf_builder import (AGGREGATOR, SWITCH_MAC, W0, W1, W2, StfBuilder, Worker,
                          aggregator_address, root_job, routes, worker_entries)

P4SRC = Path(__file__).resolve().parents[2] / "p4src"
STF_NAME = "ina_formats.stf"
K = 4
FORMAT_BITS = {"int32": 32, "int16": 16, "int8": 8}
FORMAT_CODE = {"int32": 0, "int16": 1, "int8": 2}
FLAG_OVERFLOW = 0x10

JOB, POOL = 7, 2
TREE_JOB, ROOT_JOB = 5, 6
PACKED_JOB = 9
PARENT = Endpoint(0x080000000999, ip("10.0.9.254"))       # the parent aggregator, via port 4
CHILD = Worker(1, 3, 0x080000000888, ip("10.0.8.254"))    # a child aggregator, via port 3


# --- the wire, from docs/protocol.md §1 -----------------------------------------------------

def pack(values: list[int], fmt: str) -> list[int]:
    """Sub-values (signed, of the format's width) packed big-endian into 32-bit wire lanes."""
    bits = FORMAT_BITS[fmt]
    per_lane = 32 // bits
    assert len(values) == K * per_lane
    mask = (1 << bits) - 1
    lanes = []
    for i in range(0, len(values), per_lane):
        word = 0
        for v in values[i:i + per_lane]:
            assert -(1 << (bits - 1)) <= v < 1 << (bits - 1), v
            word = (word << bits) | (v & mask)
        lanes.append(word)
    return lanes


def packed_sum(vectors: list[list[int]], fmt: str) -> tuple[list[int], bool]:
    """Sub-lane sums modulo 2^bits (the switch's arithmetic) and whether any partial sum, in
    arrival order, left the signed range (what the switch flags)."""
    bits = FORMAT_BITS[fmt]
    low, high = -(1 << (bits - 1)), (1 << (bits - 1)) - 1
    total, overflow = list(vectors[0]), False
    for vector in vectors[1:]:
        for i, v in enumerate(vector):
            exact = total[i] + v
            overflow |= not low <= exact <= high
            total[i] = (exact - low) % (1 << bits) + low
    return total, overflow


def payload(*, kind: int, job: int, worker: int, slot: int, lanes: list[int], ver: int = 0,
            retx: bool = False, chunk: int | None = None, count: int = 0, bmax: int = 0,
            fmt: str = "int32", overflow: bool = False, pad: int = 0) -> bytes:
    flags = ver | (0x02 if retx else 0) | (FORMAT_CODE[fmt] << 2) | (FLAG_OVERFLOW if overflow
                                                                      else 0)
    header = struct.pack("!BBHBBHIHH", kind, flags, job, worker, pad, slot,
                         slot if chunk is None else chunk, count, bmax)
    return header + b"".join((v & 0xFFFFFFFF).to_bytes(4, "big") for v in lanes)


class Test:
    """StfBuilder plus contributions and results that carry `bmax` and format flags."""

    def __init__(self, b: StfBuilder):
        self.b = b

    def send(self, w: Worker, job: int, slot: int, ver: int, lanes: list[int], **fields) -> int:
        ident = self.b.next_ident()
        self.b.send(w.port, eth_ipv4_udp(w.endpoint, AGGREGATOR, payload(
            kind=fields.pop("kind", CONTRIB), job=job, worker=w.id, slot=slot, ver=ver,
            lanes=lanes, **fields), ident=ident))
        return ident

    def result(self, w: Worker, job: int, slot: int, ver: int, lanes: list[int], *, ident: int,
               count: int, **fields) -> None:
        self.b.expect(w.port, eth_ipv4_udp(AGGREGATOR, w.endpoint, payload(
            kind=fields.pop("kind", RESULT), job=job, worker=w.id, slot=slot, ver=ver,
            lanes=lanes, count=count, **fields), ident=ident))


    def results(self, job: int, slot: int, ver: int, lanes: list[int], *, ident: int,
                **fields) -> None:
        """The completing contribution's RESULT to all three workers, and the counters a
        completed cell moves (StfBuilder.expect_multicast with this module's header fields)."""
        for w in (W0, W1, W2):
            self.result(w, job, slot, ver, lanes, ident=ident, count=3, **fields)
        self.b.count("ina_contributions", job, 3)
        self.b.count("ina_results_multicast", job)


def wrapping(*vectors: list[int]) -> list[int]:
    return [sum(lane) & 0xFFFFFFFF for lane in zip(*vectors)]


# --- job 7: the block max of a flat job --------------------------------------------------------

def block_maxima(t: Test) -> None:
    b = t.b
    a = [[1, 2, 3, 4], [10, 20, 30, 40], [100, 200, 300, 400]]
    b.comment("Job 7, slot 0, version 0: the workers offer block maxima 0x4030, 0x3FF0 and",
              "0x4110 (bfloat16 patterns: 2.75, 1.875, 9.0) for the block that next uses this",
              "slot. The cell keeps the largest as a 16-bit number (0x4110: its low byte is the",
              "smallest of the three); the RESULT carries it with the lane sums.")
    t.send(W0, JOB, 0, 0, a[0], bmax=0x4030)
    t.send(W1, JOB, 0, 0, a[1], bmax=0x3FF0)
    ident = t.send(W2, JOB, 0, 0, a[2], bmax=0x4110)
    t.results(JOB, 0, 0, wrapping(*a), ident=ident, bmax=0x4110)
    b.comment("Worker 1 lost the RESULT: its retransmission (its own 0x3FF0) is answered from",
              "the cell, with the agreed 0x4110, not the retransmission's (and the retx flag of",
              "every answer to a retransmission or query).")
    ident = t.send(W1, JOB, 0, 0, a[1], bmax=0x3FF0, retx=True)
    t.result(W1, JOB, 0, 0, wrapping(*a), ident=ident, count=3, bmax=0x4110, retx=True)
    b.count("ina_duplicates", JOB)
    b.count("ina_results_unicast", JOB)
    b.comment("Worker 0 asks with a header-only QUERY (bmax 0): the answer carries 0x4110.")
    ident = t.send(W0, JOB, 0, 0, [], kind=QUERY, retx=True)
    b.count("ina_queries", JOB)
    t.result(W0, JOB, 0, 0, wrapping(*a), ident=ident, count=3, bmax=0x4110, retx=True)
    b.count("ina_results_unicast", JOB)

    v = [[-1, -2, -3, -4], [5, 6, 7, 8], [0, 0, 0, 1]]
    b.comment("Slot 0, version 1 (the shadow): workers 0 and 1 contribute with 0x3A10 and",
              "0x3B05. Worker 2's retransmission to version 0 still gets 0x4110 from there.")
    t.send(W0, JOB, 0, 1, v[0], bmax=0x3A10, chunk=POOL)
    t.send(W1, JOB, 0, 1, v[1], bmax=0x3B05, chunk=POOL)
    ident = t.send(W2, JOB, 0, 0, a[2], bmax=0x4110, retx=True)
    t.result(W2, JOB, 0, 0, wrapping(*a), ident=ident, count=3, bmax=0x4110, retx=True)
    b.count("ina_duplicates", JOB)
    b.count("ina_results_unicast", JOB)
    b.comment("Worker 2 completes version 1 with 0x3AFF: the RESULT carries 0x3B05.")
    ident = t.send(W2, JOB, 0, 1, v[2], bmax=0x3AFF, chunk=POOL)
    t.results(JOB, 0, 1, wrapping(*v), ident=ident, bmax=0x3B05, chunk=POOL)

    r = [[1, 1, 1, 1], [2, 2, 2, 2], [3, 3, 3, 3]]
    b.comment("Slot 0, version 0 reused (chunk 2 * pool) with 0x0300, 0x0200, 0x0100: the",
              "first contribution overwrites the stored 0x4110, so the RESULT carries 0x0300.",
              "The completing packet has a non-zero padding byte (0xA5): RESULTs carry 0 there.")
    t.send(W0, JOB, 0, 0, r[0], bmax=0x0300, chunk=2 * POOL)
    t.send(W1, JOB, 0, 0, r[1], bmax=0x0200, chunk=2 * POOL)
    ident = t.send(W2, JOB, 0, 0, r[2], bmax=0x0100, chunk=2 * POOL, pad=0xA5)
    t.results(JOB, 0, 0, wrapping(*r), ident=ident, bmax=0x0300, chunk=2 * POOL)


# --- jobs 5 and 6: the block max and the overflow flag along a tree ------------------------------

def tree(t: Test) -> None:
    b = t.b

    def up(ident: int, slot: int, lanes: list[int], *, retx: bool = False, bmax: int,
           fmt: str = "int32", overflow: bool = False) -> bytes:
        return eth_ipv4_udp(Endpoint(SWITCH_MAC, AGGREGATOR.addr), PARENT, payload(
            kind=CONTRIB, job=TREE_JOB, worker=2, slot=slot, lanes=lanes, retx=retx, bmax=bmax,
            fmt=fmt, overflow=overflow), ttl=63, ident=ident)

    def from_parent(slot: int, lanes: list[int], *, kind: int = RESULT, bmax: int = 0,
                    fmt: str = "int32", overflow: bool = False) -> int:
        ident = b.next_ident()
        b.send(4, eth_ipv4_udp(Endpoint(PARENT.mac, PARENT.addr), AGGREGATOR, payload(
            kind=kind, job=TREE_JOB, worker=2, slot=slot, lanes=lanes, bmax=bmax, fmt=fmt,
            overflow=overflow, count=0 if kind == NACK else 4), ident=ident))
        return ident

    p = [[1, 2, 3, 4], [5, 6, 7, 8]]
    b.comment("Job 5 (this switch a child), slot 0: 0x4480 and 0x3C00 from its workers; the",
              "partial sum goes up to the parent carrying 0x4480.")
    t.send(W0, TREE_JOB, 0, 0, p[0], bmax=0x4480)
    ident = t.send(W1, TREE_JOB, 0, 0, p[1], bmax=0x3C00)
    b.expect(4, up(ident, 0, wrapping(*p), bmax=0x4480))
    b.count("ina_contributions", TREE_JOB, 2)
    b.count("ina_partials_up", TREE_JOB)
    b.comment("The parent lost it and sends a NACK: the stored partial goes up again, with",
              "0x4480.")
    ident = from_parent(0, [], kind=NACK)
    b.expect(4, up(ident, 0, wrapping(*p), retx=True, bmax=0x4480))
    b.count("ina_partials_up", TREE_JOB)
    g = [100, 200, 300, 400]
    b.comment("The parent's RESULT carries the global 0x4B00 (another child's): the child",
              "stores it with the values and multicasts both down.")
    ident = from_parent(0, g, bmax=0x4B00)
    for w in (W0, W1):
        t.result(w, TREE_JOB, 0, 0, g, ident=ident, count=4, bmax=0x4B00)
    b.count("ina_results_multicast", TREE_JOB)
    b.comment("A worker that lost it retransmits: the answer from the cell carries 0x4B00.")
    ident = t.send(W1, TREE_JOB, 0, 0, p[1], bmax=0x3C00, retx=True)
    t.result(W1, TREE_JOB, 0, 0, g, ident=ident, count=4, bmax=0x4B00, retx=True)
    b.count("ina_duplicates", TREE_JOB)
    b.count("ina_results_unicast", TREE_JOB)

    c = [[7, 7, 7, 7], [1, 1, 1, 1]]
    b.comment("Job 6 (this switch the root; member 1 is a child aggregator): the child's",
              "partial sum arrives with 0x4B00, worker 0's with 0x4AFF: the RESULT to both",
              "(the child at its aggregator address) carries 0x4B00.")
    t.send(W0, ROOT_JOB, 1, 0, c[0], bmax=0x4AFF)
    ident = t.send(CHILD, ROOT_JOB, 1, 0, c[1], bmax=0x4B00)
    for w in (W0, CHILD):
        t.result(w, ROOT_JOB, 1, 0, wrapping(*c), ident=ident, count=2, bmax=0x4B00)
    b.count("ina_contributions", ROOT_JOB, 2)
    b.count("ina_results_multicast", ROOT_JOB)


# --- job 9: packed lanes and the overflow flag --------------------------------------------------

def packed(t: Test) -> None:
    b = t.b
    x = [[-1, 1, 300, -300, 32767, -32768, 5, 6],
         [1, -1, -300, 300, -1, 1, 7, 8],
         [0, 0, 1000, 2000, -2, 3, -100, 100]]
    total, overflow = packed_sum(x, "int16")
    assert not overflow
    b.comment("Job 9, slot 0, version 0, int16 lanes (flags 0x04): eight values per packet, two",
              "per 32-bit lane, high half first. -1 + 1 in a high half must not borrow from the",
              "low half (a plain 32-bit add would); 32767 - 1 - 2 and -32768 + 1 + 3 stay in",
              "range: no overflow flag. The RESULT keeps the format bits.")
    t.send(W0, PACKED_JOB, 0, 0, pack(x[0], "int16"), fmt="int16")
    t.send(W1, PACKED_JOB, 0, 0, pack(x[1], "int16"), fmt="int16")
    ident = t.send(W2, PACKED_JOB, 0, 0, pack(x[2], "int16"), fmt="int16")
    t.results(PACKED_JOB, 0, 0, pack(total, "int16"), ident=ident, fmt="int16")

    y = [[-1, 1, -128, 127, 64, -64, 0, 1, 2, 3, 4, 5, 6, 7, 8, 9],
         [1, -1, 1, -1, 63, -64, 0, -1, -2, -3, -4, -5, -6, -7, -8, -9],
         [0, -128, 127, 0, 0, 0, 0, 0, 10, 20, 30, 40, 50, 60, 70, 50]]
    total, overflow = packed_sum(y, "int8")
    assert not overflow
    b.comment("Slot 1, version 0, int8 lanes (flags 0x08): sixteen values, four per lane, every",
              "partial sum in [-128, 127]: no flag.")
    t.send(W0, PACKED_JOB, 1, 0, pack(y[0], "int8"), fmt="int8")
    t.send(W1, PACKED_JOB, 1, 0, pack(y[1], "int8"), fmt="int8")
    ident = t.send(W2, PACKED_JOB, 1, 0, pack(y[2], "int8"), fmt="int8")
    t.results(PACKED_JOB, 1, 0, pack(total, "int8"), ident=ident, fmt="int8")

    z = [[30000, 0, 0, 0, 0, 0, 0, 0], [30000, 0, 0, 0, 0, 0, 0, 0],
         [-30000, 0, 0, 0, 0, 0, 0, 1]]
    total, overflow = packed_sum(z, "int16")
    assert overflow and total[0] == -5536 + -30000 + 65536
    b.comment("Slot 0, version 1, int16: 30000 + 30000 overflows in the first sub-lane (it",
              "wraps to -5536). The third contribution brings the true sum back in range, but",
              "the flag is sticky: the RESULT has flags bit 4 (0x10) set, and the value (wrapped",
              "sums, here 30000) is not to be trusted: the workers redo the block.")
    t.send(W0, PACKED_JOB, 0, 1, pack(z[0], "int16"), fmt="int16", chunk=2)
    t.send(W1, PACKED_JOB, 0, 1, pack(z[1], "int16"), fmt="int16", chunk=2)
    ident = t.send(W2, PACKED_JOB, 0, 1, pack(z[2], "int16"), fmt="int16", chunk=2)
    t.results(PACKED_JOB, 0, 1, pack(total, "int16"),
              ident=ident, fmt="int16", chunk=2, overflow=True)
    b.comment("Worker 0 lost that RESULT: the copy answered from the cell has the flag too.")
    ident = t.send(W0, PACKED_JOB, 0, 1, pack(z[0], "int16"), fmt="int16", chunk=2, retx=True)
    t.result(W0, PACKED_JOB, 0, 1, pack(total, "int16"), ident=ident, count=3, fmt="int16",
             chunk=2, overflow=True, retx=True)
    b.count("ina_duplicates", PACKED_JOB)
    b.count("ina_results_unicast", PACKED_JOB)

    u = [[0] * 15 + [100], [0] * 15 + [100], [0] * 15 + [-100]]
    total, overflow = packed_sum(u, "int8")
    assert overflow
    b.comment("Slot 1, version 1, int8: 100 + 100 overflows the last sub-lane of the last lane",
              "(then - 100): flagged.")
    t.send(W2, PACKED_JOB, 1, 1, pack(u[0], "int8"), fmt="int8", chunk=3)
    t.send(W0, PACKED_JOB, 1, 1, pack(u[1], "int8"), fmt="int8", chunk=3)
    ident = t.send(W1, PACKED_JOB, 1, 1, pack(u[2], "int8"), fmt="int8", chunk=3)
    t.results(PACKED_JOB, 1, 1, pack(total, "int8"),
              ident=ident, fmt="int8", chunk=3, overflow=True)

    r = [[1] * 16, [2] * 16, [-3] * 16]
    total, overflow = packed_sum(r, "int8")
    assert not overflow
    b.comment("Slot 0, version 0 reused (chunk 4) after version 1 overflowed: the flag belongs",
              "to a cell, not a slot, and this cell's round starts clean: no flag.")
    t.send(W0, PACKED_JOB, 0, 0, pack(r[0], "int8"), fmt="int8", chunk=4)
    t.send(W1, PACKED_JOB, 0, 0, pack(r[1], "int8"), fmt="int8", chunk=4)
    ident = t.send(W2, PACKED_JOB, 0, 0, pack(r[2], "int8"), fmt="int8", chunk=4)
    t.results(PACKED_JOB, 0, 0, pack(total, "int8"), ident=ident, fmt="int8", chunk=4)
    b.comment("Slot 0, version 1 reused (chunk 6), int16: the first contribution resets the",
              "flag of the cell that overflowed before; a worker's own flag bit is kept (only",
              "a child switch sends one, with its partial sum): this round is flagged.")
    q = [[1] * 8, [2] * 8, [3] * 8]
    t.send(W0, PACKED_JOB, 0, 1, pack(q[0], "int16"), fmt="int16", chunk=6)
    t.send(W1, PACKED_JOB, 0, 1, pack(q[1], "int16"), fmt="int16", chunk=6, overflow=True)
    ident = t.send(W2, PACKED_JOB, 0, 1, pack(q[2], "int16"), fmt="int16", chunk=6)
    t.results(PACKED_JOB, 0, 1, pack([6] * 8, "int16"),
              ident=ident, fmt="int16", chunk=6, overflow=True)
    b.comment("Format 3 (flags 0x0C) names no lane width: dropped as a bad kind.")
    ident = b.next_ident()
    b.send(W0.port, eth_ipv4_udp(W0.endpoint, AGGREGATOR, payload(
        kind=CONTRIB, job=PACKED_JOB, worker=0, slot=1, lanes=[1, 2, 3, 4]) [:1] + bytes([0x0C])
        + payload(kind=CONTRIB, job=PACKED_JOB, worker=0, slot=1, lanes=[1, 2, 3, 4])[2:],
        ident=ident))
    b.count("ina_drop_bad_kind", PACKED_JOB)


def packed_tree(t: Test) -> None:
    b = t.b
    p = [[100] + [1] * 15, [100] + [2] * 15]
    partial, overflow = packed_sum(p, "int8")
    assert overflow
    b.comment("Job 5 (a child), slot 1, int8: its workers' 100 + 100 overflows here; the partial",
              "sum goes up with the flag set, so the parent's result will have it too.")
    t.send(W0, TREE_JOB, 1, 0, pack(p[0], "int8"), fmt="int8", bmax=0x0103)
    ident = t.send(W1, TREE_JOB, 1, 0, pack(p[1], "int8"), fmt="int8", bmax=0x00FF)
    b.expect(4, eth_ipv4_udp(Endpoint(SWITCH_MAC, AGGREGATOR.addr), PARENT, payload(
        kind=CONTRIB, job=TREE_JOB, worker=2, slot=1, lanes=pack(partial, "int8"), bmax=0x0103,
        fmt="int8", overflow=True), ttl=63, ident=ident))
    b.count("ina_contributions", TREE_JOB, 2)
    b.count("ina_partials_up", TREE_JOB)
    g = pack([5] * 16, "int8")
    b.comment("The parent's RESULT (flagged, bmax 0x0200) is stored and multicast as it is.")
    ident = b.next_ident()
    b.send(4, eth_ipv4_udp(Endpoint(PARENT.mac, PARENT.addr), AGGREGATOR, payload(
        kind=RESULT, job=TREE_JOB, worker=2, slot=1, lanes=g, bmax=0x0200, fmt="int8",
        overflow=True,
        count=4), ident=ident))
    for w in (W0, W1):
        t.result(w, TREE_JOB, 1, 0, g, ident=ident, count=4, bmax=0x0200, fmt="int8",
                 overflow=True)
    b.count("ina_results_multicast", TREE_JOB)
    c = [[1] * 16, [2] * 16]
    b.comment("Job 6 (the root), slot 0, int8: the child aggregator's partial sum arrives first",
              "with the flag set (it overflowed below); no sub-lane overflows here, but the",
              "RESULT is flagged.")
    t.send(CHILD, ROOT_JOB, 0, 0, pack(c[1], "int8"), fmt="int8", overflow=True)
    ident = t.send(W0, ROOT_JOB, 0, 0, pack(c[0], "int8"), fmt="int8")
    for w in (W0, CHILD):
        t.result(w, ROOT_JOB, 0, 0, pack([3] * 16, "int8"), ident=ident, count=2, fmt="int8",
                 overflow=True)
    b.count("ina_contributions", ROOT_JOB, 2)
    b.count("ina_results_multicast", ROOT_JOB)


def formats_test() -> str:
    b = StfBuilder(K, [
        "ina: block maxima and packed int16/int8 lanes, k = 4 (written by",
        "tests/ina/stf_formats.py from docs/protocol.md and docs/formats.md; regenerate",
        "rather than edit). Switch and workers as in ina.stf; the parent aggregator of job 5",
        "is 10.0.9.254 behind port 4, the child aggregator of job 6 10.0.8.254 behind port 3.",
        "Header bytes 14-15 are `bmax`; flags bits 2-3 the format (0 int32, 1 int16, 2 int8),",
        "bit 4 the overflow flag of a RESULT.",
    ])
    routes(b)
    b.cmd(f"add ipv4_lpm hdr.ipv4.dstAddr:0x{PARENT.addr & 0xFFFFFF00:08X}/24 "
          f"ipv4_forward(dstAddr:0x{PARENT.mac:012X}, port:4)")
    aggregator_address(b)
    node = root_job(b, JOB, base=0, pool=POOL, workers=[W0, W1, W2], first_node=0)
    b.cmd(f"add ina_jobs hdr.ipv4.dstAddr:0x{AGGREGATOR.addr:08X} hdr.ina.job:{TREE_JOB} "
          f"ina_child_job(base:16, pool_size:2, n:2, mgid:{TREE_JOB}, result_count:4, "
          f"parent:0x{PARENT.addr:08X}, child_index:2)")
    node = worker_entries(b, TREE_JOB, [W0, W1], first_node=node)
    node = root_job(b, ROOT_JOB, base=24, pool=2, workers=[W0, CHILD], first_node=node)
    node = root_job(b, PACKED_JOB, base=32, pool=2, workers=[W0, W1, W2], first_node=node)
    for job in (JOB, TREE_JOB, ROOT_JOB, PACKED_JOB):
        for name in ("drop_bad_kind", "drop_bad_length", "drop_bad_slot", "nacks"):
            b.zero_checks.append((f"ina_{name}", job))
    t = Test(b)
    block_maxima(t)
    tree(t)
    packed(t)
    packed_tree(t)
    return b.finish()


def write_all() -> dict[Path, str]:
    return {P4SRC / STF_NAME: formats_test()}


def main() -> int:
    for path, text in write_all().items():
        path.write_text(text)
        print(f"wrote {path}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
