"""`inaemu run --net sim` end to end: INA and ring correct for 2, 4, 8 workers at 0%, 1% and 10%
loss, and a killed worker ends the run with clear errors and a non-zero exit. No root needed.

Runs go through the CLI entry point in-process (the same code path as the command, without
paying the interpreter start for each of the nine runs); vectors are small (k = 8, 4 KiB).
"""

from __future__ import annotations

import json

import pytest

from inaemu.cli import main

SMALL = ["--net", "sim", "--size-mib", "0.004", "--elems", "8", "--pool", "16"]


@pytest.mark.parametrize("workers", [2, 4, 8])
@pytest.mark.parametrize("loss", [0, 1, 10])
def test_sim_run_is_correct(workers, loss, tmp_path, capsys) -> None:
    out = tmp_path / "run"
    status = main(["run", *SMALL, "--workers", str(workers), "--loss", str(loss),
                   "--seed", str(workers + loss), "--timeout", "120", "--out", str(out)])
    printed = capsys.readouterr().out
    assert status == 0, printed
    summaries = json.loads((out / "summary.json").read_text())
    assert [s["algo"] for s in summaries] == ["ina", "ring"]
    for s in summaries:
        assert (s["net"], s["workers"], s["jobs"], s["loss"], s["size_bytes"]) == (
            "sim", workers, 1, loss, 4192)
        assert s["correct"] and s["finished"] == workers
        assert 0 <= s["max_abs_err"] <= s["err_bound"]
        assert s["busbw_gbps"] == pytest.approx(s["algbw_gbps"] * 2 * (workers - 1) / workers)
        assert s["time_s"] > 0
    if loss == 10:
        assert summaries[0]["retransmissions"] > 0          # losses were repaired, not absent
    assert "ina   1" in printed and "ring  1" in printed     # the table
    assert (out / "allreduce.png").exists() and (out / "workers.csv").exists()


def test_a_killed_worker_fails_the_run_with_clear_errors(tmp_path, capsys) -> None:
    out = tmp_path / "run"
    status = main(["run", *SMALL, "--workers", "4", "--kill-worker", "1@0.001",
                   "--timeout", "60", "--out", str(out)])
    assert status == 1
    assert "not every result is correct" in capsys.readouterr().err
    summaries = json.loads((out / "summary.json").read_text())
    assert [s["correct"] for s in summaries] == [False, False]
    workers = json.loads((out / "workers.json").read_text())
    ina = {r["worker"]: r["error"] for r in workers if r["algo"] == "ina"}
    assert "killed" in ina[1]
    for survivor in (0, 2, 3):
        assert "unreachable" in ina[survivor] and "job 1" in ina[survivor]


def test_two_jobs_side_by_side(tmp_path, capsys) -> None:
    out = tmp_path / "run"
    status = main(["run", *SMALL, "--workers", "3", "--jobs", "2", "--loss", "1",
                   "--out", str(out)])
    assert status == 0, capsys.readouterr().out
    summaries = json.loads((out / "summary.json").read_text())
    assert [(s["algo"], s["job"], s["jobs"], s["workers"], s["topo"]) for s in summaries] == [
        ("ina", 1, 2, 3, "star6"), ("ina", 2, 2, 3, "star6"),
        ("ring", 1, 2, 3, "star6"), ("ring", 2, 2, 3, "star6")]
    assert all(s["correct"] for s in summaries)
