"""`inaemu run --algo all` and `inaemu compare` in the simulator: every algorithm correct, a
model time beside every measurement (table, summary.json, summary.csv), and the comparison's
files. In-process through the CLI, small vectors."""

from __future__ import annotations

import csv
import json

import pytest

from inaemu.cli import main

ALL = ["ina", "ring", "ps", "hring", "dbtree", "rhd", "torus"]
SMALL = ["--net", "sim", "--elems", "32", "--pool", "16", "--bw", "20"]


def test_run_all_algorithms_with_the_model(tmp_path, capsys):
    out = tmp_path / "run"
    status = main(["run", *SMALL, "--algo", "all", "--workers", "5", "--size-mib", "0.03",
                   "--out", str(out)])
    printed = capsys.readouterr().out
    assert status == 0, printed
    summaries = json.loads((out / "summary.json").read_text())
    assert [s["algo"] for s in summaries] == ALL
    for s in summaries:
        assert s["correct"] and s["finished"] == 5
        assert s["model_time_s"] > 0
        assert s["measured_over_model"] == pytest.approx(s["time_s"] / s["model_time_s"])
        assert 0.5 < s["measured_over_model"] < 2.0, s
    with (out / "summary.csv").open() as f:
        rows = list(csv.DictReader(f))
    assert [float(r["model_time_s"]) for r in rows] == [s["model_time_s"] for s in summaries]
    assert "model s" in printed and "meas/model" in printed
    assert all(f"\n{algo} " in printed for algo in ALL)
    assert (out / "allreduce.png").stat().st_size > 0


def test_run_one_host_algorithm(tmp_path, capsys):
    out = tmp_path / "run"
    status = main(["run", *SMALL, "--algo", "dbtree", "--workers", "3", "--size-mib", "0.01",
                   "--loss", "5", "--out", str(out)])
    assert status == 0, capsys.readouterr().out
    (summary,) = json.loads((out / "summary.json").read_text())
    assert summary["algo"] == "dbtree" and summary["correct"]


def test_unknown_algorithm_is_refused(capsys):
    with pytest.raises(SystemExit) as exit_:
        main(["run", "--net", "sim", "--algo", "allgather"])
    assert exit_.value.code == 2
    assert "--algo" in capsys.readouterr().err


def test_compare_draws_every_algorithm(tmp_path, capsys):
    out = tmp_path / "cmp"
    status = main(["compare", *SMALL, "--algo", "all", "--worker-counts", "2,4",
                   "--sizes-kib", "8,32", "--out", str(out)])
    printed = capsys.readouterr().out
    assert status == 0, printed
    rows = json.loads((out / "compare.json").read_text())
    assert len(rows) == 2 * 2 * len(ALL)
    assert {(r["workers"], r["size_bytes"]) for r in rows} == {
        (n, kib * 1024) for n in (2, 4) for kib in (8, 32)}
    assert all(r["correct"] and r["model_time_s"] > 0 and r["model_busbw_gbps"] > 0
               for r in rows)
    assert (out / "compare.png").stat().st_size > 0
    assert (out / "compare.csv").read_text().startswith("algo,workers,size_bytes,time_s,")


def test_compare_refuses_bad_lists(capsys):
    with pytest.raises(SystemExit) as exit_:
        main(["compare", "--net", "sim", "--sizes-kib", "0,4"])
    assert exit_.value.code == 2
    assert "--sizes-kib" in capsys.readouterr().err
