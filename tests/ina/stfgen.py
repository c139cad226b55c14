"""Writes the STF tests of p4src/ina.p4, computing every expected byte from docs/protocol.md.

    .venv/bin/python -m tests.ina.stfgen    # rewrites p4src/ina.stf, ina_k4.stf, ina_tree.stf

The STF files are committed (the corpus test runs p4src/ina.stf as it is); `test_ina_stf.py`
checks they are what this script writes, so a change of expectations is always a change here,
with the reason next to it. Each scenario states what the switch must do and why, and the
generated file repeats that as comments above the packets. This module holds the flat tests
(one aggregating switch); `stf_tree.py` the hierarchical one; `stf_builder.py` the test network
and the STF writer they share.
"""

from __future__ import annotations

from pathlib import Path

from .packets import (CONTRIB, INA_UDP_PORT, MAX_CONTRIB, MAX_RESULT, NACK, QUERY, RESULT,
                      Endpoint, ecmp_member, eth_ipv4_tcp, eth_ipv4_udp, float32_bits,
                      ina_packet, ina_payload, ip, unsigned_max, wrapping_sum)
from .stf_builder import (AGGREGATOR, HOST4, OTHER_JOBS, SWITCH_MAC, W0, W1, W2, StfBuilder,
                          Worker, aggregator_address, lanes, root_job, routes, worker_on_port)
from .stf_tree import tree_test

P4SRC = Path(__file__).resolve().parents[2] / "p4src"

__all__ = ["P4SRC", "flat_test", "tree_test", "write_all"]


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
              "job's group, one copy per worker at its own addresses. Lane 0 is 0x7FFFFFFF +",
              "0x7FFFFFFF + 2 = 2^32, which wraps to 0; lane 1 is -5 - 1000 + 3 = -1002",
              f"(0x{sum_a[1]:08X}); lane i >= 2 is (i + 1) - 1000 i + 3 i. count = n = 3.")
    ident = b.contribute(W2, JOB, 0, 0, a2)
    b.expect_multicast(JOB, 0, 0, sum_a, ident=ident)

    # slot 1: a duplicate while the cell is still aggregating
    c = [lanes(k, [], lambda i, w=w: 100 * (w + 1) + i) for w in range(3)]
    b.comment("Job 7, slot 1, version 0: worker 0's contribution, then its retransmission (retx",
              "flag) before the cell is complete: the copy is dropped and counted, not added.")
    b.contribute(W0, JOB, 1, 0, c[0])
    b.contribute(W0, JOB, 1, 0, c[0], retx=True)
    b.count("ina_duplicates", JOB)
    b.comment("Workers 1 and 2 complete it: each lane i is 100 + 200 + 300 + 3 i (worker 0 once).",
              "Worker 2's packet has the retx flag (its original was lost): as the first copy",
              "to arrive it counts as a contribution, and the cell took a retransmitted piece:",
              "the RESULT has the retx flag too (it waited for a recovery; workers take no",
              "round-trip sample from it).")
    b.contribute(W1, JOB, 1, 0, c[1])
    ident = b.contribute(W2, JOB, 1, 0, c[2], retx=True)
    b.expect_multicast(JOB, 1, 0, wrapping_sum(*c), ident=ident, retx=True)

    b.comment("A duplicate after completion: worker 1 lost the slot 0 result and retransmits. The",
              "cell is complete, so the stored sum goes back to worker 1 only, with the retx",
              "flag (an answer to a retransmission).")
    ident = b.contribute(W1, JOB, 0, 0, a1, retx=True)
    b.expect_result(W1, JOB, 0, 0, sum_a, count=3, ident=ident, retx=True)
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
    b.expect_result(W2, JOB, 0, 0, sum_a, count=3, ident=ident, retx=True)
    b.count("ina_duplicates", JOB)
    b.count("ina_results_unicast", JOB)
    b.comment("Worker 2 completes version 1: lane 0 is -3 (0xFFFFFFFD), lane i is 42 - 3 i.",
              "The flags of the RESULT carry ver = 1.")
    ident = b.contribute(W2, JOB, 0, 1, v[2], chunk=POOL)
    sum_v = wrapping_sum(*v)
    b.expect_multicast(JOB, 0, 1, sum_v, ident=ident, chunk=POOL)
    b.comment("Worker 0 lost that result: its retransmission gets the version 1 sum.")
    ident = b.contribute(W0, JOB, 0, 1, v[0], retx=True, chunk=POOL)
    b.expect_result(W0, JOB, 0, 1, sum_v, count=3, ident=ident, chunk=POOL, retx=True)
    b.count("ina_duplicates", JOB)
    b.count("ina_results_unicast", JOB)

    r = [lanes(k, [], lambda i, w=w: (w + 1) * (i + 1)) for w in range(3)]
    b.comment("Slot reuse: version 0 again (chunk 2 * pool). Every worker's bit was cleared there",
              "when it moved to version 1, so these are new contributions; worker 2 comes first",
              "and overwrites the old sum. Lane i is 6 (i + 1): nothing of the old round remains.")
    b.contribute(W2, JOB, 0, 0, r[2], chunk=2 * POOL)
    b.contribute(W0, JOB, 0, 0, r[0], chunk=2 * POOL)
    ident = b.contribute(W1, JOB, 0, 0, r[1], chunk=2 * POOL)
    b.expect_multicast(JOB, 0, 0, wrapping_sum(*r), ident=ident, chunk=2 * POOL)

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
    b.expect_multicast(JOB, 0, 0, unsigned_max(*m), ident=ident, kind=MAX_RESULT)
    b.comment("The MAX cells are apart from the data cells: slot 0 version 0 still answers a",
              "duplicate with its sum of the reuse round.")
    ident = b.contribute(W2, JOB, 0, 0, r[2], retx=True, chunk=2 * POOL)
    b.expect_result(W2, JOB, 0, 0, wrapping_sum(*r), count=3, ident=ident, chunk=2 * POOL,
                    retx=True)
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
    b.comment("Worker 1's resent contribution and worker 2's complete the cell: multicast, with",
              "the retx flag (the cell took worker 1's retransmission: the result waited for it,",
              "though worker 2's own packet was a first copy).")
    b.contribute(W1, JOB, 3, 0, d[1], retx=True)
    ident = b.contribute(W2, JOB, 3, 0, d[2])
    for w in (W0, W1, W2):
        b.expect_result(w, JOB, 3, 0, wrapping_sum(*d), count=3, ident=ident, retx=True)
    b.count("ina_contributions", JOB, 2)
    b.count("ina_results_multicast", JOB)
    b.comment("Worker 2 lost that RESULT and queries: the cell is complete, so the QUERY grows",
              f"into a unicast RESULT with the k = {k} stored sums (UDP length {24 + 4 * k}, IPv4",
              f"total length {44 + 4 * k}, checksum recomputed).")
    ident = b.query(W2, JOB, 3, 0)
    b.expect_result(W2, JOB, 3, 0, wrapping_sum(*d), count=3, ident=ident, retx=True)
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
