"""p4src/ina_tree.stf: hierarchical aggregation (docs/protocol.md §6), the child and the parent
roles of one switch; written by tests/ina/stfgen.py."""

from __future__ import annotations

from .packets import (CONTRIB, MAX_CONTRIB, MAX_RESULT, NACK, QUERY, RESULT, Endpoint,
                      float32_bits, ina_packet, ip, unsigned_max, wrapping_sum)
from .stf_builder import (AGGREGATOR, SWITCH_MAC, W0, W1, W2, StfBuilder, Worker,
                          aggregator_address, lanes, root_job, worker_entries)

TREE_JOB, PARENT_JOB = 5, 6
WIDE_JOB = 8                 # a child of three workers: cells 16..19 (one slot, the MAX pair)
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
        "- job 8: a child of three workers (ports 1-3), its partial sums up as worker 3.",
    ])
    b.cmd(f"add ipv4_lpm hdr.ipv4.dstAddr:0x{PARENT.addr & 0xFFFFFF00:08X}/24 "
          f"ipv4_forward(dstAddr:0x{PARENT.mac:012X}, port:4)")
    aggregator_address(b)
    b.cmd(f"add ina_jobs hdr.ipv4.dstAddr:0x{AGGREGATOR.addr:08X} hdr.ina.job:{TREE_JOB} "
          f"ina_child_job(base:0, pool_size:2, n:2, mgid:{TREE_JOB}, result_count:4, "
          f"parent:0x{PARENT.addr:08X}, child_index:2)")
    node = worker_entries(b, TREE_JOB, [W0, W1], first_node=0)
    node = root_job(b, PARENT_JOB, base=8, pool=2, workers=[W0, CHILD], first_node=node)
    b.cmd(f"add ina_jobs hdr.ipv4.dstAddr:0x{AGGREGATOR.addr:08X} hdr.ina.job:{WIDE_JOB} "
          f"ina_child_job(base:16, pool_size:1, n:3, mgid:{WIDE_JOB}, result_count:6, "
          f"parent:0x{PARENT.addr:08X}, child_index:3)")
    worker_entries(b, WIDE_JOB, [W0, W1, W2], first_node=node)
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
                    count: int = 4, retx: bool = False) -> int:
        ident = b.next_ident()
        b.send(4, ina_packet(Endpoint(PARENT.mac, PARENT.addr), AGGREGATOR, ident=ident,
                             kind=kind, job=TREE_JOB, worker=2, slot=slot, ver=ver, chunk=slot,
                             count=count, values=values, retx=retx))
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
              "climbs the tree as the header-only QUERY about this cell's sum (worker 2, retx",
              "flag, routed, TTL 63), not as the sum: the parent's NACK pulls the sum only if",
              "the parent lacks it (docs/protocol.md §6).")
    ident = b.contribute(W0, TREE_JOB, 0, 0, p[0], retx=True)
    b.expect(4, up(ident, 0, 0, [], retx=True, kind=QUERY))
    b.count("ina_duplicates", TREE_JOB)
    b.comment("Worker 1's timer fires too: its question climbs as well. Values come again only",
              "from a timer (silence, the last resort), so every member's copy climbs; early",
              "detection's QUERYs climb from member 0 only (below; docs/protocol.md §6).")
    ident = b.contribute(W1, TREE_JOB, 0, 0, p[1], retx=True)
    b.expect(4, up(ident, 0, 0, [], retx=True, kind=QUERY))
    b.count("ina_duplicates", TREE_JOB)
    b.comment("The parent lacks the sum (the first copy was lost): its NACK makes the stored",
              "partial sum go up again, k values, retx flag set, the NACK's identification.")
    ident = from_parent(0, 0, [], kind=NACK, count=0)
    b.expect(4, up(ident, 0, 0, partial, retx=True))
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
    b.comment("Worker 1 lost the result: its retransmission gets the global sum, not the partial",
              "(with the retx flag: an answer to a retransmission).")
    ident = b.contribute(W1, TREE_JOB, 0, 0, p[1], retx=True)
    b.expect_result(W1, TREE_JOB, 0, 0, g, count=4, ident=ident, retx=True)
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
    b.comment("Worker 1's MAX probe while the cell waits for the parent: the MAX round's",
              "duplicate climbs with the stored maximum (retx), not as a QUERY (a QUERY names a",
              "data slot); from members 0 and 1 only (INA_MAX_PROBE_MEMBERS: every member",
              "probes on the same schedule, and a probe from each reached the root).")
    ident = b.contribute(W1, TREE_JOB, 0, 1, m[1], kind=MAX_CONTRIB, retx=True)
    b.expect(4, up(ident, 0, 1, unsigned_max(*m), kind=MAX_CONTRIB, retx=True))
    b.count("ina_duplicates", TREE_JOB)
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
    b.comment("The parent's RESULT comes down and is multicast; its cell took the partial sum",
              "resent after the NACK, so it has the retx flag, which the cell keeps and the",
              "multicast carries (the workers below take no round-trip sample from it). A late",
              "second NACK for the now complete cell is dropped and counted as a duplicate;",
              "worker 1, which lost the RESULT, queries and gets the global sum grown from its",
              "header-only QUERY.")
    ident = from_parent(1, 0, gs, retx=True)
    for w in (W0, W1):
        b.expect_result(w, TREE_JOB, 1, 0, gs, count=4, ident=ident, retx=True)
    b.count("ina_results_multicast", TREE_JOB)
    from_parent(1, 0, [], kind=NACK, count=0)
    b.count("ina_duplicates", TREE_JOB)
    ident = b.query(W1, TREE_JOB, 1, 0)
    b.expect_result(W1, TREE_JOB, 1, 0, gs, count=4, ident=ident, retx=True)
    b.count("ina_queries", TREE_JOB)
    b.count("ina_results_unicast", TREE_JOB)

    t = [lanes(k, [w + 2], lambda i, w=w: 11 * (w + 1) - i) for w in range(2)]
    partial_t = wrapping_sum(*t)
    b.comment("Job 5, slot 1, version 1: worker 0's first copy was lost and its retransmission",
              "(retx) comes first; worker 1's first copy completes the cell. The partial sum",
              "goes up with the retx flag the cell kept from worker 0's piece, although the",
              "packet that completed it was a first copy: the parent's cell and its RESULT",
              "then say the sum waited for a recovery.")
    b.contribute(W0, TREE_JOB, 1, 1, t[0], retx=True)
    ident = b.contribute(W1, TREE_JOB, 1, 1, t[1])
    b.expect(4, up(ident, 1, 1, partial_t, retx=True))
    b.count("ina_contributions", TREE_JOB, 2)
    b.count("ina_partials_up", TREE_JOB)
    gt = wrapping_sum(partial_t, lanes(k, [1], lambda i: i))
    ident = from_parent(1, 1, gt, retx=True)
    for w in (W0, W1):
        b.expect_result(w, TREE_JOB, 1, 1, gt, count=4, ident=ident, retx=True)
    b.count("ina_results_multicast", TREE_JOB)

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

    def wide_up(ident: int, values: list[int], retx: bool = False) -> bytes:
        """Job 8's maximum as the parent receives it: worker 3, routed (TTL 63)."""
        return ina_packet(Endpoint(SWITCH_MAC, AGGREGATOR.addr), PARENT, ttl=63, ident=ident,
                          kind=MAX_CONTRIB, job=WIDE_JOB, worker=3, slot=0, ver=0, retx=retx,
                          chunk=0, values=values)

    x = [lanes(k, [float32_bits(v)], lambda i, w=w: float32_bits(w + 0.5 * i))
         for w, v in enumerate((1.0, 2.0, 5.0))]
    top3 = unsigned_max(*x)
    b.comment("Job 8's MAX round (three members): the lane-wise maximum goes up once all three",
              "offered.")
    b.contribute(W0, WIDE_JOB, 0, 0, x[0], kind=MAX_CONTRIB)
    b.contribute(W1, WIDE_JOB, 0, 0, x[1], kind=MAX_CONTRIB)
    ident = b.contribute(W2, WIDE_JOB, 0, 0, x[2], kind=MAX_CONTRIB)
    b.expect(4, wide_up(ident, top3))
    b.count("ina_contributions", WIDE_JOB, 3)
    b.count("ina_partials_up", WIDE_JOB)
    b.comment("Member 2's MAX probe while the cell waits for the parent: dropped and counted as",
              "a duplicate. Every member probes the MAX round on the same schedule, so only",
              "members 0 and 1 climb (INA_MAX_PROBE_MEMBERS): a probe from every member reached",
              "the root of a fat-tree k = 40, 16,000 of them (docs/scale.md). Member 1's climbs.")
    b.contribute(W2, WIDE_JOB, 0, 0, x[2], kind=MAX_CONTRIB, retx=True)
    b.count("ina_duplicates", WIDE_JOB)
    ident = b.contribute(W1, WIDE_JOB, 0, 0, x[1], kind=MAX_CONTRIB, retx=True)
    b.expect(4, wide_up(ident, top3, retx=True))
    b.count("ina_duplicates", WIDE_JOB)
    b.count("ina_partials_up", WIDE_JOB)
    return b.finish()
