"""Hashed sharing in a Mininet scenario (docs/scenarios.md, docs/protocol.md §3.3): jobs
arrive at different times on a leaf-spine whose switches run throughout, each placed and
removed over P4Runtime with its host aggregators (`hosts.fallback_udp`, one per tree switch,
or one at a single switch) started with it and stopped when it ends; at 1 % loss every sum is
exact, the host aggregators took chunks, every chunk was completed once (at the root switch or
its host aggregator), and once the last job has ended no cell of any shared pool is owned, no
job's entries are left, and no process or interface of the run remains."""

from __future__ import annotations

import pytest

from controller.ina_jobs import OWNER_REGISTER
from inaemu.scenario import Experiment
from inaemu.scenario import model as m
from inaemu.scenario.fabric_control import FabricControl
from inaemu.scenario.mininet_engine import check_mininet_runnable
from tests.leftovers import leftover_interfaces, leftover_processes

SWITCHES = ("l1", "l2", "sp1", "sp2")


def _recorded_run_dirs(monkeypatch) -> set[str]:
    """The run directories of the scenario's host aggregators, filled as they start: every
    process of the run names its own (`--stats`, `--config`). Tests outside Mininet run
    meanwhile on the other worker and start a `hosts.fallback_udp` of their own, so a check
    for leftovers matches only the run's."""
    from inaemu.scenario import mininet_aggregators
    dirs: set[str] = set()
    start = mininet_aggregators.start_aggregator

    def recording(net, spec, log, **kwargs):
        dirs.add(str(spec.stats.parent))
        return start(net, spec, log, **kwargs)
    monkeypatch.setattr(mininet_aggregators, "start_aggregator", recording)
    return dirs


def _left_of_run(dirs: set[str], *modules: str) -> list[str]:
    """Processes of one of `modules` whose command line names one of the run's directories."""
    assert dirs, "the run started no host aggregator"

    def ours(argv: list[str]) -> bool:
        line = " ".join(argv)
        return any(module in line for module in modules) and any(d in line for d in dirs)
    return leftover_processes(ours)
SIZE = 16 * 1024           # float32 bytes per worker per call
K = 32
ITERATIONS = 2


def four_jobs(aggregation: str) -> Experiment:
    """4 jobs of 3 workers over both leaves on shared pools of 5 pairs (16 slots per job:
    collisions are certain): three arriving 0.3 s apart, the last 2 s after the first ends."""
    exp = Experiment.leaf_spine(leaves=2, spines=2, hosts_per_leaf=6, loss_percent=1)
    exp.set_options(sharing="hashed", shared_pairs=5, pool_size=16, elems_k=K, seed=3,
                    aggregation=aggregation, time_limit=240)
    for index, workers in enumerate((("h1", "h2", "h7"), ("h3", "h8", "h9"),
                                     ("h4", "h10", "h11"), ("h5", "h6", "h12"))):
        exp.add_job(f"j{index}", algo="ina", workers=workers, size=SIZE,
                    iterations=ITERATIONS, start=2.0 if index == 3 else 0.3 * index,
                    after="j0" if index == 3 else None)
    return exp


