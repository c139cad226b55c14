"""Aggregation job set-up (`controller.ina_jobs` + `controller.ina_control`) against ina.p4.

The program (k = 4, a pool of 64 cells so exhaustion is quick to reach) runs in the project's
runtime behind its P4Runtime server on 127.0.0.1:0; the controller configures it only over
P4Runtime. Packets built here from docs/protocol.md §1 then go through the switch, so the test
checks that the entries mean what the protocol says, not just that they were written.
"""

from __future__ import annotations

import struct

import pytest

from controller.ina_control import InaJobs
from controller.ina_jobs import (CellPool, InaJob, InaProgram, JobRefused, aggregator_address,
                                 aggregator_mac, plan_job)
from controller.p4info import P4InfoIndex
from topologies.builders import linear, star

from ina_switch_runtime import compile_ina, ina_switch

K, CELLS = 4, 64


@pytest.fixture
def network(tmp_path):
    """(topology, switch runtime, client, server) with ina.p4 pushed over P4Runtime."""
    with ina_switch(tmp_path, K, CELLS) as (switch, client, server):
        yield star(4), switch, client, server


# -- packets (docs/protocol.md §1), built independently of the controller ------------------------

def _mac(text: str) -> bytes:
    return bytes(int(part, 16) for part in text.split(":"))


def _ip(text: str) -> bytes:
    return bytes(int(part) for part in text.split("."))


def _checksum(header: bytes) -> int:
    total = sum(struct.unpack("!10H", header))
    while total > 0xFFFF:
        total = (total & 0xFFFF) + (total >> 16)
    return ~total & 0xFFFF


def contribution(topology, host: str, agg: str, *, job: int, worker: int, slot: int, ver: int,
                 values: list[int], kind: int = 0) -> bytes:
    h = topology.host(host)
    payload = struct.pack("!BBHBBHIHxx", kind, ver, job, worker, 0, slot, 0, 0)
    payload += struct.pack(f"!{len(values)}i", *values)
    udp = struct.pack("!HHHH", 48879, 48879, 8 + len(payload), 0) + payload
    ip = struct.pack("!BBHHHBBH4s4s", 0x45, 0, 20 + len(udp), 1, 0, 64, 17, 0, _ip(h.ip), _ip(agg))
    ip = ip[:10] + struct.pack("!H", _checksum(ip)) + ip[12:]
    return _mac(aggregator_mac(agg)) + _mac(h.mac) + b"\x08\x00" + ip + udp


def result_values(frame: bytes) -> tuple[str, int, list[int]]:
    """(destination IPv4, worker field, values) of a RESULT frame."""
    dst = ".".join(str(b) for b in frame[30:34])
    worker = frame[42 + 4]
    values = list(struct.unpack(f"!{K}i", frame[42 + 16:42 + 16 + 4 * K]))
    return dst, worker, values


# -- sans-I/O parts ------------------------------------------------------------------------------

def test_program_geometry_comes_from_the_p4info(tmp_path) -> None:
    p4info, _ = compile_ina(tmp_path, 8, CELLS)
    program = InaProgram.from_p4info(P4InfoIndex.from_file(p4info))
    assert program == InaProgram(k=8, cells=CELLS, max_workers=64, counter_jobs=1024)


def test_cell_pool_is_first_fit_and_refuses_when_full() -> None:
    pool = CellPool(20)
    assert pool.allocate(1, 6) == 0
    assert pool.allocate(2, 6) == 6
    assert pool.allocate(3, 6) == 12
    pool.release(2)
    assert pool.allocate(4, 4) == 6          # the hole left by job 2
    with pytest.raises(JobRefused, match=r"job 5: refused: cells exhausted: the job needs 6 "
                                         r"contiguous cells, 4 of 20 are free"):
        pool.allocate(5, 6)
    assert pool.allocate(6, 2) == 10         # what is left of the hole still fits


def test_aggregator_address_is_in_the_hosts_subnet() -> None:
    assert aggregator_address(star(3), "s1") == "10.0.0.254"
    assert aggregator_mac("10.0.0.254") == "02:00:0a:00:00:fe"


