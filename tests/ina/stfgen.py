"""Writes the STF tests of p4src/ina.p4, computing every expected byte from docs/protocol.md.

    .venv/bin/python -m tests.ina.stfgen    # rewrites p4src/ina.stf, ina_k4.stf, ina_tree.stf

The STF files are committed (the corpus test runs p4src/ina.stf as it is); `test_ina_stf.py`
checks they are what this script writes, so a change of expectations is always a change here,
with the reason next to it. Each scenario states what the switch must do and why, and the
generated file repeats that as comments above the packets.

The test network: the switch's MAC is 00:00:00:00:01:00 and its aggregator address 10.0.0.254;
worker w of a job sits on port w+1 at 10.0.(w+1).(w+1) with MAC 08:00:00:00:0w:ww (as in
l3_forward.stf); 10.0.4.4 on port 4 is a host that takes part in no job.
"""

from __future__ import annotations

import collections
from dataclasses import dataclass
from pathlib import Path

from .packets import (CONTRIB, INA_UDP_PORT, MAX_CONTRIB, MAX_RESULT, NACK, QUERY, RESULT,
                      Endpoint,
                      ecmp_member, eth_ipv4_tcp, eth_ipv4_udp, float32_bits, ina_packet,
                      ina_payload, ip, stf_hex, unsigned_max, wrapping_sum)

P4SRC = Path(__file__).resolve().parents[2] / "p4src"
SWITCH_MAC = 0x000000000100
AGGREGATOR = Endpoint(SWITCH_MAC, ip("10.0.0.254"))
OTHER_JOBS = 1024           # the counter index of job ids >= INA_JOBS (default 1024)


@dataclass(frozen=True)
class Worker:
    id: int
    port: int
    mac: int
    addr: int

    @property
    def endpoint(self) -> Endpoint:
        return Endpoint(self.mac, self.addr)


def worker_on_port(worker_id: int, port: int) -> Worker:
    n = port
    return Worker(worker_id, port, 0x080000000000 | (n << 8) | (n << 4) | n, ip(f"10.0.{n}.{n}"))


W0, W1, W2 = (worker_on_port(w, w + 1) for w in range(3))
HOST4 = worker_on_port(0, 4)


class StfBuilder:
    """Collects STF lines, hands out IPv4 identifications, and tallies the counters to check."""

    def __init__(self, k: int, header: list[str]):
        self.k = k
        self.lines = [f"# {line}" if line else "#" for line in header]
        self.counters: collections.Counter = collections.Counter()
        self.zero_checks: list[tuple[str, int]] = []
        self.ident = 0

    def comment(self, *text: str) -> None:
        self.lines.append("")
        self.lines += [f"# {t}" for t in text]

    def cmd(self, text: str) -> None:
        self.lines.append(text)

    def send(self, port: int, packet: bytes) -> None:
        self.lines.append(f"packet {port} {stf_hex(packet)}")

    def expect(self, port: int, packet: bytes) -> None:
        self.lines.append(f"expect {port} {stf_hex(packet)} $")

    def count(self, counter: str, index: int, n: int = 1) -> None:
        self.counters[(counter, index)] += n

    def next_ident(self) -> int:
        self.ident += 1
        return self.ident

    # --- aggregation packets -----------------------------------------------------------------
    def contribute(self, w: Worker, job: int, slot: int, ver: int, values: list[int], *,
                   retx: bool = False, kind: int = CONTRIB, chunk: int | None = None) -> int:
        """Sends w's CONTRIB (or MAX_CONTRIB) to the aggregator; returns its identification."""
        assert len(values) == self.k
        ident = self.next_ident()
        chunk = slot if chunk is None else chunk
        self.send(w.port, ina_packet(w.endpoint, AGGREGATOR, ident=ident, kind=kind, job=job,
                                     worker=w.id, slot=slot, ver=ver, retx=retx, chunk=chunk,
                                     values=values))
        return ident

    def query(self, w: Worker, job: int, slot: int, ver: int, *,
              chunk: int | None = None) -> int:
        """Sends w's header-only QUERY for (slot, ver); returns its identification."""
        ident = self.next_ident()
        chunk = slot if chunk is None else chunk
        self.send(w.port, ina_packet(w.endpoint, AGGREGATOR, ident=ident, kind=QUERY, job=job,
                                     worker=w.id, slot=slot, ver=ver, retx=True, chunk=chunk,
                                     values=[]))
        return ident

    def expect_nack(self, w: Worker, job: int, slot: int, ver: int, *, ident: int,
                    chunk: int | None = None) -> None:
        """A header-only NACK to w: the cell lacks its contribution (count 0, retx cleared)."""
        self.expect_result(w, job, slot, ver, [], count=0, ident=ident, kind=NACK, chunk=chunk)

    def expect_result(self, w: Worker, job: int, slot: int, ver: int, values: list[int], *,
                      count: int, ident: int, kind: int = RESULT, chunk: int | None = None,
                      source: Endpoint = AGGREGATOR) -> None:
        """A RESULT addressed to w: from the aggregator, TTL 64, w's own id in `worker`."""
        chunk = slot if chunk is None else chunk
        self.expect(w.port, ina_packet(source, w.endpoint, ident=ident, kind=kind, job=job,
                                       worker=w.id, slot=slot, ver=ver, chunk=chunk, count=count,
                                       values=values))

    def finish(self) -> str:
        self.lines.append("")
        self.lines.append("wait")
        self.lines.append("# every counter this test moved, and some it must not have moved")
        for (name, index), n in sorted(self.counters.items()):
            self.lines.append(f"check_counter {name}({index}) packets == {n}")
        for name, index in self.zero_checks:
            if (name, index) not in self.counters:
                self.lines.append(f"check_counter {name}({index}) packets == 0")
        return "\n".join(self.lines) + "\n"


