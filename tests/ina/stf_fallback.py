"""The STF test of ina.p4's fallback to a host aggregator (docs/fallback.md), every expected byte
computed from docs/protocol.md and docs/fallback.md.

Job 7 (n = 3) holds 2 slots in the switch but its workers use more; its host aggregator is
10.0.4.4 (the host on port 4), UDP port 48880. Job 9 holds 1 slot and has no host aggregator.
Job 13 sits at the end of the 2048-cell pool (its MAX pair is outside the registers) and has a
host aggregator. The test is generated, not committed: `test_ina_fallback.py` runs it on
inaemu's runtime and, where /opt/p4ref is installed, on real simple_switch.
"""

from __future__ import annotations

from .packets import (CONTRIB, INA_UDP_PORT, MAX_CONTRIB, MAX_RESULT, QUERY, RESULT, Endpoint,
                      eth_ipv4_udp, ina_payload, unsigned_max, wrapping_sum)
from .stf_builder import (AGGREGATOR, HOST4, SWITCH_MAC, W0, W1, W2, StfBuilder,
                          aggregator_address, lanes, root_job, routes, worker_on_port)

JOB, POOL = 7, 2            # cells 0..5: slots 0 and 1, the MAX pair 4, 5
PLAIN_JOB = 9               # one slot at cells 8..11, no host aggregator: slot 1 is a bad slot
EDGE_JOB = 13               # base 2046: slot 0 fits, its MAX pair (2048, 2049) does not
SERVER, SERVER_PORT = HOST4, 48880


def fallback_entry(b: StfBuilder, job: int) -> None:
    b.cmd(f"add ina_fallback hdr.ina.job:{job} "
          f"ina_fall_back(server:0x{SERVER.addr:08X}, port:{SERVER_PORT})")


def forwarded(b: StfBuilder, w, payload: bytes, ident: int) -> None:
    """What the switch makes of a packet it hands to the host aggregator: routed to the server
    (its MAC, port 4), TTL 63, from the aggregator address (not the worker's: a host aggregator
    on the worker's own host would drop a packet with a local source), destination address and
    UDP port rewritten, UDP checksum 0, the payload unchanged (`w` sent it)."""
    b.expect(SERVER.port, eth_ipv4_udp(Endpoint(SWITCH_MAC, AGGREGATOR.addr), SERVER.endpoint,
                                       payload, ident=ident, ttl=63, dport=SERVER_PORT))


