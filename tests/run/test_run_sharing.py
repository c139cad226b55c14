"""`inaemu run --sharing hashed` (docs/protocol.md §3.3) on the simulator: two jobs hashed into a
shared pool smaller than their windows, each with a host aggregator on its first worker's host;
results stay correct and that host carries the collided chunks. Refusals name the setting."""

from __future__ import annotations

import json

import pytest

from inaemu.cli import main
from inaemu.experiment.config import ConfigError, RunConfig

SMALL = ["--net", "sim", "--algo", "ina", "--size-mib", "0.03", "--elems", "8", "--pool", "16",
         "--window", "16", "--jobs", "2", "--workers", "3", "--timeout", "120"]


def test_hashed_jobs_are_correct_and_the_hosts_aggregate(tmp_path, capsys) -> None:
    out = tmp_path / "hashed"
    status = main(["run", *SMALL, "--sharing", "hashed", "--shared-pairs", "6", "--out",
                   str(out)])
    printed = capsys.readouterr().out
    assert status == 0, printed
    summaries = json.loads((out / "summary.json").read_text())
    assert len(summaries) == 2 and all(s["correct"] and s["finished"] == 3 for s in summaries)
    workers = json.loads((out / "workers.json").read_text())
    received = {(w["job"], w["worker"]): w["bytes_received"] for w in workers}
    for job in (1, 2):
        # the first and last windows at least, and the collisions, land on worker 0's host
        assert received[job, 0] > 1.2 * received[job, 1]


@pytest.mark.parametrize("settings, why", [
    (dict(sharing="atp"), "sharing: expected static or hashed"),
    (dict(shared_pairs=5), "shared-pairs: 1..65535 pairs, with --sharing hashed only"),
    (dict(sharing="hashed", fallback_slots=4), "exclude each other"),
])
def test_sharing_refusals(settings, why) -> None:
    with pytest.raises(ConfigError, match=why):
        RunConfig(**{"net": "sim", "pool_size": 16, "window": 16, **settings})


@pytest.mark.parametrize("shape", [
    ["--topo", "leaf-spine", "--leaves", "2", "--spines", "2", "--hosts-per-leaf", "3"],
    ["--topo", "fat-tree", "--k", "4"],
])
def test_hashed_trees_run_in_the_simulator(shape, tmp_path, capsys) -> None:
    """--sharing hashed on a multi-tier topology aggregates along trees (the default there):
    every tree switch hashes into its pool, each tier's host aggregator on the job's worker
    host nearest it (docs/fallback.md, "Trees"); the results stay exact."""
    out = tmp_path / "tree"
    status = main(["run", "--net", "sim", "--algo", "ina", "--size-mib", "0.03", "--elems", "8",
                   "--pool", "16", "--window", "16", "--jobs", "2", *shape, "--sharing",
                   "hashed", "--shared-pairs", "5", "--timeout", "120", "--out", str(out)])
    printed = capsys.readouterr().out
    assert status == 0, printed
    summaries = json.loads((out / "summary.json").read_text())
    assert len(summaries) == 2 and all(s["correct"] for s in summaries)
    trees = json.loads((out / "sim_report.json").read_text())["ina"]["trees"]
    for tree in trees.values():
        assert len(tree) > 1                               # a tree, not one switch
        for node in tree.values():
            assert node["fallback_port"] and node["fallback_address"]