def routes(b: StfBuilder) -> None:
    for host in (W0, W1, W2, HOST4):
        net = host.addr & 0xFFFFFF00
        b.cmd(f"add ipv4_lpm hdr.ipv4.dstAddr:0x{net:08X}/24 "
              f"ipv4_forward(dstAddr:0x{host.mac:012X}, port:{host.port})")


def aggregator_address(b: StfBuilder) -> None:
    b.cmd(f"add ina_aggregator_addresses hdr.ipv4.dstAddr:0x{AGGREGATOR.addr:08X} "
          "ina_aggregate_here()")


def root_job(b: StfBuilder, job: int, *, base: int, pool: int, workers: list[Worker],
             n: int | None = None, first_node: int, in_table: list[Worker] | None = None) -> int:
    """The job's table entries and multicast group (one node per worker, rid = worker id).

    Returns the next free multicast node handle."""
    n = len(workers) if n is None else n
    b.cmd(f"add ina_jobs hdr.ipv4.dstAddr:0x{AGGREGATOR.addr:08X} hdr.ina.job:{job} "
          f"ina_root_job(base:{base}, pool_size:{pool}, n:{n}, mgid:{job}, result_count:{n})")
    node = worker_entries(b, job, workers if in_table is None else in_table, first_node)
    return node


def worker_entries(b: StfBuilder, job: int, workers: list[Worker], first_node: int) -> int:
    node = first_node
    b.cmd(f"mc_mgrp_create {job}")
    for w in workers:
        b.cmd(f"add ina_workers hdr.ina.job:{job} hdr.ina.worker:{w.id} "
              f"ina_worker_port(port:{w.port})")
        b.cmd(f"add ina_result_addresses hdr.ina.job:{job} meta.ina.receiver:{w.id} "
              f"ina_address_result(dstMac:0x{w.mac:012X}, dstAddr:0x{w.addr:08X})")
        b.cmd(f"mc_node_create {w.id} {w.port}")
        b.cmd(f"mc_node_associate {job} {node}")
        node += 1
    return node


def lanes(k: int, first: list[int], rest) -> list[int]:
    """A k-value vector: the given first lanes, then rest(i) for the remaining lanes i."""
    return first + [rest(i) for i in range(len(first), k)]


# --- p4src/ina.stf (k = 32) and p4src/ina_k4.stf (k = 4): a flat job of three workers ----------

JOB, POOL = 7, 4            # job 7: cells 0..9 (4 slots x 2 versions, then the MAX pair 8, 9)
SOLO_JOB = 9                # n = 1, worker 0 is the host on port 2; cells 16..21
SPARSE_JOB = 11             # n = 2 but only worker 0 has a port: worker 1 is refused
EDGE_JOB = 13               # base 2046, pool 1: slot 0 is cells 2046-2047, the MAX pair 2048-2049
WIDE_JOB, WIDE_N = 15, 34   # n = 34 > 32 (the bitmap is INA_MEMBERS = 64 bits): cells 40..43