def test_a_plan_reaches_workers_behind_other_switches() -> None:
    # s1 (h1, h2 on ports 1, 2; s2 on port 4) - s2 (h3, h4 on ports 1, 2; s1 on port 3)
    topology = linear(2, hosts_per_switch=2)
    program = InaProgram(k=K, cells=CELLS, max_workers=32, counter_jobs=1024)
    agg = aggregator_address(topology, "s1")
    job = InaJob(job_id=5, workers=("h1", "h3", "h4"), switch="s1", aggregator_ip=agg, k=K,
                 pool_size=4)
    plan = plan_job(topology, program, job, base=10, mgid=1030)
    assert plan.replicas == ((1, 0), (4, 1), (4, 2))       # two workers share the port to s2
    s1 = {(e.table, tuple(e.match.values())): e for e in plan.entries["s1"]}
    assert s1[("ina_workers", (5, 1))].params == {"port": 4}
    assert s1[("ina_result_addresses", (5, 2))].params == {"dstMac": "02:00:0a:00:00:04",
                                                             "dstAddr": "10.0.0.4"}
    assert s1[("ina_jobs", (agg, 5))].params == {"base": 10, "pool_size": 4, "n": 3,
                                                 "mgid": 1030, "result_count": 3}
    assert [e.table for e in plan.entries["s1"]][-2:] == ["ina_jobs", "ina_aggregator_addresses"]
    (route,) = plan.entries["s2"]                          # s2 only routes to the aggregator
    assert (route.table, route.match, route.params) == (
        "ipv4_lpm", {"hdr.ipv4.dstAddr": (agg, 32)},
        {"dstAddr": aggregator_mac(agg), "port": 3})
    assert (plan.cell(3, 1), plan.max_cell(0)) == (17, 18)


# -- over P4Runtime ------------------------------------------------------------------------------

def test_a_job_is_installed_and_aggregates(network) -> None:
    topology, switch, client, _ = network
    jobs = InaJobs(topology, {"s1": client})
    plan = jobs.install(7, ["h2", "h3", "h4"], "s1", k=K, pool_size=5)
    agg = plan.job.aggregator_ip
    assert (plan.base, plan.mgid, agg) == (0, 1024, "10.0.0.254")
    assert client.read_multicast_group(1024) == [(2, 0), (3, 1), (4, 2)]
    (job_entry,) = client.read_table("ina_jobs")
    assert job_entry.params == {"base": 0, "pool_size": 5, "n": 3, "mgid": 1024,
                                "result_count": 3}
    ports = {v.match["hdr.ina.worker"][0]: v.params["port"]
             for v in client.read_table("ina_workers")}
    assert ports == {0: 2, 1: 3, 2: 4}

    vectors = [[1, -2, 3, 2**30], [10, 20, -30, 5], [100, 0, 0, -7]]
    outputs = []
    with switch.lock:
        for w, host in enumerate(["h2", "h3", "h4"]):
            outputs += switch.receive(w + 2, contribution(topology, host, agg, job=7, worker=w,
                                                          slot=3, ver=1, values=vectors[w]))
    sums = [sum(column) for column in zip(*vectors)]
    assert sorted((port, result_values(frame)) for port, frame in outputs) == [
        (2, ("10.0.0.2", 0, sums)), (3, ("10.0.0.3", 1, sums)), (4, ("10.0.0.4", 2, sums))]
    counters = jobs.counters(7)
    assert (counters["ina_contributions"], counters["ina_results_multicast"]) == (3, 1)
    assert sum(counters.values()) == 4
    cell = jobs.slot_state(7, 3, 1)
    assert (cell.cell, cell.seen, cell.pending, cell.values) == (7, 0b111, 0, tuple(sums))
    assert cell.complete
    assert not jobs.slot_state(7, 3, 0).complete


