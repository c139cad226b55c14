"""Jobs with a host aggregator (docs/fallback.md): the controller's planning and refusals, and,
over P4Runtime against ina.p4 in the project's runtime, best-effort placement when the cells
run short and what the written entries make the switch do with a packet."""

from __future__ import annotations

import struct

import pytest

from controller.ina_control import InaJobs
from controller.ina_jobs import (CellPool, FallbackServer, InaJob, InaProgram, JobRefused,
                                 aggregator_address, aggregator_mac, plan_job)
from topologies.builders import star

from ina_switch_runtime import ina_switch

K, CELLS = 4, 64
PROGRAM = InaProgram(k=K, cells=CELLS, max_workers=64, counter_jobs=1024)


@pytest.fixture
def network(tmp_path):
    """(topology, switch runtime, client) with ina.p4 (k = 4, 64 cells) pushed over P4Runtime."""
    with ina_switch(tmp_path, K, CELLS) as (switch, client, _server):
        yield star(5), switch, client


def contribution(topology, host: str, agg: str, *, job: int, worker: int, slot: int) -> bytes:
    """A CONTRIB frame (docs/protocol.md §1) from `host` to the aggregator address."""
    h = topology.host(host)
    payload = struct.pack("!BBHBBHIHxx", 0, 0, job, worker, 0, slot, slot, 0)
    payload += struct.pack(f"!{K}i", *range(K))
    udp = struct.pack("!HHHH", 48879, 48879, 8 + len(payload), 0) + payload
    ip = struct.pack("!BBHHHBBH4s4s", 0x45, 0, 20 + len(udp), 1, 0, 64, 17, 0,
                     bytes(map(int, h.ip.split("."))), bytes(map(int, agg.split("."))))
    total = sum(struct.unpack("!10H", ip))
    while total > 0xFFFF:
        total = (total & 0xFFFF) + (total >> 16)
    ip = ip[:10] + struct.pack("!H", ~total & 0xFFFF) + ip[12:]
    mac = bytes(int(x, 16) for x in aggregator_mac(agg).split(":"))
    return mac + bytes(int(x, 16) for x in h.mac.split(":")) + b"\x08\x00" + ip + udp


def test_largest_free_run_of_cells() -> None:
    pool = CellPool(30)
    assert pool.largest_free() == 30
    pool.allocate(1, 6)
    pool.allocate(2, 10)
    pool.allocate(3, 4)          # 0..5, 6..15, 16..19; 10 free at the end
    pool.release(2)              # a hole of 10 at 6..15
    assert pool.largest_free() == 10
    pool.allocate(4, 3)          # 6..8: the hole shrinks to 7
    assert pool.largest_free() == 10     # the tail 20..29


def job(**changes) -> InaJob:
    fields = dict(job_id=3, workers=("h1", "h2"), switch="s1", aggregator_ip="10.0.0.254", k=K,
                  pool_size=4)
    fields.update(changes)
    return InaJob(**fields)


def test_plan_writes_the_fallback_entry_before_the_job_entry() -> None:
    plan = plan_job(star(5), PROGRAM, job(worker_pool=16, fallback=FallbackServer("10.0.0.5")),
                    base=0, mgid=1024)
    tables = [e.table for e in plan.entries["s1"]]
    assert tables.index("ina_fallback") < tables.index("ina_jobs")
    entry = plan.entries["s1"][tables.index("ina_fallback")]
    assert (entry.match, entry.action, entry.params) == (
        {"hdr.ina.job": 3}, "ina_fall_back", {"server": "10.0.0.5", "port": 48880})
    assert plan.job.cells == 10 and plan.job.worker_slots == 16
    assert "ina_fallback" not in [e.table for e in plan_job(star(5), PROGRAM, job(), base=0,
                                                             mgid=1024).entries["s1"]]


@pytest.mark.parametrize("changes, reason", [
    (dict(worker_pool=8), r"the workers use 8 slots, the switch holds 4: slots 4..7 would be "
                          r"dropped as bad slots; give the job a host aggregator"),
    (dict(worker_pool=2), r"the workers' pool 2 must be 4..65535"),
    (dict(worker_pool=8, fallback=FallbackServer("10.0.0.99")),
     r"host aggregator 10.0.0.99 is not a host of topology"),
    (dict(worker_pool=8, fallback=FallbackServer("10.0.0.5", 0)), r"port 0 outside 1..65535"),
])
def test_refusals(changes, reason) -> None:
    with pytest.raises(JobRefused, match=reason):
        plan_job(star(5), PROGRAM, job(**changes), base=0, mgid=1024)


def test_best_effort_placement_and_forwarding_over_p4runtime(network) -> None:
    topology, switch, client = network
    jobs = InaJobs(topology, {"s1": client})
    h5 = topology.host("h5")
    client.add_entry("ipv4_lpm", {"hdr.ipv4.dstAddr": (h5.ip, 32)}, "ipv4_forward",
                     {"dstAddr": h5.mac, "port": 5})
    server = FallbackServer(h5.ip)
    jobs.install(1, ["h1", "h2"], "s1", k=K, pool_size=20)                  # 42 of 64 cells
    plan = jobs.install(2, ["h3", "h4"], "s1", k=K, pool_size=16, fallback=server)
    assert (plan.base, plan.job.pool_size, plan.job.worker_slots) == (42, 10, 16)   # 22 cells
    (entry,) = client.read_table("ina_fallback")
    assert entry.params == {"server": 0x0A000005, "port": 48880}
    agg = aggregator_address(topology, "s1")
    with switch.lock:
        kept = switch.receive(3, contribution(topology, "h3", agg, job=2, worker=0, slot=9))
        sent = switch.receive(3, contribution(topology, "h3", agg, job=2, worker=0, slot=10))
    assert kept == []                         # slot 9 is the switch's: waiting for h4
    ((port, frame),) = sent
    assert port == 5                          # h5's port: the host aggregator
    assert frame[30:34] == bytes([10, 0, 0, 5]) and frame[36:38] == struct.pack("!H", 48880)
    counters = jobs.counters(2)
    assert (counters["ina_fallbacks"], counters["ina_contributions"]) == (1, 1)
    with pytest.raises(JobRefused, match="not even one slot and the MAX pair"):
        jobs.install(3, ["h1", "h5"], "s1", k=K, pool_size=8, fallback=server)
    with pytest.raises(JobRefused, match="would be dropped as bad slots"):
        jobs.install(3, ["h1", "h5"], "s1", k=K, pool_size=8, switch_slots=1)
    jobs.remove(2)
    assert client.read_table("ina_fallback") == []