def flat_test(k: int) -> str:
    b = StfBuilder(k, [
        f"ina: in-network aggregation with k = {k} values per packet (written by",
        "tests/ina/stfgen.py from docs/protocol.md; regenerate rather than edit).",
        "Switch MAC 00:00:00:00:01:00, aggregator address 10.0.0.254 (0x0A0000FE). Workers w of",
        "job 7 (n = 3, pool of 4 slots at cell 0): port w+1, 10.0.(w+1).(w+1), 08:00:00:00:0w:ww.",
        "Packet layout on every line: Ethernet | IPv4 | UDP | aggregation header | values.",
        "RESULTs come from 10.0.0.254 and the switch MAC with TTL 64, UDP checksum 0, the IPv4",
        "identification of the packet that triggered them, and the receiver's id in `worker`.",
    ])
    routes(b)
    aggregator_address(b)
    node = root_job(b, JOB, base=0, pool=POOL, workers=[W0, W1, W2], first_node=0)
    solo = Worker(0, W1.port, W1.mac, W1.addr)
    node = root_job(b, SOLO_JOB, base=16, pool=2, workers=[solo], first_node=node)
    node = root_job(b, SPARSE_JOB, base=24, pool=1, workers=[W0], n=2, first_node=node)
    node = root_job(b, EDGE_JOB, base=2046, pool=1, workers=[W0], first_node=node)
    wide = [Worker(w, W2.port, W2.mac, W2.addr) for w in range(WIDE_N)]
    node = root_job(b, WIDE_JOB, base=40, pool=1, workers=wide, first_node=node)
    b.cmd("add arp_flood standard_metadata.ingress_port:4 flood(mgid:100)")
    b.cmd("mc_mgrp_create 100")
    b.cmd("mc_node_create 0 1 2 3 4")
    b.cmd(f"mc_node_associate 100 {node}")
    for name in ("contributions", "duplicates", "results_multicast", "results_unicast",
                 "drop_unknown_job", "drop_bad_worker", "drop_bad_slot", "drop_bad_length",
                 "drop_bad_kind", "partials_up", "queries", "nacks"):
        b.zero_checks.append((f"ina_{name}", JOB))

    # slot 0, version 0: values that wrap (lane 0) and go negative (lane 1)
    a0 = lanes(k, [0x7FFFFFFF, -5], lambda i: i + 1)
    a1 = lanes(k, [0x7FFFFFFF, -1000], lambda i: -1000 * i)
    a2 = lanes(k, [2, 3], lambda i: 3 * i)
    sum_a = wrapping_sum(a0, a1, a2)
    b.comment("Job 7, slot 0, version 0. The first contribution (worker 0) overwrites the cell,",
              "the middle one (worker 1) adds to it; both are absorbed: nothing leaves.")
    b.contribute(W0, JOB, 0, 0, a0)
    b.contribute(W1, JOB, 0, 0, a1)
    b.comment("The last (worker 2) completes the cell: RESULT with the lane sums mod 2^32 to the",
              f"job's group, one copy per worker at its own addresses. Lane 0 is 0x7FFFFFFF +",
              "0x7FFFFFFF + 2 = 2^32, which wraps to 0; lane 1 is -5 - 1000 + 3 = -1002",
              f"(0x{sum_a[1]:08X}); lane i >= 2 is (i + 1) - 1000 i + 3 i. count = n = 3.")
    ident = b.contribute(W2, JOB, 0, 0, a2)
    for w in (W0, W1, W2):
        b.expect_result(w, JOB, 0, 0, sum_a, count=3, ident=ident)
    b.count("ina_contributions", JOB, 3)
    b.count("ina_results_multicast", JOB)

    # slot 1: a duplicate while the cell is still aggregating
    c = [lanes(k, [], lambda i, w=w: 100 * (w + 1) + i) for w in range(3)]
    b.comment("Job 7, slot 1, version 0: worker 0's contribution, then its retransmission (retx",
              "flag) before the cell is complete: the copy is dropped and counted, not added.")
    b.contribute(W0, JOB, 1, 0, c[0])
    b.contribute(W0, JOB, 1, 0, c[0], retx=True)
    b.count("ina_duplicates", JOB)
    b.comment("Workers 1 and 2 complete it: each lane i is 100 + 200 + 300 + 3 i (worker 0 once).",
              "Worker 2's packet has the retx flag (its original was lost): as the first copy",
              "to arrive it counts as a contribution; the RESULT's flags are ver only.")
    b.contribute(W1, JOB, 1, 0, c[1])
    ident = b.contribute(W2, JOB, 1, 0, c[2], retx=True)
    for w in (W0, W1, W2):
        b.expect_result(w, JOB, 1, 0, wrapping_sum(*c), count=3, ident=ident)
    b.count("ina_contributions", JOB, 3)
    b.count("ina_results_multicast", JOB)

    b.comment("A duplicate after completion: worker 1 lost the slot 0 result and retransmits. The",
              "cell is complete, so the stored sum goes back to worker 1 only (retx cleared).")
    ident = b.contribute(W1, JOB, 0, 0, a1, retx=True)
    b.expect_result(W1, JOB, 0, 0, sum_a, count=3, ident=ident)
    b.count("ina_duplicates", JOB)
    b.count("ina_results_unicast", JOB)

    # version 1 of slot 0 and the shadow rule
    v = [lanes(k, [-1], lambda i, w=w: (w + 1) * 7 - i) for w in range(3)]
    b.comment("Slot 0, version 1 (the shadow copy): workers 0 and 1 contribute, which clears",
              "their bits in version 0. Worker 2 has not moved on: its retransmission to version",
              "0 still finds its bit set there and gets the version 0 sum back.")
    b.contribute(W0, JOB, 0, 1, v[0], chunk=POOL)
    b.contribute(W1, JOB, 0, 1, v[1], chunk=POOL)
    ident = b.contribute(W2, JOB, 0, 0, a2, retx=True)
    b.expect_result(W2, JOB, 0, 0, sum_a, count=3, ident=ident)
    b.count("ina_duplicates", JOB)
    b.count("ina_results_unicast", JOB)
    b.comment("Worker 2 completes version 1: lane 0 is -3 (0xFFFFFFFD), lane i is 42 - 3 i.",
              "The flags of the RESULT carry ver = 1.")
    ident = b.contribute(W2, JOB, 0, 1, v[2], chunk=POOL)
    sum_v = wrapping_sum(*v)
    for w in (W0, W1, W2):
        b.expect_result(w, JOB, 0, 1, sum_v, count=3, ident=ident, chunk=POOL)
    b.count("ina_contributions", JOB, 3)
    b.count("ina_results_multicast", JOB)
    b.comment("Worker 0 lost that result: its retransmission gets the version 1 sum.")
    ident = b.contribute(W0, JOB, 0, 1, v[0], retx=True, chunk=POOL)
    b.expect_result(W0, JOB, 0, 1, sum_v, count=3, ident=ident, chunk=POOL)
    b.count("ina_duplicates", JOB)
    b.count("ina_results_unicast", JOB)

    r = [lanes(k, [], lambda i, w=w: (w + 1) * (i + 1)) for w in range(3)]
    b.comment("Slot reuse: version 0 again (chunk 2 * pool). Every worker's bit was cleared there",
              "when it moved to version 1, so these are new contributions; worker 2 comes first",
              "and overwrites the old sum. Lane i is 6 (i + 1): nothing of the old round remains.")
    b.contribute(W2, JOB, 0, 0, r[2], chunk=2 * POOL)
    b.contribute(W0, JOB, 0, 0, r[0], chunk=2 * POOL)
    ident = b.contribute(W1, JOB, 0, 0, r[1], chunk=2 * POOL)
    for w in (W0, W1, W2):
        b.expect_result(w, JOB, 0, 0, wrapping_sum(*r), count=3, ident=ident, chunk=2 * POOL)
    b.count("ina_contributions", JOB, 3)
    b.count("ina_results_multicast", JOB)

    # n = 1
    s = lanes(k, [-7], lambda i: i * 0x01010101)
    b.comment("Job 9 has n = 1 (its worker 0 is the host on port 2): the first contribution",
              "completes the cell, and the RESULT (count 1) carries the worker's own values.")
    ident = b.contribute(solo, SOLO_JOB, 1, 1, s)
    b.expect_result(solo, SOLO_JOB, 1, 1, s, count=1, ident=ident)
    b.count("ina_contributions", SOLO_JOB)
    b.count("ina_results_multicast", SOLO_JOB)

    # the MAX round
    m = [lanes(k, [float32_bits(x)], lambda i, w=w: float32_bits(0.5 * w + i))
         for w, x in enumerate((1.5, 2.25, 0.75))]
    m[1][-1] = 0x7F800000   # +inf in worker 1's last lane: still the largest unsigned pattern
    b.comment("The MAX round of job 7 (cells 8 and 9, after the pool; slot is ignored): each",
              "worker sends float32 bit patterns; the switch keeps the lane-wise unsigned maximum",
              "and multicasts MAX_RESULT. Lane 0: max(1.5, 2.25, 0.75) = 2.25 (0x40100000);",
              "lane i >= 1: 1.0 + i from worker 2, except the last lane, +inf (0x7F800000).")
    b.contribute(W0, JOB, 0, 0, m[0], kind=MAX_CONTRIB)
    b.contribute(W1, JOB, 0, 0, m[1], kind=MAX_CONTRIB)
    ident = b.contribute(W2, JOB, 0, 0, m[2], kind=MAX_CONTRIB)
    for w in (W0, W1, W2):
        b.expect_result(w, JOB, 0, 0, unsigned_max(*m), count=3, ident=ident, kind=MAX_RESULT)
    b.count("ina_contributions", JOB, 3)
    b.count("ina_results_multicast", JOB)
    b.comment("The MAX cells are apart from the data cells: slot 0 version 0 still answers a",
              "duplicate with its sum of the reuse round.")
    ident = b.contribute(W2, JOB, 0, 0, r[2], retx=True, chunk=2 * POOL)
    b.expect_result(W2, JOB, 0, 0, wrapping_sum(*r), count=3, ident=ident, chunk=2 * POOL)
    b.count("ina_duplicates", JOB)
    b.count("ina_results_unicast", JOB)

    queries(b, k)
    wide_job(b, k, wide)
    drops(b, k, a0)
    forwarding(b, k, a0)
    return b.finish()


