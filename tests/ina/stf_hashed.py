"""The STF test of ina.p4's hashed shared pool (docs/protocol.md §3.3), every expected byte and
decision computed from the protocol document (the hash is zlib's CRC-32, BMv2's crc32).

Jobs 20 and 21 (n = 3 and n = 1) are hashed into one shared pool of 4 pairs at cell 200, with
a workers' pool of W = 4 slots; their MAX pairs are at cells 100 and 104; their host
aggregator is 10.0.4.4:48880 (port 4). Job 22 is hashed without a host aggregator. The test is
generated, not committed: `test_ina_hashed.py` runs it on inaemu's runtime and, where
/opt/p4ref is installed, on real simple_switch (the same packets, counters and registers).
"""

from __future__ import annotations

import zlib

from .packets import (CONTRIB, FLAG_NEXT, MAX_CONTRIB, MAX_RESULT, NACK, QUERY, RESULT,
                      Endpoint, eth_ipv4_udp, ina_packet, ina_payload, ip, unsigned_max,
                      wrapping_sum)
from .stf_builder import (AGGREGATOR, HOST4, SWITCH_MAC, W0, W1, W2, StfBuilder,
                          aggregator_address, lanes, root_job, routes, worker_entries)

JOB, OTHER, BARE, CHILD_JOB = 20, 21, 22, 23
PARENT = Endpoint(0x080000000999, ip("10.0.9.254"))       # job 23's parent, via port 5
W = 4                       # the workers' pool (slots)
POOL_BASE, POOL_PAIRS = 200, 5
SERVER, SERVER_PORT = HOST4, 48880


def pair_of(job: int, slot: int) -> int:
    """The shared pair of (job, slot): crc32 of job and slot (2 bytes each, big-endian)."""
    h = zlib.crc32(job.to_bytes(2, "big") + slot.to_bytes(2, "big"))
    return POOL_BASE + 2 * (h % POOL_PAIRS)


def tag(job: int, slot: int, chunk: int) -> int:
    return (job << 48) | (slot << 32) | chunk


class Hashed:
    """Sends and expects the packets of one test, on top of StfBuilder."""

    def __init__(self, b: StfBuilder):
        self.b = b

    def contribute(self, w, job, slot, ver, chunk, values, *, next_=False, retx=False,
                   kind=CONTRIB) -> int:
        ident = self.b.next_ident()
        self.b.send(w.port, ina_packet(w.endpoint, AGGREGATOR, ident=ident, kind=kind, job=job,
                                       worker=w.id, slot=slot, ver=ver, chunk=chunk, retx=retx,
                                       values=values, flags=FLAG_NEXT if next_ else 0))
        return ident

    def forwarded(self, w, ident, **fields) -> None:
        """The packet `w` sent, on its way to the host aggregator (docs/fallback.md)."""
        self.b.expect(SERVER.port, eth_ipv4_udp(
            Endpoint(SWITCH_MAC, AGGREGATOR.addr), SERVER.endpoint,
            ina_payload(worker=w.id, **fields), ident=ident, ttl=63, dport=SERVER_PORT))
        self.b.count("ina_fallbacks", fields["job"])

    def result(self, workers, job, slot, ver, chunk, values, *, ident, next_=False,
               retx=False, kind=RESULT, count=3) -> None:
        for w in workers:
            self.b.expect(w.port, ina_packet(AGGREGATOR, w.endpoint, ident=ident, kind=kind,
                                             job=job, worker=w.id, slot=slot, ver=ver,
                                             chunk=chunk, count=count, values=values,
                                             retx=retx, flags=FLAG_NEXT if next_ else 0))

    def host_sum(self, job, slot, ver, chunk, values, *, next_, n) -> int:
        """The host aggregator's completed sum, sent to the aggregator address."""
        ident = self.b.next_ident()
        self.b.send(SERVER.port, eth_ipv4_udp(SERVER.endpoint, AGGREGATOR, ina_payload(
            kind=RESULT, job=job, worker=0, slot=slot, ver=ver, chunk=chunk, count=n,
            values=values, flags=FLAG_NEXT if next_ else 0), ident=ident, sport=SERVER_PORT))
        return ident


