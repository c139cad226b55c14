"""scripts/loss_sweep.py: the analytic expectation, the links a round crosses, and a tiny sweep in
the simulator that writes its CSV and plot."""

from __future__ import annotations

import csv
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "scripts"))

import loss_sweep  # noqa: E402


def test_links_per_round_on_a_star_and_a_fat_tree() -> None:
    star = loss_sweep.parse_args(["--topo", "star"])
    assert star.workers == 4 and star.loss_list[0] == 0.0
    assert loss_sweep.links_per_round(star) == (5, 2, 1)      # 4 up, my result down
    tree = loss_sweep.parse_args(["--topo", "fat-tree"])
    # 16 workers up, 12 child switches up (8 edges, 4 aggregations), 3 links down to me
    assert tree.workers == 16
    assert loss_sweep.links_per_round(tree) == (16 + 12 + 3, 6, 3)


def test_expected_time_counts_only_the_bytes() -> None:
    assert loss_sweep.expected_time(1.0, "ina", 0.0, 5, 1) == 1.0
    assert loss_sweep.expected_time(None, "ina", 1.0, 5, 1) is None
    q, r = 1 - 0.9 ** 5, 1 - 0.9 ** 2
    h = 58 / (58 + 4 * 8)       # a QUERY's frame against a frame of k = 8 values
    assert loss_sweep.expected_time(1.0, "ina", 10.0, 5, 1, k=8) == pytest.approx(
        1 + 0.1 / 0.9 + h * q / (1 - r))
    assert loss_sweep.expected_time(2.0, "ring", 10.0, 2, 1) == pytest.approx(2 / 0.81)


def test_a_tiny_sweep_in_the_simulator(tmp_path: Path) -> None:
    status = loss_sweep.main(["--net", "sim", "--topo", "star", "--workers", "2",
                              "--size-mib", "0.01", "--losses", "0,5", "--algo", "ina",
                              "--out", str(tmp_path)])
    assert status == 0
    with (tmp_path / "loss-sim-star-w2.csv").open() as handle:
        rows = list(csv.DictReader(handle))
    assert [(r["algo"], float(r["loss_pct"])) for r in rows] == [("ina", 0.0), ("ina", 5.0)]
    assert all(r["correct"] == "True" and float(r["time_s"]) > 0 for r in rows)
    assert float(rows[1]["expected_s"]) > float(rows[1]["lossless_s"])
    assert (tmp_path / "loss-sim-star-w2.png").stat().st_size > 0


def test_a_sweep_where_nothing_finished_still_plots(tmp_path: Path) -> None:
    rows = [dict(algo="ina", loss_pct=p, time_s=None, expected_s=None, lossless_s=None)
            for p in (0.0, 1.0)]
    loss_sweep.plot(rows, tmp_path / "empty.png", "nothing finished")   # raised ValueError
    assert (tmp_path / "empty.png").stat().st_size > 0