def wide_job(b: StfBuilder, k: int, wide: list[Worker]) -> None:
    """Members above 31: the worker bitmap is INA_MEMBERS (64) bits wide."""
    x = [lanes(k, [w], lambda i, w=w: w * i + 1) for w in range(WIDE_N)]
    b.comment(f"Job 15 has n = {WIDE_N} workers, all behind port 3 (the multicast rid names",
              "each): ids above 31 need the 64-bit bitmap. Worker 33 contributes, then",
              "retransmits: its bit (33) is set, so the copy is a duplicate, not a 35th",
              "contribution that would complete the cell early.")
    b.contribute(wide[33], WIDE_JOB, 0, 0, x[33])
    b.contribute(wide[33], WIDE_JOB, 0, 0, x[33], retx=True)
    b.count("ina_duplicates", WIDE_JOB)
    b.comment(f"Workers 0..32 complete the cell: {WIDE_N} RESULTs leave on port 3, in rid order.")
    ident = 0
    for w in range(33):
        ident = b.contribute(wide[w], WIDE_JOB, 0, 0, x[w])
    for w in wide:
        b.expect_result(w, WIDE_JOB, 0, 0, wrapping_sum(*x), count=WIDE_N, ident=ident)
    b.count("ina_contributions", WIDE_JOB, WIDE_N)
    b.count("ina_results_multicast", WIDE_JOB)


def queries(b: StfBuilder, k: int) -> None:
    """QUERY and NACK (docs/protocol.md §3.1): a worker that finds a chunk overdue asks the
    switch with a header-only QUERY instead of resending its k values."""
    d = [lanes(k, [w - 1], lambda i, w=w: 1000 * w - i) for w in range(3)]
    b.comment("Job 7, slot 3, version 0: worker 0 contributes; worker 1's contribution is lost.",
              "Worker 1 sees the chunk overdue and sends a QUERY (kind 4, no values, UDP length",
              "24): its bit is clear in the cell, so the switch answers with a NACK (kind 5, no",
              "values, count 0) to worker 1 alone: send your contribution again.")
    b.contribute(W0, JOB, 3, 0, d[0])
    ident = b.query(W1, JOB, 3, 0)
    b.expect_nack(W1, JOB, 3, 0, ident=ident)
    b.count("ina_contributions", JOB)
    b.count("ina_queries", JOB)
    b.count("ina_nacks", JOB)
    b.comment("Worker 0 queries too (it cannot tell whose piece is missing): its bit is set and",
              "the cell still aggregates, so the query is dropped; only worker 1 resends.")
    b.query(W0, JOB, 3, 0)
    b.count("ina_queries", JOB)
    b.comment("Worker 1's resent contribution and worker 2's complete the cell: multicast.")
    b.contribute(W1, JOB, 3, 0, d[1], retx=True)
    ident = b.contribute(W2, JOB, 3, 0, d[2])
    for w in (W0, W1, W2):
        b.expect_result(w, JOB, 3, 0, wrapping_sum(*d), count=3, ident=ident)
    b.count("ina_contributions", JOB, 2)
    b.count("ina_results_multicast", JOB)
    b.comment("Worker 2 lost that RESULT and queries: the cell is complete, so the QUERY grows",
              f"into a unicast RESULT with the k = {k} stored sums (UDP length {24 + 4 * k}, IPv4",
              f"total length {44 + 4 * k}, checksum recomputed).")
    ident = b.query(W2, JOB, 3, 0)
    b.expect_result(W2, JOB, 3, 0, wrapping_sum(*d), count=3, ident=ident)
    b.count("ina_queries", JOB)
    b.count("ina_results_unicast", JOB)
    b.comment("Refused queries: worker id 3 (bad worker), slot 4 (bad slot), and a QUERY that",
              "carries values (bad length: a QUERY is header-only). A NACK sent to the root of a",
              "job is a bad kind (NACKs go down only to child switches).")
    b.query(worker_on_port(3, 3), JOB, 0, 0)
    b.count("ina_drop_bad_worker", JOB)
    b.query(W0, JOB, 4, 0)
    b.count("ina_drop_bad_slot", JOB)
    b.contribute(W0, JOB, 3, 0, d[0], kind=QUERY)
    b.count("ina_drop_bad_length", JOB)
    ident = b.next_ident()
    b.send(W0.port, ina_packet(W0.endpoint, AGGREGATOR, ident=ident, kind=NACK, job=JOB,
                               worker=0, slot=3, values=[]))
    b.count("ina_drop_bad_kind", JOB)