def test_jobs_get_disjoint_cells_and_a_new_controller_sees_them(network) -> None:
    topology, switch, client, _ = network
    jobs = InaJobs(topology, {"s1": client})
    first = jobs.install(1, ["h1", "h2"], "s1", k=K, pool_size=10)      # 22 cells
    second = jobs.install(2, ["h3", "h4"], "s1", k=K, pool_size=10)
    assert (first.base, second.base) == (0, 22)
    assert first.mgid != second.mgid
    restarted = InaJobs(topology, {"s1": client})
    third = restarted.install(3, ["h1", "h4"], "s1", k=K, pool_size=4)   # 10 cells
    assert third.base == 44 and third.mgid not in (first.mgid, second.mgid)
    assert len(client.read_table("ina_aggregator_addresses")) == 1
    with pytest.raises(JobRefused, match="job 2: refused: a job with this id already runs"):
        restarted.install(2, ["h1"], "s1", k=K, pool_size=1)
    jobs.remove(1)
    assert [v.match["hdr.ina.job"][0] for v in client.read_table("ina_jobs")] == [2, 3]
    fourth = jobs.install(4, ["h2"], "s1", k=K, pool_size=10)
    assert fourth.base == 0                                            # job 1's cells again


@pytest.mark.parametrize("ask, reason", [
    (dict(k=8, pool_size=4), "k mismatch: the job's hosts send 8 values per packet, the program "
                             "was compiled with INA_K=4"),
    (dict(k=K, pool_size=40), "a pool of 40 slots needs 82 cells, the program has 64"),
    (dict(k=K, pool_size=4, workers=["h1", "h1"]), "a host is listed twice"),
    (dict(k=K, pool_size=4, workers=["h1", "s1"]), "worker 's1' is not a host"),
    (dict(k=K, pool_size=4, job_id=5000), r"job id must be in 0..1023"),
    (dict(k=K, pool_size=0), "pool size 0 outside 1..65535"),
])
def test_a_job_that_does_not_fit_is_refused_and_changes_nothing(network, ask, reason) -> None:
    topology, _, client, _ = network
    jobs = InaJobs(topology, {"s1": client})
    ask = {"job_id": 9, "workers": ["h1", "h2"], **ask}
    with pytest.raises(JobRefused, match=reason):
        jobs.install(ask.pop("job_id"), ask.pop("workers"), "s1", **ask)
    for table in ("ina_jobs", "ina_workers", "ina_aggregator_addresses"):
        assert client.read_table(table) == []


def test_too_many_workers_and_exhausted_cells_are_refused(network) -> None:
    _, _, client, _ = network
    big = star(65)
    jobs = InaJobs(big, {"s1": client})
    with pytest.raises(JobRefused, match="65 workers; the program's worker bitmap holds 1..64"):
        jobs.install(1, [h.name for h in big.hosts], "s1", k=K, pool_size=2)
    jobs.install(1, ["h1", "h2"], "s1", k=K, pool_size=20)                # 42 of 64 cells
    with pytest.raises(JobRefused, match="cells exhausted: the job needs 24 contiguous cells, "
                                         "22 of 64 are free"):
        jobs.install(2, ["h3", "h4"], "s1", k=K, pool_size=11)
    assert [v.match["hdr.ina.job"][0] for v in client.read_table("ina_jobs")] == [1]
    assert len(client.read_table("ina_workers")) == 2


def test_a_failed_write_is_rolled_back(network) -> None:
    topology, _, client, _ = network
    # an entry already present makes the plan's write fail half-way
    client.add_entry("ina_workers", {"hdr.ina.job": 3, "hdr.ina.worker": 1}, "ina_worker_port",
                     {"port": 9})
    jobs = InaJobs(topology, {"s1": client})
    with pytest.raises(Exception, match="ALREADY_EXISTS"):
        jobs.install(3, ["h1", "h2"], "s1", k=K, pool_size=2)
    assert client.read_table("ina_result_addresses") == []
    assert [v.params["port"] for v in client.read_table("ina_workers")] == [9]
    assert client.read_table("ina_jobs") == []
    assert jobs.install(4, ["h1", "h2"], "s1", k=K, pool_size=2).base == 0