def colliding_slot(job: int, slot: int, other_job: int) -> int:
    """A slot of `other_job` that hashes to the pair of (job, slot)."""
    return next(s for s in range(W) if pair_of(other_job, s) == pair_of(job, slot))


def hashed_test(k: int) -> str:
    b = StfBuilder(k, [
        f"ina: the hashed shared pool, k = {k} (written by tests/ina/stf_hashed.py from",
        "docs/protocol.md §3.3; regenerate rather than edit).",
        f"Jobs {JOB} (n = 3) and {OTHER} (n = 1) share {POOL_PAIRS} pairs at cell {POOL_BASE}; "
        f"W = {W}.",
    ])
    h = Hashed(b)
    routes(b)
    aggregator_address(b)
    node = root_job(b, JOB, base=100, pool=W, workers=[W0, W1, W2], first_node=0)
    node = root_job(b, OTHER, base=104, pool=W, workers=[W0], first_node=node)
    node = root_job(b, BARE, base=108, pool=W, workers=[W0], first_node=node)
    b.cmd(f"add ipv4_lpm hdr.ipv4.dstAddr:0x{PARENT.addr & 0xFFFFFF00:08X}/24 "
          f"ipv4_forward(dstAddr:0x{PARENT.mac:012X}, port:5)")
    b.cmd(f"add ina_jobs hdr.ipv4.dstAddr:0x{AGGREGATOR.addr:08X} hdr.ina.job:{CHILD_JOB} "
          f"ina_child_job(base:112, pool_size:{W}, n:2, mgid:{CHILD_JOB}, result_count:4, "
          f"parent:0x{PARENT.addr:08X}, child_index:1)")
    worker_entries(b, CHILD_JOB, [W0, W1], first_node=node)
    b.cmd(f"add ina_fallback hdr.ina.job:{CHILD_JOB} "
          f"ina_fall_back(server:0x{SERVER.addr:08X}, port:{SERVER_PORT})")
    for job in (JOB, OTHER, BARE, CHILD_JOB):
        b.cmd(f"add ina_sharing hdr.ina.job:{job} "
              f"ina_share_pool(pool_base:{POOL_BASE}, pool_pairs:{POOL_PAIRS})")
    for job in (JOB, OTHER):
        b.cmd(f"add ina_fallback hdr.ina.job:{job} "
              f"ina_fall_back(server:0x{SERVER.addr:08X}, port:{SERVER_PORT})")
    for name in ("contributions", "duplicates", "results_multicast", "results_unicast",
                 "drop_bad_slot", "drop_bad_kind", "queries", "nacks", "fallbacks"):
        b.zero_checks.append((f"ina_{name}", JOB))
    three = (W0, W1, W2)
    a = [lanes(k, [w + 1], lambda i, w=w: 100 * w + i) for w in range(3)]

    b.comment("Chunk 0 (slot 0, version 0) is in the first window: nothing claimed a cell for",
              "it, so all three contributions go to the host aggregator unchanged.")
    for w in three:
        ident = h.contribute(w, JOB, 0, 0, 0, a[w.id], next_=True)
        h.forwarded(w, ident, kind=CONTRIB, job=JOB, slot=0, ver=0, chunk=0, values=a[w.id],
                    flags=FLAG_NEXT)
    b.comment("A QUERY of chunk 0 goes there too.")
    ident = b.query(W1, JOB, 0, 0, chunk=0)
    h.forwarded(W1, ident, kind=QUERY, job=JOB, slot=0, ver=0, chunk=0, values=[], retx=True)

    s0 = wrapping_sum(*a)
    b.comment(f"The host's sum of chunk 0 (next set) is multicast; the pair's other cell",
              f"({pair_of(JOB, 0) + 1}) is free, so it is claimed for chunk 4 (next = 1).")
    ident = h.host_sum(JOB, 0, 0, 0, s0, next_=True, n=3)
    h.result(three, JOB, 0, 0, 0, s0, ident=ident, next_=True)
    b.count("ina_results_multicast", JOB)

    c = [lanes(k, [-(w + 1)], lambda i, w=w: 7 * w - i) for w in range(3)]
    b.comment("Chunk 4 (slot 0, version 1) owns its cell: aggregated in the switch; its RESULT",
              "claims the other cell (the host had chunk 0 there: free) for chunk 8.")
    h.contribute(W0, JOB, 0, 1, 4, c[0], next_=True)
    h.contribute(W1, JOB, 0, 1, 4, c[1], next_=True)
    ident = h.contribute(W2, JOB, 0, 1, 4, c[2], next_=True)
    s4 = wrapping_sum(*c)
    h.result(three, JOB, 0, 1, 4, s4, ident=ident, next_=True)
    b.count("ina_contributions", JOB, 3)
    b.count("ina_results_multicast", JOB)
    b.comment("A duplicate of chunk 4 (W1 lost the RESULT) is answered from the cell, retx set,",
              "next clear (answers to one worker never carry it).")
    ident = h.contribute(W1, JOB, 0, 1, 4, c[1], next_=True, retx=True)
    h.result([W1], JOB, 0, 1, 4, s4, ident=ident, retx=True)
    b.count("ina_duplicates", JOB)
    b.count("ina_results_unicast", JOB)

    slot = colliding_slot(JOB, 0, OTHER)
    d = lanes(k, [5], lambda i: i)
    b.comment(f"Job {OTHER}'s slot {slot} hashes to the same pair. Its chunk {slot + W} (version 1)",
              "was never claimed (that cell is job 20's): forwarded to the host.")
    ident = h.contribute(W0, OTHER, slot, 1, slot + W, d, next_=True)
    h.forwarded(W0, ident, kind=CONTRIB, job=OTHER, slot=slot, ver=1, chunk=slot + W, values=d,
                flags=FLAG_NEXT)
    b.comment(f"The host's sum of it asks to claim the pair's version-0 cell, which job {JOB}",
              "owns (chunk 8): a collision, nothing changes, the RESULT says next = 0.")
    ident = h.host_sum(OTHER, slot, 1, slot + W, d, next_=True, n=1)
    b.expect(W0.port, ina_packet(AGGREGATOR, W0.endpoint, ident=ident, kind=RESULT, job=OTHER,
                                 worker=0, slot=slot, ver=1, chunk=slot + W, count=1, values=d))
    b.count("ina_results_multicast", OTHER)

    e = [lanes(k, [w], lambda i, w=w: w + i) for w in range(3)]
    b.comment("Chunk 8 (version 0) owns the cell its chunk 4 claimed. It is in the call's last",
              "window (next clear): its RESULT releases chunk 4's cell and claims nothing.")
    h.contribute(W0, JOB, 0, 0, 8, e[0])
    h.contribute(W1, JOB, 0, 0, 8, e[1])
    ident = h.contribute(W2, JOB, 0, 0, 8, e[2])
    s8 = wrapping_sum(*e)
    h.result(three, JOB, 0, 0, 8, s8, ident=ident)
    b.count("ina_contributions", JOB, 3)
    b.count("ina_results_multicast", JOB)
    b.comment("A QUERY of chunk 8 is answered from its cell; a delayed copy of chunk 4 finds its",
              "cell released (not its tag) and goes to the host: never summed twice here.")
    ident = b.query(W2, JOB, 0, 0, chunk=8)
    b.expect(W2.port, ina_packet(AGGREGATOR, W2.endpoint, ident=ident, kind=RESULT, job=JOB,
                                 worker=2, slot=0, ver=0, chunk=8, count=3, values=s8,
                                 retx=True))
    b.count("ina_queries", JOB)
    b.count("ina_results_unicast", JOB)
    ident = h.contribute(W0, JOB, 0, 1, 4, c[0], next_=True, retx=True)
    h.forwarded(W0, ident, kind=CONTRIB, job=JOB, slot=0, ver=1, chunk=4, values=c[0],
                retx=True, flags=FLAG_NEXT)

    b.comment(f"Now job {OTHER}'s next use of that pair's version-1 cell finds it free: the",
              f"host's sum of its chunk {slot + 2 * W} (version 0) claims it for chunk "
              f"{slot + 3 * W}.")
    ident = h.host_sum(OTHER, slot, 0, slot + 2 * W, d, next_=True, n=1)
    b.expect(W0.port, ina_packet(AGGREGATOR, W0.endpoint, ident=ident, kind=RESULT, job=OTHER,
                                 worker=0, slot=slot, ver=0, chunk=slot + 2 * W, count=1,
                                 values=d, flags=FLAG_NEXT))
    b.count("ina_results_multicast", OTHER)
    ident = h.contribute(W0, OTHER, slot, 1, slot + 3 * W, d)
    b.expect(W0.port, ina_packet(AGGREGATOR, W0.endpoint, ident=ident, kind=RESULT, job=OTHER,
                                 worker=0, slot=slot, ver=1, chunk=slot + 3 * W, count=1,
                                 values=d))
    b.count("ina_contributions", OTHER)
    b.count("ina_results_multicast", OTHER)

    b.comment("A RESULT from the server's address but another UDP port (another tier's host",
              "aggregator answering) is not this tier's host sum: at a root, a bad kind.")
    ident = b.next_ident()
    b.send(SERVER.port, eth_ipv4_udp(SERVER.endpoint, AGGREGATOR, ina_payload(
        kind=RESULT, job=JOB, worker=0, slot=1, ver=0, chunk=1, count=3, values=d),
        ident=ident, sport=SERVER_PORT + 1))
    b.count("ina_drop_bad_kind", JOB)

    b.comment(f"Slot {W} is outside the workers' pool: a bad slot (a hashed job has no host",
              "slots), and so is a data chunk of a hashed job without a host aggregator",
              f"(job {BARE}) that owns no cell.")
    h.contribute(W0, JOB, W, 0, W, d)
    b.count("ina_drop_bad_slot", JOB)
    h.contribute(W0, BARE, 1, 0, 1, d)
    b.count("ina_drop_bad_slot", BARE)

    m = [lanes(k, [0x3F800000 + w], lambda i, w=w: w * 3 + i) for w in range(3)]
    b.comment("The MAX round stays in the job's own pair (cells 100, 101).")
    h.contribute(W0, JOB, 0, 0, 0, m[0], kind=MAX_CONTRIB)
    h.contribute(W1, JOB, 0, 0, 0, m[1], kind=MAX_CONTRIB)
    ident = h.contribute(W2, JOB, 0, 0, 0, m[2], kind=MAX_CONTRIB)
    h.result(three, JOB, 0, 0, 0, unsigned_max(*m), ident=ident, kind=MAX_RESULT)
    b.count("ina_contributions", JOB, 3)
    b.count("ina_results_multicast", JOB)
    child_tier(b, h)
    return b.finish()


