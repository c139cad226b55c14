"""Several tree jobs at once on shared switches (ATP-style sharing): each gets its own cells and
multicast group on every switch of its tree, both finish correct, and a job that does not fit is
refused before anything runs."""

from __future__ import annotations

import pytest

from controller.trees import choose_root
from inaemu.sim import InaOptions, SimError, SimJob, simulate
from topologies.builders import fat_tree, leaf_spine

SIZE, K = 1024, 8
CHUNKS = SIZE // 4 // K


def interleaved_jobs(topology, count: int) -> list[SimJob]:
    """Host i goes to job i mod count, so every edge switch serves every job."""
    hosts = [h.name for h in topology.hosts]
    jobs = []
    for j in range(count):
        workers = tuple(hosts[j::count])
        jobs.append(SimJob(10 + j, workers, choose_root(topology, workers), hierarchical=True))
    return jobs


def check_disjoint(trees: dict) -> None:
    """On every switch, the jobs' cell ranges do not overlap and their groups differ."""
    per_switch: dict[str, list[tuple[int, int, int]]] = {}
    for job, nodes in trees.items():
        for switch, node in nodes.items():
            per_switch.setdefault(switch, []).append((node["base"], node["cells"], node["mgid"]))
    shared = 0
    for switch, ranges in per_switch.items():
        ranges.sort()
        shared += len(ranges) > 1
        for (base, size, _), (next_base, _, _) in zip(ranges, ranges[1:]):
            assert base + size <= next_base, switch
        assert len({mgid for _, _, mgid in ranges}) == len(ranges), switch
    assert shared > 0           # the test is about shared switches


@pytest.mark.parametrize("topology, loss", [(fat_tree(4), 0), (leaf_spine(2, 2, 4), 5)],
                         ids=["fattree-0", "leafspine-5"])
def test_two_jobs_on_the_same_switches_are_both_correct(topology, loss) -> None:
    jobs = interleaved_jobs(topology, 2)
    result = simulate(topology, jobs, algo="ina", size_bytes=SIZE, elems_k=K, loss=loss, bw=100,
                      seed=1)
    assert sorted(result.trees) == [10, 11]
    assert {r.job for r in result.records} == {10, 11}
    for record in result.records:
        assert record.error is None and record.correct, record
    check_disjoint(result.trees)
    # both trees span the same switches here; each job's 2·pool+2 cells sit side by side
    assert set(result.trees[10]) == set(result.trees[11])
    if loss == 0:
        # a link shared by both trees carries one partial aggregate per slot for each job
        link = next(l for l in result.links if l["link"].startswith("a0_0:3->c0"))
        assert link["delivered_packets"] == 2 * (CHUNKS + 1)


def test_four_jobs_share_a_fat_tree() -> None:
    topology = fat_tree(4)
    result = simulate(topology, interleaved_jobs(topology, 4), algo="ina", size_bytes=SIZE,
                      elems_k=K, bw=100)
    assert result.correct and len(result.records) == 16
    check_disjoint(result.trees)
    assert len({r.job for r in result.records}) == 4


def test_a_job_that_does_not_fit_the_cells_is_refused() -> None:
    topology = leaf_spine(2, 2, 2)
    # 2 jobs × (2·600 + 2) cells > 2048 cells on the shared switches
    with pytest.raises(SimError, match=r"set-up: job 11: refused: on \w+: cells exhausted"):
        simulate(topology, interleaved_jobs(topology, 2), algo="ina", size_bytes=SIZE,
                 elems_k=K, ina=InaOptions(pool_size=600))


def test_the_same_job_id_twice_is_refused() -> None:
    topology = leaf_spine(2, 2, 2)
    jobs = [SimJob(5, ("h1", "h3"), "sp1", hierarchical=True),
            SimJob(5, ("h2", "h4"), "sp1", hierarchical=True)]
    with pytest.raises(SimError, match="job 5: refused: a job with this id already runs"):
        simulate(topology, jobs, algo="ina", size_bytes=SIZE, elems_k=K)