def drops(b: StfBuilder, k: int, values: list[int]) -> None:
    """Packets to the aggregator that are refused: dropped, and counted per job and reason."""
    b.comment("Refused, each dropped and counted under its job and reason:",
              "job 8 is unknown here; job 2000 too, and it is counted at index 1024 (job ids",
              ">= INA_JOBS share that index).")
    b.contribute(W0, 8, 0, 0, values)
    b.count("ina_drop_unknown_job", 8)
    b.contribute(W0, 2000, 0, 0, values)
    b.count("ina_drop_unknown_job", OTHER_JOBS)
    b.comment("Worker id 3 in job 7 (n = 3); worker 1 of job 11 (n = 2, but no worker-table",
              "entry: the controller did not place it).")
    b.contribute(worker_on_port(3, 3), JOB, 0, 0, values)
    b.count("ina_drop_bad_worker", JOB)
    b.contribute(W1, SPARSE_JOB, 0, 0, values)
    b.count("ina_drop_bad_worker", SPARSE_JOB)
    b.comment("Slot 4 of job 7, whose pool has slots 0..3.")
    b.contribute(W0, JOB, 4, 0, values)
    b.count("ina_drop_bad_slot", JOB)
    b.comment("Job 13 was placed at the end of the 2048-cell pool (base 2046, one slot): slot 0",
              "(cells 2046, 2047) works - n = 1, so its RESULT comes straight back - but its MAX",
              "pair would be cells 2048 and 2049, outside the registers: a bad slot.")
    ident = b.contribute(W0, EDGE_JOB, 0, 1, values)
    b.expect_result(W0, EDGE_JOB, 0, 1, values, count=1, ident=ident)
    b.count("ina_contributions", EDGE_JOB)
    b.count("ina_results_multicast", EDGE_JOB)
    b.contribute(W0, EDGE_JOB, 0, 0, values, kind=MAX_CONTRIB)
    b.count("ina_drop_bad_slot", EDGE_JOB)

    short = ina_payload(kind=CONTRIB, job=JOB, worker=0, slot=0, values=values[:-1])
    b.comment(f"Bad length: {k - 1} values (UDP length {8 + len(short)}, not {24 + 4 * k}).")
    b.next_ident()
    b.send(W0.port, eth_ipv4_udp(W0.endpoint, AGGREGATOR, short, ident=b.ident))
    b.count("ina_drop_bad_length", JOB)
    half = ina_payload(kind=CONTRIB, job=JOB, worker=0, slot=0, values=values[:k // 2])
    b.comment(f"Truncated: the UDP length says {k} values, the frame holds {k // 2}.")
    b.next_ident()
    b.send(W0.port, eth_ipv4_udp(W0.endpoint, AGGREGATOR, half, ident=b.ident,
                                 udp_length=24 + 4 * k))
    b.count("ina_drop_bad_length", JOB)
    b.comment("Too short to hold the aggregation header (6 bytes of payload): no job to name,",
              "so it is counted at index 1024.")
    b.next_ident()
    b.send(W0.port, eth_ipv4_udp(W0.endpoint, AGGREGATOR, bytes.fromhex("000000070000"),
                                 ident=b.ident))
    b.count("ina_drop_bad_length", OTHER_JOBS)
    b.comment("A RESULT sent to the aggregator of a root job, and an unknown kind (9): bad kind.")
    b.contribute(W0, JOB, 0, 0, values, kind=RESULT)
    b.contribute(W0, JOB, 0, 0, values, kind=9)
    b.count("ina_drop_bad_kind", JOB, 2)
    b.comment("A contribution with a wrong IPv4 header checksum is dropped before anything else",
              "(no aggregation counter moves; slot 2 stays idle).")
    b.next_ident()
    payload = ina_payload(kind=CONTRIB, job=JOB, worker=0, slot=2, values=values)
    b.send(W0.port, eth_ipv4_udp(W0.endpoint, AGGREGATOR, payload, ident=b.ident,
                                 checksum_delta=1))


def forwarding(b: StfBuilder, k: int, values: list[int]) -> None:
    """Everything not addressed to an aggregator address is routed like l3_forward routes it."""
    payload = ina_payload(kind=CONTRIB, job=JOB, worker=0, slot=0, values=values)
    b.comment("UDP to port 48879 at an address that is not an aggregator (worker 1's): routed",
              "by the LPM table untouched but for the MACs, TTL 64 -> 63 and the IPv4 checksum.")
    ident = b.next_ident()
    b.send(W0.port, eth_ipv4_udp(W0.endpoint, Endpoint(SWITCH_MAC, W1.addr), payload,
                                 ident=ident))
    b.expect(W1.port, eth_ipv4_udp(Endpoint(SWITCH_MAC, W0.addr), W1.endpoint, payload,
                                   ident=ident, ttl=63))
    b.comment("Ordinary UDP (port 5000) to 10.0.4.4 leaves on port 4.")
    ident = b.next_ident()
    data = bytes.fromhex("DEADBEEF")
    b.send(W0.port, eth_ipv4_udp(W0.endpoint, Endpoint(SWITCH_MAC, HOST4.addr), data,
                                 ident=ident, sport=5000, dport=5000))
    b.expect(HOST4.port, eth_ipv4_udp(Endpoint(SWITCH_MAC, W0.addr), HOST4.endpoint, data,
                                      ident=ident, ttl=63, sport=5000, dport=5000))
    ecmp(b)
    b.comment("An ARP request from port 4 floods to ports 1-3 (group 100), not back to port 4.")
    arp = ("FFFFFFFFFFFF 080000000444 0806 0001080006040001 080000000444 0A000404 "
           "000000000000 0A000101")
    b.cmd(f"packet 4 {arp}")
    for port in (1, 2, 3):
        b.cmd(f"expect {port} {arp} $")


ECMP_NET = Endpoint(SWITCH_MAC, ip("10.0.5.5"))              # behind two equal-cost next hops
ECMP_HOPS = ((3, 0x080000000555), (4, 0x080000000666))       # member index -> (port, next-hop MAC)


def ecmp(b: StfBuilder) -> None:
    """Routes through an ECMP group: the member is crc16 of the 5-tuple mod the group size."""
    b.comment("ECMP: 10.0.5.0/24 uses group 1, two members (port 3 and port 4, next-hop MACs",
              "08:00:00:00:05:55 and 08:00:00:00:06:66). A flow's member is crc16(srcAddr, dstAddr,",
              "protocol, srcPort, dstPort) mod 2, so a flow keeps its path and flows spread.")
    b.cmd(f"add ipv4_lpm hdr.ipv4.dstAddr:0x{ECMP_NET.addr & 0xFFFFFF00:08X}/24 "
          "ecmp_group(group:1, size:2, shift:0)")
    for member, (port, mac) in enumerate(ECMP_HOPS):
        b.cmd(f"add ecmp_nhop meta.fwd.ecmp_group:1 meta.fwd.ecmp_member:{member} "
              f"ipv4_forward(dstAddr:0x{mac:012X}, port:{port})")
    data = bytes.fromhex("DEADBEEF")

    def flow(proto: int, sport: int, dport: int, why: str) -> None:
        member = ecmp_member(W0.addr, ECMP_NET.addr, proto, sport, dport, len(ECMP_HOPS))
        port, mac = ECMP_HOPS[member]
        name = {6: "TCP", 17: "UDP"}[proto]
        b.comment(f"{why}: {name} {sport} -> {dport} hashes to member {member}, port {port}.")
        ident = b.next_ident()
        if proto == 6:
            def build(src, dst, ttl):
                return eth_ipv4_tcp(src, dst, data, ident=ident, ttl=ttl, sport=sport, dport=dport)
        else:
            def build(src, dst, ttl):
                return eth_ipv4_udp(src, dst, data, ident=ident, ttl=ttl, sport=sport, dport=dport)
        b.send(W0.port, build(W0.endpoint, ECMP_NET, 64))
        b.expect(port, build(Endpoint(SWITCH_MAC, W0.addr), Endpoint(mac, ECMP_NET.addr), 63))

    first = {}
    for sport in range(6000, 6100):   # the first source port that lands on each member
        first.setdefault(ecmp_member(W0.addr, ECMP_NET.addr, 17, sport, 7000, 2), sport)
    flow(17, first[0], 7000, "Two UDP flows that differ only in the source port")
    flow(17, first[1], 7000, "...take different members")
    flow(17, first[0], 7000, "The first flow again: the same member as before")
    flow(6, first[0], 7000, "TCP ports are hashed too (protocol 6 is part of the tuple)")
    flow(17, INA_UDP_PORT, INA_UDP_PORT, "Aggregation-port UDP to a non-aggregator address")


# --- p4src/ina_tree.stf: hierarchical aggregation (docs/protocol.md §6), child and parent -------

TREE_JOB, PARENT_JOB = 5, 6
PARENT = Endpoint(0x080000000999, ip("10.0.9.254"))       # the parent aggregator, via port 4
CHILD = Worker(1, 3, 0x080000000888, ip("10.0.8.254"))    # a child aggregator, via port 3


def tree_test(k: int) -> str:
    b = StfBuilder(k, [
        f"ina, hierarchical aggregation with k = {k} (written by tests/ina/stfgen.py from",
        "docs/protocol.md §6; regenerate rather than edit). Two program instances cannot share",
        "one STF, so this switch plays both roles with two jobs:",
        "- job 5: this switch is a child. Its workers 0 and 1 (ports 1, 2) are summed here,",
        "  and the partial sum goes up as worker 2 of job 5 at the parent aggregator",
        "  10.0.9.254 (routed: next hop 08:00:00:00:09:99 on port 4); the parent's RESULT",
        "  comes back to 10.0.0.254 and is multicast down. The job counts 4 workers in all.",
        "- job 6: this switch is the root. Its worker 1 is a child aggregator, 10.0.8.254",
        "  behind port 3: its partial sums arrive as contributions, its results go to it.",
    ])
    b.cmd(f"add ipv4_lpm hdr.ipv4.dstAddr:0x{PARENT.addr & 0xFFFFFF00:08X}/24 "
          f"ipv4_forward(dstAddr:0x{PARENT.mac:012X}, port:4)")
    aggregator_address(b)
    b.cmd(f"add ina_jobs hdr.ipv4.dstAddr:0x{AGGREGATOR.addr:08X} hdr.ina.job:{TREE_JOB} "
          f"ina_child_job(base:0, pool_size:2, n:2, mgid:{TREE_JOB}, result_count:4, "
          f"parent:0x{PARENT.addr:08X}, child_index:2)")
    node = worker_entries(b, TREE_JOB, [W0, W1], first_node=0)
    root_job(b, PARENT_JOB, base=8, pool=2, workers=[W0, CHILD], first_node=node)
    for name in ("contributions", "duplicates", "results_multicast", "results_unicast",
                 "partials_up", "drop_bad_kind", "queries", "nacks"):
        b.zero_checks.append((f"ina_{name}", TREE_JOB))

    def up(ident: int, slot: int, ver: int, values: list[int], *, retx: bool = False,
           kind: int = CONTRIB) -> bytes:
        """The partial sum as the parent receives it: worker 2, routed (TTL 64 - 1)."""
        return ina_packet(Endpoint(SWITCH_MAC, AGGREGATOR.addr), PARENT, ttl=63, ident=ident,
                          kind=kind, job=TREE_JOB, worker=2, slot=slot, ver=ver, retx=retx,
                          chunk=slot, values=values)

    def from_parent(slot: int, ver: int, values: list[int], kind: int = RESULT,
                    count: int = 4) -> int:
        ident = b.next_ident()
        b.send(4, ina_packet(Endpoint(PARENT.mac, PARENT.addr), AGGREGATOR, ident=ident,
                             kind=kind, job=TREE_JOB, worker=2, slot=slot, ver=ver, chunk=slot,
                             count=count, values=values))
        return ident

    p = [lanes(k, [0x7FFFFFFF], lambda i, w=w: (w + 1) * 10 + i) for w in range(2)]
    partial = wrapping_sum(*p)
    b.comment("Job 5, slot 0, version 0: worker 0 is absorbed; worker 1 completes the cell here,",
              "and instead of a multicast the partial sum (lane 0 wraps: 0x7FFFFFFF * 2 =",
              "0xFFFFFFFE; lane i is 30 + 2 i) leaves for the parent as a CONTRIB of worker 2,",
              "from 10.0.0.254, count 0, routed by the LPM table (TTL 63, next hop's MAC).")
    b.contribute(W0, TREE_JOB, 0, 0, p[0])
    ident = b.contribute(W1, TREE_JOB, 0, 0, p[1])
    b.expect(4, up(ident, 0, 0, partial))
    b.count("ina_contributions", TREE_JOB, 2)
    b.count("ina_partials_up", TREE_JOB)
    b.comment("Worker 0 retransmits while the cell waits for the parent: the retransmission",
              "climbs the tree, the stored partial sum goes up again (with the retx flag).")
    ident = b.contribute(W0, TREE_JOB, 0, 0, p[0], retx=True)
    b.expect(4, up(ident, 0, 0, partial, retx=True))
    b.count("ina_duplicates", TREE_JOB)
    b.count("ina_partials_up", TREE_JOB)
    b.comment("Worker 1's timer fires too: its values climb as well. Values come again only",
              "from a timer (silence, the last resort), so every member's copy climbs; early",
              "detection's QUERYs climb from member 0 only (below; docs/protocol.md §6).")
    ident = b.contribute(W1, TREE_JOB, 0, 0, p[1], retx=True)
    b.expect(4, up(ident, 0, 0, partial, retx=True))
    b.count("ina_duplicates", TREE_JOB)
    b.count("ina_partials_up", TREE_JOB)

    g = wrapping_sum(partial, lanes(k, [5], lambda i: 1000 + i))
    b.comment("The parent's RESULT (count 4: all workers of the job) arrives on port 4: the cell",
              "takes the global sum and it is multicast to workers 0 and 1 from this switch's",
              "aggregator address; count stays 4.")
    ident = from_parent(0, 0, g)
    for w in (W0, W1):
        b.expect_result(w, TREE_JOB, 0, 0, g, count=4, ident=ident)
    b.count("ina_results_multicast", TREE_JOB)
    b.comment("The same RESULT again (the parent answering the retransmission): already here,",
              "dropped and counted as a duplicate.")
    from_parent(0, 0, g)
    b.count("ina_duplicates", TREE_JOB)
    b.comment("Worker 1 lost the result: its retransmission gets the global sum, not the partial.")
    ident = b.contribute(W1, TREE_JOB, 0, 0, p[1], retx=True)
    b.expect_result(W1, TREE_JOB, 0, 0, g, count=4, ident=ident)
    b.count("ina_duplicates", TREE_JOB)
    b.count("ina_results_unicast", TREE_JOB)

    m = [lanes(k, [float32_bits(x)], lambda i, w=w: float32_bits(w + 0.25 * i))
         for w, x in enumerate((3.0, 1.0))]
    b.comment("The MAX round of job 5, version 1: the lane-wise maximum goes up as a MAX_CONTRIB",
              "(3.0 = 0x40400000 in lane 0), the parent's MAX_RESULT (4.0 in lane 0) comes down.")
    b.contribute(W0, TREE_JOB, 0, 1, m[0], kind=MAX_CONTRIB)
    ident = b.contribute(W1, TREE_JOB, 0, 1, m[1], kind=MAX_CONTRIB)
    b.expect(4, up(ident, 0, 1, unsigned_max(*m), kind=MAX_CONTRIB))
    b.count("ina_contributions", TREE_JOB, 2)
    b.count("ina_partials_up", TREE_JOB)
    top = unsigned_max(m[0], m[1], lanes(k, [float32_bits(4.0)], lambda i: 0))
    ident = from_parent(0, 1, top, kind=MAX_RESULT)
    for w in (W0, W1):
        b.expect_result(w, TREE_JOB, 0, 1, top, count=4, ident=ident, kind=MAX_RESULT)
    b.count("ina_results_multicast", TREE_JOB)

    b.comment("A RESULT for a cell that never went up (slot 1) is dropped as a duplicate; one",
              "for slot 2 (the pool has 2 slots) is a bad slot; kind 9 is a bad kind.")
    from_parent(1, 0, g)
    b.count("ina_duplicates", TREE_JOB)
    from_parent(2, 0, g)
    b.count("ina_drop_bad_slot", TREE_JOB)
    from_parent(0, 0, g, kind=9)
    b.count("ina_drop_bad_kind", TREE_JOB)

    s = [lanes(k, [w], lambda i, w=w: 7 * (w + 1) + i) for w in range(2)]
    partial_s = wrapping_sum(*s)
    b.comment("Queries in a tree (docs/protocol.md §6). Job 5, slot 1, version 0: the cell",
              "completes here and its partial sum goes up (and, say, is lost on the way).")
    b.contribute(W0, TREE_JOB, 1, 0, s[0])
    ident = b.contribute(W1, TREE_JOB, 1, 0, s[1])
    b.expect(4, up(ident, 1, 0, partial_s))
    b.count("ina_contributions", TREE_JOB, 2)
    b.count("ina_partials_up", TREE_JOB)
    b.comment("Both workers query. Worker 1's query is dropped (the cell has its piece and",
              "waits for the parent); member 0's climbs: the switch asks the parent the same",
              "question as worker 2 of job 5 (header-only, routed, TTL 63).")
    b.query(W1, TREE_JOB, 1, 0)
    ident = b.query(W0, TREE_JOB, 1, 0)
    b.expect(4, up(ident, 1, 0, [], retx=True, kind=QUERY))
    b.count("ina_queries", TREE_JOB, 2)
    b.comment("The parent lacks this switch's partial sum and answers with a NACK (to the",
              "aggregator address 10.0.0.254): the stored partial sum goes up again, k values,",
              "retx flag set, the NACK's identification.")
    ident = from_parent(1, 0, [], kind=NACK, count=0)
    b.expect(4, up(ident, 1, 0, partial_s, retx=True))
    b.count("ina_partials_up", TREE_JOB)
    gs = wrapping_sum(partial_s, lanes(k, [], lambda i: 3 * i))
    b.comment("The parent's RESULT comes down and is multicast; a late second NACK for the now",
              "complete cell is dropped and counted as a duplicate; worker 1, which lost the",
              "RESULT, queries and gets the global sum grown from its header-only QUERY.")
    ident = from_parent(1, 0, gs)
    for w in (W0, W1):
        b.expect_result(w, TREE_JOB, 1, 0, gs, count=4, ident=ident)
    b.count("ina_results_multicast", TREE_JOB)
    from_parent(1, 0, [], kind=NACK, count=0)
    b.count("ina_duplicates", TREE_JOB)
    ident = b.query(W1, TREE_JOB, 1, 0)
    b.expect_result(W1, TREE_JOB, 1, 0, gs, count=4, ident=ident)
    b.count("ina_queries", TREE_JOB)
    b.count("ina_results_unicast", TREE_JOB)

    q = [lanes(k, [], lambda i, w=w: -(w + 1) * i) for w in range(2)]
    b.comment("Job 6, where this switch is the root and its worker 1 is the child aggregator",
              "10.0.8.254: the child's partial sum is one contribution; the RESULT goes to worker",
              "0 and to the child aggregator's address (which multicasts it further down).")
    b.contribute(W0, PARENT_JOB, 1, 0, q[0])
    ident = b.next_ident()
    b.send(CHILD.port, ina_packet(CHILD.endpoint, AGGREGATOR, ident=ident, kind=CONTRIB,
                                  job=PARENT_JOB, worker=CHILD.id, slot=1, chunk=1,
                                  values=q[1]))
    for w in (W0, CHILD):
        b.expect_result(w, PARENT_JOB, 1, 0, wrapping_sum(*q), count=2, ident=ident)
    b.count("ina_contributions", PARENT_JOB, 2)
    b.count("ina_results_multicast", PARENT_JOB)
    b.comment("Job 6, slot 0: the child aggregator (worker 1) queries a cell that has nothing",
              "from it: the NACK goes to the child aggregator's address behind port 3.")
    ident = b.next_ident()
    b.send(CHILD.port, ina_packet(CHILD.endpoint, AGGREGATOR, ident=ident, kind=QUERY,
                                  job=PARENT_JOB, worker=CHILD.id, slot=0, chunk=0, retx=True,
                                  values=[]))
    b.expect_nack(CHILD, PARENT_JOB, 0, 0, ident=ident, chunk=0)
    b.count("ina_queries", PARENT_JOB)
    b.count("ina_nacks", PARENT_JOB)
    return b.finish()


def write_all() -> dict[Path, str]:
    """Every generated STF file and its text."""
    return {
        P4SRC / "ina.stf": flat_test(32),
        P4SRC / "ina_k4.stf": flat_test(4),
        P4SRC / "ina_tree.stf": tree_test(32),
    }


def main() -> int:
    for path, text in write_all().items():
        path.write_text(text)
        print(f"wrote {path}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