def child_tier(b: StfBuilder, h: Hashed) -> None:
    """Job 23: this switch is a child tier (docs/protocol.md §3.3, "Tiers"; §6)."""
    k = b.k
    pair = pair_of(CHILD_JOB, 0)
    f = [lanes(k, [w + 40], lambda i, w=w: i - w) for w in range(2)]
    b.comment(f"Job {CHILD_JOB}: this switch is a child tier (n = 2 here, 4 workers in all, the",
              "parent 10.0.9.254 behind port 5). Its host aggregator's final sum of chunk 0 is",
              f"multicast (count 4) and claims the pair's version-1 cell ({pair + 1}) for chunk 4.")
    ident = h.host_sum(CHILD_JOB, 0, 0, 0, f[0], next_=True, n=4)
    h.result((W0, W1), CHILD_JOB, 0, 0, 0, f[0], ident=ident, next_=True, count=4)
    b.count("ina_results_multicast", CHILD_JOB)
    b.comment("Chunk 4 owns its cell: summed here, and the partial sum goes up as member 1 of",
              "the parent's job, with the workers' next flag (the parent claims on it).")
    h.contribute(W0, CHILD_JOB, 0, 1, 4, f[0], next_=True)
    ident = h.contribute(W1, CHILD_JOB, 0, 1, 4, f[1], next_=True)
    partial = wrapping_sum(*f)
    b.expect(5, ina_packet(Endpoint(SWITCH_MAC, AGGREGATOR.addr), PARENT, ttl=63, ident=ident,
                           kind=CONTRIB, job=CHILD_JOB, worker=1, slot=0, ver=1, chunk=4,
                           values=partial, flags=FLAG_NEXT))
    b.count("ina_contributions", CHILD_JOB, 2)
    b.count("ina_partials_up", CHILD_JOB)
    total = [(v * 2) & 0xFFFFFFFF for v in partial]
    b.comment("The parent's RESULT (it claimed: next set) is stored and multicast; the child",
              f"claims the version-0 cell ({pair}) for chunk 8 in turn (next = 1).")
    ident = b.next_ident()
    b.send(5, ina_packet(PARENT, AGGREGATOR, ident=ident, kind=RESULT, job=CHILD_JOB, worker=1,
                         slot=0, ver=1, chunk=4, count=4, values=total, flags=FLAG_NEXT))
    h.result((W0, W1), CHILD_JOB, 0, 1, 4, total, ident=ident, next_=True, count=4)
    b.count("ina_results_multicast", CHILD_JOB)
    b.comment("The parent's RESULT and NACK for chunk 13 (slot 1), which owns no cell here (this",
              "tier's host aggregator stood in for it), go on to that host aggregator.")
    for kind, values in ((RESULT, total), (NACK, [])):
        ident = b.next_ident()
        b.send(5, ina_packet(PARENT, AGGREGATOR, ident=ident, kind=kind, job=CHILD_JOB,
                             worker=1, slot=1, ver=1, chunk=13, count=4 if values else 0,
                             values=values))
        b.expect(SERVER.port, eth_ipv4_udp(
            Endpoint(SWITCH_MAC, AGGREGATOR.addr), SERVER.endpoint,
            ina_payload(kind=kind, job=CHILD_JOB, worker=1, slot=1, ver=1, chunk=13,
                        count=4 if values else 0, values=values),
            ident=ident, ttl=63, dport=SERVER_PORT))
        b.count("ina_fallbacks", CHILD_JOB)


def expected_owners() -> dict[int, int]:
    """The shared pool's owner tags after the test: chunk 8 still holds its cell (its shadow,
    until slot 0's next result), job 21's chunk 12 the one chunk 4 released; the rest free."""
    owners = {cell: 0 for cell in range(POOL_BASE, POOL_BASE + 2 * POOL_PAIRS)}
    owners[pair_of(JOB, 0)] = tag(JOB, 0, 8)
    owners[pair_of(JOB, 0) + 1] = tag(OTHER, colliding_slot(JOB, 0, OTHER), 12)
    owners[pair_of(CHILD_JOB, 0)] = tag(CHILD_JOB, 0, 8)       # the child tier's claim
    owners[pair_of(CHILD_JOB, 0) + 1] = tag(CHILD_JOB, 0, 4)   # chunk 4's result, kept
    return owners
