"""What a run that gives up reports (issue 11): the unfinished workers named once, not in every
worker's error, and the retransmissions they made counted (they were 0: a worker still running
at the time limit had not filled in its outcome)."""

from __future__ import annotations

from pathlib import Path

from inaemu.experiment.config import RunConfig
from inaemu.experiment.sim_run import run_sim
from inaemu.experiment.summary import RunSetting, summarize
from inaemu.sim import InaOptions, SimJob, simulate
from inaemu.sim.driver import SimTimeLimit
from topologies.builders import star

import pytest


def test_workers_running_at_the_time_limit_count_what_they_resent() -> None:
    topology = star(2)
    jobs = [SimJob(1, ("h1", "h2"))]
    with pytest.raises(SimTimeLimit) as caught:
        simulate(topology, jobs, algo="ina", size_bytes=64 * 1024, elems_k=32, loss=30.0,
                 bw=100, seed=1, time_limit=0.05, ina=InaOptions(window=16))
    records = caught.value.result.records
    assert all(r.time_s is None for r in records)
    assert all(r.retransmissions > 0 for r in records)
    assert all(r.retransmissions == r.counters["retransmissions"] for r in records)


def test_a_run_that_gives_up_names_its_unfinished_workers_once(tmp_path: Path) -> None:
    lines: list[str] = []
    cfg = RunConfig(algos=("ina",), workers=3, size_bytes=64 * 1024, bw_mbps=1, elems_k=32,
                    net="sim", timeout=0.05)       # 1 Mbit/s: 0.5 s of data, none finishes
    records = run_sim(cfg, tmp_path, lines.append)
    assert sum("3 workers unfinished: h1" in line for line in lines) == 1
    assert all(r["error"] == "no result by the virtual time limit (0.05 s)" for r in records)
    setting = RunSetting(net="sim", topo="star3", jobs=1, size_bytes=cfg.size_bytes,
                         elems_k=32, loss=0.0, bw_mbps=1, seed=1)
    (summary,) = summarize(records, setting)
    assert summary["error"] == "h1, h2, h3: no result by the virtual time limit (0.05 s)"


def test_distinct_errors_stay_apart() -> None:
    records = [dict(algo="ina", job=1, worker=w, host=f"h{w + 1}", time_s=None, error=e)
               for w, e in enumerate(["killed", "unreachable", "unreachable"])]
    setting = RunSetting(net="sim", topo="star3", jobs=1, size_bytes=4, elems_k=4, loss=0.0,
                         bw_mbps=None, seed=1)
    (summary,) = summarize(records, setting)
    assert summary["error"] == "h1: killed; h2, h3: unreachable"