@pytest.mark.root
@pytest.mark.parametrize("aggregation", ["tree", "single"])
def test_hashed_jobs_come_and_go_on_mininet(aggregation, monkeypatch) -> None:
    left: dict[str, tuple] = {}
    close = FabricControl.close

    def close_after_reading(control: FabricControl) -> None:
        """What the switches hold once every job has ended, read before the sessions go."""
        for name, client in control.clients_now().items():
            owned = [cell for cell, tag in client.read_register(OWNER_REGISTER).items() if tag]
            left[name] = (owned, list(client.read_table("ina_sharing")),
                          list(client.read_table("ina_jobs")))
        close(control)

    monkeypatch.setattr(FabricControl, "close", close_after_reading)
    run_dirs = _recorded_run_dirs(monkeypatch)
    lines: list[str] = []
    result = four_jobs(aggregation).run(net="mininet", progress=lines.append)

    chunks_per_call = -(-SIZE // 4 // K) + 1               # data chunks + the MAX round
    arrivals = []
    for job in result.jobs:
        assert job.correct and job.error is None, (job.name, job.error)
        assert job.iterations_done == ITERATIONS
        assert len(job.placements) == 1
        assert job.jct_s is not None and job.jct_s > 0
        assert job.host_chunks > 0, job            # the hashed path was taken
        assert job.switch_chunks > 0, job          # and the switch's pool too
        assert job.switch_chunks + job.host_chunks == ITERATIONS * chunks_per_call, job
        assert 0 < job.host_share < 1
        arrivals.append(job.arrived_s)
    assert arrivals == sorted(arrivals) and arrivals[-1] - arrivals[0] >= 2
    # j0's host aggregators stopped when it ended, not with the scenario: before j3 arrived
    stopped = next(i for i, line in enumerate(lines)
                   if "job j0: the host aggregators of P4 job 1 have stopped" in line)
    assert stopped < next(i for i, line in enumerate(lines) if "job j3 arrives" in line)
    assert result.correct
    assert sorted(left) == sorted(SWITCHES)
    for name, (owned, sharing, jobs) in left.items():
        assert (owned, sharing, jobs) == ([], [], []), name
    assert _left_of_run(run_dirs, "hosts.fallback_udp", "hosts.scenario_agent") == []
    assert leftover_interfaces([f"{s}-eth" for s in SWITCHES]) == []
    assert leftover_processes(lambda argv: any(a.startswith("mininet:") for a in argv)) == []


def test_mininet_takes_hashed_sharing_and_still_refuses_what_it_cannot_do() -> None:
    exp = four_jobs("tree")
    check_mininet_runnable(exp.scenario())           # hashed: no longer refused
    exp.set_options(host_pps=1e5)
    with pytest.raises(m.ScenarioError, match="options.host_pps.*--net sim"):
        check_mininet_runnable(exp.scenario())
    exp.set_options(host_pps=None)
    exp.link_change("h1", "l1", at=0.1, loss_percent=2)
    with pytest.raises(m.ScenarioError, match="loss and delay cannot change"):
        check_mininet_runnable(exp.scenario())
    with pytest.raises(m.ScenarioError, match="options.sharing.*static or hashed"):
        exp.set_options(sharing="atp")


@pytest.mark.root
def test_a_hashed_tree_job_is_replanned_with_new_host_aggregators_when_its_root_crashes(
        monkeypatch):
    """The root spine dies under a hashed tree job: its host aggregators are stopped, the job
    is placed again on the other spine (a fresh P4 job id) with new ones, and its sums are
    exact; the crashed root's counters are gone, so its switch chunks are unknown."""
    from controller.trees import choose_root
    exp = Experiment.leaf_spine(leaves=2, spines=2, hosts_per_leaf=2, loss_percent=1)
    exp.set_options(sharing="hashed", shared_pairs=5, pool_size=16, elems_k=K, seed=4,
                    time_limit=240)
    workers = ("h1", "h2", "h3", "h4")
    # 12 x 0.2 s of compute: still running at the crash, whenever its first call started
    exp.add_job("train", algo="ina", workers=workers, size=SIZE, iterations=12,
                compute="0.2s")
    root = choose_root(exp.network.topology(), workers, 1)     # the first placement's root
    exp.switch_crash(root, at="2s")
    run_dirs = _recorded_run_dirs(monkeypatch)
    lines: list[str] = []
    result = exp.run(net="mininet", progress=lines.append)
    job = result.jobs[0]
    assert result.correct, job.error
    assert [p["p4_job"] for p in job.placements] == [1, 2]
    assert job.placements[1]["switches"][0] != root
    stopped = [i for i, line in enumerate(lines) if "the host aggregators of P4 job 1 have "
               "stopped" in line]
    replanned = [i for i, line in enumerate(lines) if "re-planned" in line]
    assert stopped and replanned, lines
    assert job.host_chunks > 0
    assert job.switch_chunks is None and job.host_share is None
    assert _left_of_run(run_dirs, "hosts.fallback_udp") == []