def fallback_test(k: int) -> str:
    b = StfBuilder(k, [
        f"ina: fallback to a host aggregator, k = {k} (written by tests/ina/stf_fallback.py",
        "from docs/fallback.md; regenerate rather than edit).",
        "Job 7 (n = 3) holds slots 0..1 here; slots >= 2 go to 10.0.4.4:48880 (port 4).",
    ])
    routes(b)
    aggregator_address(b)
    node = root_job(b, JOB, base=0, pool=POOL, workers=[W0, W1, W2], first_node=0)
    fallback_entry(b, JOB)
    node = root_job(b, PLAIN_JOB, base=8, pool=1, workers=[W0], first_node=node)
    root_job(b, EDGE_JOB, base=2046, pool=1, workers=[W0], first_node=node)
    fallback_entry(b, EDGE_JOB)
    for name in ("contributions", "duplicates", "results_multicast", "results_unicast",
                 "drop_bad_worker", "drop_bad_slot", "drop_bad_kind", "queries", "nacks",
                 "fallbacks"):
        b.zero_checks.append((f"ina_{name}", JOB))
    b.zero_checks.append(("ina_fallbacks", PLAIN_JOB))

    a = [lanes(k, [w - 1], lambda i, w=w: 10 * w + i) for w in range(3)]
    b.comment("Slot 1 (version 0) is one of the switch's: aggregated and multicast as always.")
    b.contribute(W0, JOB, 1, 0, a[0])
    b.contribute(W1, JOB, 1, 0, a[1])
    ident = b.contribute(W2, JOB, 1, 0, a[2])
    b.expect_multicast(JOB, 1, 0, wrapping_sum(*a), ident=ident)

    c = lanes(k, [-9], lambda i: 1000 + i)
    b.comment("Slot 2 (version 1, chunk 6) is not the switch's (pool 2): the contribution goes to",
              "the host aggregator, untouched but for the addresses (from the aggregator address",
              "to the server), the UDP port, the UDP checksum (0), the MACs and the TTL, and is",
              "counted as a fallback. No cell of the switch changes.")
    for w in (W0, W1):
        ident = b.contribute(w, JOB, 2, 1, c, chunk=6)
        forwarded(b, w, ina_payload(kind=CONTRIB, job=JOB, worker=w.id, slot=2, ver=1, chunk=6,
                                    values=c), ident)
        b.count("ina_fallbacks", JOB)
    b.comment("A retransmission and a QUERY for a fallback slot follow the same way: the",
              "switch keeps no state for those slots, the host aggregator answers them.")
    ident = b.contribute(W0, JOB, 2, 1, c, chunk=6, retx=True)
    forwarded(b, W0, ina_payload(kind=CONTRIB, job=JOB, worker=0, slot=2, ver=1, chunk=6,
                                 retx=True, values=c), ident)
    ident = b.query(W2, JOB, 300, 0, chunk=7)
    forwarded(b, W2, ina_payload(kind=QUERY, job=JOB, worker=2, slot=300, chunk=7, retx=True,
                                 values=[]), ident)
    b.count("ina_fallbacks", JOB, 2)

    b.comment("A packet with a UDP checksum (0x1234) leaves with checksum 0: the rewritten",
              "address and port would have made it wrong (0 means none, for IPv4).")
    ident = b.next_ident()
    payload = ina_payload(kind=CONTRIB, job=JOB, worker=1, slot=3, values=c)
    frame = bytearray(eth_ipv4_udp(W1.endpoint, AGGREGATOR, payload, ident=ident))
    frame[40:42] = b"\x12\x34"
    b.send(W1.port, bytes(frame))
    forwarded(b, W1, payload, ident)
    b.count("ina_fallbacks", JOB)

    b.comment("The checks before the slot still apply: worker id 3 (n = 3) is a bad worker,",
              "dropped here, never forwarded.")
    b.contribute(worker_on_port(3, 3), JOB, 2, 0, c)
    b.count("ina_drop_bad_worker", JOB)

    m = [lanes(k, [0x3F800000 + w], lambda i, w=w: w * 3 + i) for w in range(3)]
    b.comment("The MAX round always stays in the switch (slot is ignored, here 5): the",
              "MAX_RESULT is multicast from the job's MAX cells.")
    b.contribute(W0, JOB, 5, 0, m[0], kind=MAX_CONTRIB)
    b.contribute(W1, JOB, 5, 0, m[1], kind=MAX_CONTRIB)
    ident = b.contribute(W2, JOB, 5, 0, m[2], kind=MAX_CONTRIB)
    b.expect_multicast(JOB, 5, 0, unsigned_max(*m), ident=ident, kind=MAX_RESULT)

    b.comment("The host aggregator's RESULT to worker 1 (from 10.0.4.4:48880) is plain routed",
              "traffic: to port 2, TTL 63, nothing else changed.")
    result = ina_payload(kind=RESULT, job=JOB, worker=1, slot=2, ver=1, chunk=6, count=3,
                         values=wrapping_sum(c, c, c))
    ident = b.next_ident()
    b.send(SERVER.port, eth_ipv4_udp(Endpoint(SERVER.mac, SERVER.addr),
                                     Endpoint(SWITCH_MAC, W1.addr), result, ident=ident,
                                     sport=SERVER_PORT, dport=INA_UDP_PORT))
    b.expect(W1.port, eth_ipv4_udp(Endpoint(SWITCH_MAC, SERVER.addr), W1.endpoint, result,
                                   ident=ident, ttl=63, sport=SERVER_PORT, dport=INA_UDP_PORT))

    b.comment("The host aggregator may instead send one RESULT to the aggregator address: for one",
              "of its slots (2), from the job's server, the switch multicasts it to the job's",
              "workers as it does its own sums (from the aggregator address, TTL 64, count n,",
              "each replica to its worker).")
    sums = wrapping_sum(c, c, c)
    to_switch = ina_payload(kind=RESULT, job=JOB, worker=0, slot=2, ver=1, chunk=6, count=3,
                            values=sums)
    ident = b.next_ident()
    b.send(SERVER.port, eth_ipv4_udp(SERVER.endpoint, AGGREGATOR, to_switch, ident=ident))
    for w in (W0, W1, W2):
        b.expect_result(w, JOB, 2, 1, sums, count=3, ident=ident, chunk=6)
    b.count("ina_results_multicast", JOB)
    b.comment("Not accepted (bad kind): such a RESULT from anyone but the server (worker 1), for",
              "a slot the switch holds (1), or for a job without a host aggregator (9).")
    for source, job, slot in ((W1, JOB, 2), (SERVER, JOB, 1), (SERVER, PLAIN_JOB, 2)):
        b.next_ident()
        b.send(source.port, eth_ipv4_udp(source.endpoint, AGGREGATOR, ina_payload(
            kind=RESULT, job=job, worker=0, slot=slot, ver=1, chunk=6, count=3, values=sums),
            ident=b.ident))
        b.count("ina_drop_bad_kind", job)

    b.comment("Job 9 has no host aggregator: its slot 1 is a bad slot, dropped, as before.")
    b.contribute(W0, PLAIN_JOB, 1, 0, c)
    b.count("ina_drop_bad_slot", PLAIN_JOB)
    b.comment("Job 13's MAX pair lies outside the registers: a bad slot although the job has a",
              "host aggregator (only data slots beyond the pool fall back); its slot 0 works,",
              "and its slot 1 falls back.")
    b.contribute(W0, EDGE_JOB, 0, 0, c, kind=MAX_CONTRIB)
    b.count("ina_drop_bad_slot", EDGE_JOB)
    ident = b.contribute(W0, EDGE_JOB, 0, 1, c)
    b.expect_result(W0, EDGE_JOB, 0, 1, c, count=1, ident=ident)
    b.count("ina_contributions", EDGE_JOB)
    b.count("ina_results_multicast", EDGE_JOB)
    ident = b.contribute(W0, EDGE_JOB, 1, 0, c)
    forwarded(b, W0, ina_payload(kind=CONTRIB, job=EDGE_JOB, worker=0, slot=1, chunk=1,
                                 values=c), ident)
    b.count("ina_fallbacks", EDGE_JOB)
    return b.finish()
