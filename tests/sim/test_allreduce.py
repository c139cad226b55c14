"""All-reduce on the simulated network: p4src/ina.p4 in the runtime, configured over P4Runtime
by the controller, the hosts' own INA and ring sessions; results checked against the float64 sum
within the hosts' bounds (hosts/quantize.py for INA, hosts/ring_session.py for the ring)."""

from __future__ import annotations

import numpy as np
import pytest

from inaemu.sim import SimError, SimJob, SimTimeLimit, SimUnfinished, gradient, simulate
from inaemu.sim.ina_worker import InaWorker
from topologies.builders import leaf_spine, linear, star

SIZE = 4096        # bytes per worker: 1024 float32
K = 8


def one_job(topology, switch=None) -> list[SimJob]:
    return [SimJob(1, tuple(h.name for h in topology.hosts), switch)]


def check_correct(result, n: int, algo: str, seed: int = 0) -> None:
    assert result.stop == "done"
    assert len(result.records) == n
    exact = np.sum([gradient(seed, w, SIZE // 4).astype(np.float64) for w in range(n)], axis=0)
    for record in result.records:
        assert record.error is None, record.error
        assert record.algo == algo and record.state == "done"
        assert record.correct, (record.host, record.max_abs_err, record.err_bound)
        assert record.max_abs_err <= record.err_bound
        # independently of the record's own check: the result is the sum, within the bound
        assert np.max(np.abs(record.result.astype(np.float64) - exact)) <= record.err_bound
        assert record.time_s > 0 and record.bytes_sent > SIZE and record.bytes_received > SIZE


@pytest.mark.parametrize("loss", [0, 1, 10])
@pytest.mark.parametrize("n", [2, 4, 8])
def test_ina_allreduce_on_a_star(n: int, loss: float) -> None:
    topology = star(n)
    result = simulate(topology, one_job(topology), algo="ina", size_bytes=SIZE, elems_k=K,
                      loss=loss, bw=100)
    check_correct(result, n, "ina")
    chunks = SIZE // 4 // K
    if loss == 0:
        assert all(r.retransmissions == 0 for r in result.records)
        # one MAX_CONTRIB and one CONTRIB per chunk from each worker, one RESULT back for each
        assert all(link["delivered_packets"] == chunks + 1 for link in result.links)
    if loss == 10:
        assert sum(link["lost_packets"] for link in result.links) > 0
        assert sum(r.retransmissions for r in result.records) > 0


@pytest.mark.parametrize("loss", [0, 1, 10])
@pytest.mark.parametrize("n", [2, 4, 8])
def test_ring_allreduce_on_a_star(n: int, loss: float) -> None:
    topology = star(n)
    result = simulate(topology, one_job(topology), algo="ring", size_bytes=SIZE, elems_k=K,
                      loss=loss, bw=100)
    check_correct(result, n, "ring")
    if loss == 0:
        assert all(r.retransmissions == 0 for r in result.records)
        # each rank sends 2(n-1) segments of about SIZE/n bytes, plus headers and ACKs
        for record in result.records:
            assert record.bytes_sent >= 2 * (n - 1) * SIZE / n


def test_workers_on_another_switch_reach_the_aggregator_through_routes() -> None:
    topology = linear(2, hosts_per_switch=2)
    result = simulate(topology, one_job(topology, switch="s2"), algo="ina", size_bytes=SIZE,
                      elems_k=K, loss=1)
    check_correct(result, 4, "ina")
    inter = [link for link in result.links if link["src"].startswith("s1:")
             and link["dst"].startswith("s2:")]
    assert len(inter) == 1 and inter[0]["delivered_packets"] >= 2 * (SIZE // 4 // K + 1)


@pytest.mark.parametrize("algo", ["ina", "ring"])
def test_a_leaf_spine_fabric_with_loss(algo: str) -> None:
    topology = leaf_spine(2, 2, 4)
    result = simulate(topology, one_job(topology), algo=algo, size_bytes=SIZE, elems_k=K,
                      loss=1, bw=100, seed=5)
    check_correct(result, 8, algo, seed=5)
    spine_links = [link for link in result.links if link["src"].startswith("sp")]
    assert sum(link["delivered_packets"] for link in spine_links) > 0   # traffic crossed spines


def test_two_jobs_share_a_switch() -> None:
    topology = star(5)
    jobs = [SimJob(1, ("h1", "h2", "h3")), SimJob(2, ("h4", "h5"))]
    result = simulate(topology, jobs, algo="ina", size_bytes=SIZE, elems_k=K, loss=1, bw=100)
    assert result.correct and len(result.records) == 5
    assert [(r.job, r.worker, r.host) for r in result.records] == [
        (1, 0, "h1"), (1, 1, "h2"), (1, 2, "h3"), (2, 0, "h4"), (2, 1, "h5")]
    sums = {job: np.sum([gradient(0, w, SIZE // 4).astype(np.float64) for w in range(n)], axis=0)
            for job, n in ((1, 3), (2, 2))}
    for record in result.records:
        error = np.abs(record.result.astype(np.float64) - sums[record.job])
        assert np.max(error) <= record.err_bound


def test_time_follows_the_bandwidth() -> None:
    topology = star(2)
    slow = simulate(topology, one_job(topology), algo="ring", size_bytes=65536, bw=10)
    fast = simulate(topology, one_job(topology), algo="ring", size_bytes=65536, bw=1000)
    for record in slow.records:      # a host cannot finish before its bytes fit through 10 Mbit/s
        assert record.time_s >= record.bytes_sent * 8 / 10e6
    assert max(r.time_s for r in slow.records) > 5 * max(r.time_s for r in fast.records)


@pytest.mark.parametrize("algo", ["ina", "ring"])
def test_a_dead_worker_ends_the_others_with_a_clear_error(algo: str) -> None:
    topology = star(4)
    result = simulate(topology, one_job(topology), algo=algo, size_bytes=SIZE, elems_k=K,
                      bw=100, deaths={"h3": 0.0003}, time_limit=120)
    by_host = {r.host: r for r in result.records}
    assert by_host["h3"].state == "killed" and "h3 was killed" in by_host["h3"].error
    others = [by_host[h] for h in ("h1", "h2", "h4")]
    assert all(not r.correct and r.time_s is None and r.result is None for r in others)
    if algo == "ina":
        assert all("job 1: no result for" in r.error and "unreachable" in r.error
                   for r in others)
    else:
        assert "right neighbour stopped acknowledging" in by_host["h2"].error
        assert "nothing from the left neighbour" in by_host["h4"].error
    assert not result.correct


def test_the_time_limit_names_the_unfinished_workers() -> None:
    topology = star(2)
    with pytest.raises(SimTimeLimit, match=r"2 workers unfinished: h1 \(job 1 worker 0, state "
                                           r"(max_round|data)\), h2") as caught:
        simulate(topology, one_job(topology), algo="ina", size_bytes=SIZE, elems_k=K, bw=1,
                 time_limit=0.001)
    assert caught.value.result.stop == "time limit"


def test_a_network_with_nothing_left_to_do_reports_who_waits(monkeypatch) -> None:
    topology = star(2)
    monkeypatch.setattr(InaWorker, "start", lambda self: None)    # never sends, never arms
    with pytest.raises(SimUnfinished, match=r"nothing left to happen at 0.000000 s virtual with "
                                            r"2 workers unfinished: h1 \(job 1 worker 0, "
                                            r"state idle\)") as caught:
        simulate(topology, one_job(topology), algo="ina", size_bytes=SIZE, elems_k=K)
    assert not isinstance(caught.value, SimTimeLimit) and caught.value.result.stop == "idle"


@pytest.mark.parametrize("kwargs,message", [
    ({"algo": "allgather"}, "algo must be one of ina, ring"),
    ({"size_bytes": 2}, "size_bytes must be an integer >= 4"),
    ({"elems_k": 6}, "elems_k must be a multiple of 4 from 4 to 364"),
    ({"jobs": [SimJob(5000, ("h1", "h2"))]}, "set-up: job 5000: refused: job id must be in"),
    ({"jobs": [SimJob(1, ("h1", "h2"), "s7")]}, "job 1: no switch named 's7'"),
    ({"jobs": [SimJob(1, ("h1", "h9"))]}, "job 1: no node named 'h9'"),
    ({"jobs": [SimJob(1, ("h1",)), SimJob(2, ("h1", "h2"))]}, "a host is a worker of two jobs"),
    ({"deaths": {"h7": 1.0}}, "deaths: no host named 'h7'"),
    ({"deaths": {"h1": -1}}, "deaths: h1 must die at a time >= 0 s"),
    ({"loss": 101}, "loss must be a percentage 0..100"),
    ({"bw": 0}, "bw must be a positive number of Mbit/s"),
    ({"time_limit": 0}, "time_limit must be positive"),
])
def test_bad_arguments_raise_sim_error(kwargs: dict, message: str) -> None:
    topology = star(2)
    arguments = {"algo": "ina", "size_bytes": SIZE, "elems_k": K, "jobs": one_job(topology)}
    arguments.update(kwargs)
    jobs = arguments.pop("jobs")
    with pytest.raises(SimError, match=message):
        simulate(topology, jobs, **arguments)


def test_a_long_simulation_says_how_far_it_has_got(monkeypatch) -> None:
    """Progress lines (virtual time, workers running, frames/s), and the same result as
    without them: the hook only looks."""
    import inaemu.sim.driver as driver
    topology = star(4)
    quiet = simulate(topology, one_job(topology), algo="ina", size_bytes=64 * 1024, elems_k=K,
                     bw=100)
    monkeypatch.setattr(driver, "PROGRESS_EVERY_S", 0.0)
    lines: list[str] = []
    said = simulate(topology, one_job(topology), algo="ina", size_bytes=64 * 1024, elems_k=K,
                    bw=100, progress=lines.append)
    reached = [line for line in lines if "ms virtual," in line]
    assert reached and "workers running" in reached[0] and "frames/s" in reached[0]
    assert said.virtual_s == quiet.virtual_s and said.frames == quiet.frames
    assert all(np.array_equal(a.result, b.result) for a, b in zip(quiet.records, said.records))
