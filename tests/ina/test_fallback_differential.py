"""The host aggregator (hosts/fallback.py) does what ina.p4 does: the same random packets, sent to
ina.p4 in inaemu's runtime and to a `FallbackAggregator` of the same slots, get the same replies
to the same workers, byte for byte (values, exponent, format and overflow bits, count).

Random streams mix contributions, retransmissions and queries over a few cells, all three lane
formats, block exponents and overflowing packed sums, so every branch of the switch's algorithm
(§3, §3.1, docs/formats.md) is compared, not just the ones a worker exercises."""

from __future__ import annotations

import random
import struct

import pytest

from hosts.fallback import VIA_SWITCH, FallbackAggregator
from p4switch.compiler import compile_file
from p4switch.runtime import ExactKey, LpmKey, Switch

from . import stfgen
from .packets import Endpoint, eth_ipv4_udp, ip

K, JOB, N, SLOTS = 4, 6, 3, 3
AGGREGATOR = Endpoint(0x000000000100, ip("10.0.0.254"))
WORKERS = [Endpoint(0x080000000000 | (w + 1), ip(f"10.0.{w + 1}.{w + 1}")) for w in range(N)]
SERVER, SERVER_PORT, UDP_PORT = Endpoint(0x080000000444, ip("10.0.4.4")), 4, 48880


@pytest.fixture(scope="module")
def config() -> dict:
    return compile_file(str(stfgen.P4SRC / "ina.p4"), defines={"INA_K": str(K)}).bmv2


def switch_for(config: dict, pool: int = SLOTS) -> Switch:
    """The job with `pool` slots in the switch; with fewer than SLOTS, the rest on the host
    aggregator SERVER (port 4)."""
    sw = Switch(config)
    sw.table_add("ina_aggregator_addresses", [ExactKey(AGGREGATOR.addr)], "ina_aggregate_here")
    sw.table_add("ina_jobs", [ExactKey(AGGREGATOR.addr), ExactKey(JOB)], "ina_root_job",
                 (0, pool, N, JOB, N))
    if pool < SLOTS:
        sw.table_add("ina_fallback", [ExactKey(JOB)], "ina_fall_back", (SERVER.addr, UDP_PORT))
        sw.table_add("ipv4_lpm", [LpmKey(SERVER.addr, 32)], "ipv4_forward",
                     (SERVER.mac, SERVER_PORT))
    for w, host in enumerate(WORKERS):
        sw.table_add("ina_workers", [ExactKey(JOB), ExactKey(w)], "ina_worker_port", (w + 1,))
        sw.table_add("ina_result_addresses", [ExactKey(JOB), ExactKey(w)], "ina_address_result",
                     (host.mac, host.addr))
    sw.mc_group_set(JOB, [(w + 1, w) for w in range(N)])
    return sw


def random_packet(rng: random.Random, fmt: int) -> tuple[int, bytes]:
    """(worker, payload): a contribution (maybe a retransmission) or a QUERY."""
    worker = rng.randrange(N)
    kind = 4 if rng.random() < 0.25 else 0
    flags = rng.randrange(2) | (2 if rng.random() < 0.3 else 0) | fmt
    if kind == 0 and rng.random() < 0.1:
        flags |= 0x10                  # an overflow flag already set (a child's partial sum)
    header = struct.pack("!BBHBBHIHH", kind, flags, JOB, worker, rng.randrange(256),
                         rng.randrange(SLOTS), rng.randrange(1 << 32), 0, 0)
    if kind == 4:
        return worker, header
    # small values often (sums that fit), any 32 bits sometimes (overflowing packed sums)
    lanes = [rng.randrange(1 << 32) if rng.random() < 0.3 else rng.randrange(1 << 12)
             for _ in range(K)]
    return worker, header + struct.pack(f"!{K}I", *lanes)


@pytest.mark.parametrize("seed", range(6))
def test_aggregator_replies_as_the_switch_does(config, seed: int) -> None:
    rng = random.Random(seed)
    sw = switch_for(config)
    agg = FallbackAggregator(job=JOB, n=N, k=K, first_slot=0, pool_size=SLOTS)
    fmt = (0x00, 0x04, 0x08)[seed % 3]
    replies = 0
    for ident in range(400):
        worker, payload = random_packet(rng, fmt if rng.random() < 0.9 else rng.choice(
            (0x00, 0x04, 0x08)))
        frame = eth_ipv4_udp(WORKERS[worker], AGGREGATOR, payload, ident=ident)
        from_switch = sorted((port - 1, out[42:]) for port, out in sw.receive(worker + 1, frame))
        from_host = sorted(agg.receive(payload))
        assert from_host == from_switch, f"packet {ident}: {payload.hex()}"
        replies += len(from_host)
    assert replies > 100
    assert agg.counters.results_multicast > 10 and agg.counters.nacks > 0
    assert agg.counters.duplicates > 0 and agg.counters.results_unicast > 0


@pytest.mark.parametrize("seed", range(4))
def test_switch_and_host_aggregator_together_reply_as_the_switch_alone(config, seed: int) -> None:
    """ina.p4 holding slot 0 and the host aggregator slots 1..2 (its sums multicast through the
    switch, `via_switch`) give every worker the same payloads as ina.p4 holding all three."""
    rng = random.Random(100 + seed)
    alone, split = switch_for(config), switch_for(config, pool=1)
    host = FallbackAggregator(job=JOB, n=N, k=K, first_slot=1, pool_size=SLOTS, via_switch=True)
    fmt = (0x00, 0x04, 0x08)[seed % 3]
    for ident in range(300):
        worker, payload = random_packet(rng, fmt)
        frame = eth_ipv4_udp(WORKERS[worker], AGGREGATOR, payload, ident=ident)
        expected = sorted((port - 1, out[42:]) for port, out in alone.receive(worker + 1, frame))
        got = []
        for port, out in split.receive(worker + 1, frame):
            if port != SERVER_PORT:
                got.append((port - 1, out[42:]))
                continue
            for target, reply in host.receive(out[42:]):
                if target != VIA_SWITCH:
                    got.append((target, reply))          # sent by the host to the worker
                    continue
                back = eth_ipv4_udp(SERVER, AGGREGATOR, reply, ident=ident)
                got += [(p - 1, o[42:]) for p, o in split.receive(SERVER_PORT, back)]
        assert sorted(got) == expected, f"packet {ident}: {payload.hex()}"
    assert host.counters.results_multicast > 10 and host.counters.nacks > 0
    assert split.counter_read("ina_fallbacks", JOB)[0] > 100
