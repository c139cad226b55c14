"""`inaemu train --net sim`: simulated workers train the digits MLP over the simulated network;
the INA curve stays within the tolerance of the ring's (same seeds), the loss falls, the table,
CSVs and plot are written. Plus the Mininet records' merge and the argument errors."""

from __future__ import annotations

import os

import pytest

if not os.environ.get("CI"):     # CI installs the torch extra, and there a missing torch fails
    pytest.importorskip("torch")

import csv
import json
from pathlib import Path

from inaemu.cli import main
from inaemu.train.cli import finish
from inaemu.train.mininet_train import merge
from inaemu.train.results import TrainResult

ITERATIONS = 12


def test_sim_training_ina_follows_the_ring(tmp_path: Path, capsys) -> None:
    out = tmp_path / "train"
    status = main(["train", "--net", "sim", "--workers", "3", "--iterations", str(ITERATIONS),
                   "--eval-every", "6", "--elems", "64", "--out", str(out)])
    printed = capsys.readouterr().out
    assert status == 0, printed
    assert "iter ms" in printed and "ina vs ring: largest minibatch-loss gap" in printed
    summary = {s["algo"]: s for s in json.loads((out / "summary.json").read_text())}
    assert set(summary) == {"ina", "ring"}
    for s in summary.values():
        assert s["error"] is None and s["iterations"] == ITERATIONS and s["workers"] == 3
        assert 0 < s["comm_share"] < 1 and s["comm_ms"] > 0 and s["bytes_sent_per_iteration"] > 0
    # quantization does not change the outcome beyond float32 noise (docs/train.md)
    assert summary["ina"]["max_batch_loss_gap"] <= 1e-4
    assert abs(summary["ina"]["final_train_loss"] - summary["ring"]["final_train_loss"]) <= 1e-4
    rows = list(csv.DictReader((out / "train.csv").open()))
    assert len(rows) == 2 * ITERATIONS
    ina = [float(r["loss"]) for r in rows if r["algo"] == "ina"]
    assert ina[-1] < ina[0]                      # it learns
    points = list(csv.DictReader((out / "eval.csv").open()))
    assert [int(p["iteration"]) for p in points if p["algo"] == "ina"] == [0, 6, 12]
    assert float(points[-1]["train_loss"]) < float(points[0]["train_loss"])
    times = [float(r["time_s"]) for r in rows if r["algo"] == "ring"]
    assert times == sorted(times) and times[0] > 0
    assert (out / "train.png").stat().st_size > 10_000


def _result(algo: str, losses: list[float]) -> TrainResult:
    result = TrainResult(algo=algo, net="sim", workers=2, parameters=10)
    result.rows = [{"algo": algo, "net": "sim", "iteration": i, "loss": loss,
                    "iteration_s": 0.01, "compute_s": 0.002, "comm_s": 0.008, "bytes_sent": 64,
                    "retransmissions": 0} for i, loss in enumerate(losses)]
    result.evals = [{"algo": algo, "net": "sim", "iteration": len(losses), "train_loss": 1.0,
                     "test_loss": 1.0, "test_accuracy": 0.5}]
    result.add_times()
    return result


def test_a_curve_beyond_the_tolerance_is_exit_1(tmp_path: Path, capsys) -> None:
    ring = _result("ring", [2.0, 1.5, 1.0])
    assert finish([_result("ina", [2.0, 1.52, 1.0]), ring], tmp_path, 0.03) == 0
    assert "gap 2.00e-02 over 3 iterations (tolerance 0.03): within" in capsys.readouterr().out
    assert finish([_result("ina", [2.0, 1.52, 1.0]), ring], tmp_path, 0.01) == 1
    assert "(tolerance 0.01): NOT within" in capsys.readouterr().out


@pytest.mark.parametrize("args, message", [
    (["--workers", "1"], "workers: expected 2.."),
    (["--iterations", "0"], "iterations: expected"),
    (["--algo", "tree"], "invalid choice"),
    (["--lr", "-1"], "lr: expected"),
    (["--elems", "30"], "elems: k must be a multiple of 4"),
])
def test_bad_arguments_are_one_line(args, message, capsys) -> None:
    try:
        status = main(["train", "--net", "sim", *args])
    except SystemExit as exit_:             # argparse's own errors
        status = exit_.code
    assert status == 2
    err = capsys.readouterr().err
    assert err.startswith("inaemu train: error:") and message in err and err.count("\n") == 1


def _record(rank: int, iteration_s: list[float], comm_s: list[float]) -> dict:
    return {"ok": True, "parameters": 10, "evals": [{"iteration": 0, "train_loss": 2.0,
                                                     "test_loss": 2.0, "test_accuracy": 0.1}],
            "rows": [{"iteration": i, "loss": 1.0 + rank, "iteration_s": t, "comm_s": c,
                      "bytes_sent": 100 * (rank + 1), "retransmissions": rank}
                     for i, (t, c) in enumerate(zip(iteration_s, comm_s))]}


def test_merge_splits_the_slowest_compute_from_the_network() -> None:
    # rank 1 computes 30 ms, rank 0 10 ms and waits for it inside the all-reduce
    result = merge("ina", [_record(0, [0.050, 0.040], [0.040, 0.020]),
                           _record(1, [0.051, 0.041], [0.021, 0.030])])
    first, second = result.rows
    assert first["iteration_s"] == pytest.approx(0.051)
    assert first["compute_s"] == pytest.approx(0.030)
    assert first["comm_s"] == pytest.approx(0.021)
    assert second["compute_s"] == pytest.approx(0.020) and second["comm_s"] == pytest.approx(0.021)
    assert first["loss"] == pytest.approx(1.5) and first["bytes_sent"] == 150
    assert first["retransmissions"] == 1
    assert [r["time_s"] for r in result.rows] == pytest.approx([0.051, 0.092])
    assert result.evals[0]["time_s"] == 0.0


def test_merge_reports_a_failed_worker() -> None:
    result = merge("ring", [_record(0, [0.1], [0.05]), {"ok": False, "error": "PeerFailed: x"}])
    assert not result.ok and result.error == "PeerFailed: x"


def test_tree_aggregation_trains_the_same_model() -> None:
    """INA along a tree over a leaf-spine (partial sums at the leaves, the rest at a spine)
    gives the star's single-switch sums to the bit: integer sums in any order are the same."""
    from inaemu.train.config import TrainConfig
    from inaemu.train.sim_train import train_sim
    curves = {}
    for topo in ("star", "leaf-spine"):
        cfg = TrainConfig(algos=("ina",), workers=4, iterations=4, eval_every=2, net="sim",
                          elems_k=64, topo=topo)
        result = train_sim(cfg, "ina", lambda _line: None)
        assert result.ok and len(result.rows) == 4
        curves[topo] = [row["loss"] for row in result.rows]
    assert curves["leaf-spine"] == curves["star"]
