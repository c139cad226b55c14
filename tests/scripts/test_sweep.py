"""scripts/sweep.py: a tiny sweep writes its CSV (the documented columns, one row per run) and its
PNG; the analytic model's numbers; bad arguments exit 2 with a message, not a traceback."""

from __future__ import annotations

import csv
import importlib.util
import sys
from pathlib import Path

import pytest

from tests.conftest import PROJECT_ROOT

SPEC = importlib.util.spec_from_file_location("sweep", PROJECT_ROOT / "scripts" / "sweep.py")
sweep = importlib.util.module_from_spec(SPEC)
sys.modules.setdefault("sweep", sweep)     # dataclasses look their module up there
SPEC.loader.exec_module(sweep)

TINY = ["--size", "512", "--elems", "8", "--bw", "100"]


def read_rows(path: Path) -> tuple[list[str], list[dict]]:
    with path.open() as f:
        reader = csv.DictReader(f)
        return reader.fieldnames, list(reader)


def test_a_tiny_workers_sweep_writes_csv_and_png(tmp_path, capsys) -> None:
    status = sweep.main(["--sweep", "workers", "--topo", "leaf-spine", "--hosts-per-leaf", "2",
                         "--points", "2,4", "--out", str(tmp_path), *TINY])
    out = capsys.readouterr().out
    assert status == 0, out
    columns, rows = read_rows(tmp_path / "sweep-workers.csv")
    assert tuple(columns) == sweep.COLUMNS
    assert [(r["x"], r["series"]) for r in rows] == [
        ("2.0", "ina-tree"), ("2.0", "ring"), ("4.0", "ina-tree"), ("4.0", "ring")]
    for row in rows:
        assert row["correct"] == "True" and row["error"] == ""
        assert float(row["time_s"]) > 0 and float(row["analytic_bw_s"]) > 0
    # the bandwidth-optimal time is a lower bound of the measured one
    assert all(float(r["time_s"]) >= float(r["analytic_bw_s"]) for r in rows)
    assert rows[2]["tree_depth"] == "2"                  # h1, h2 on l1, h3, h4 on l2: spine root
    png = tmp_path / "sweep-workers.png"
    assert png.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    assert "[4/4] workers=4 ring" in out and "bandwidth-optimal" in out
    assert "series" in out and f"wrote {tmp_path / 'sweep-workers.csv'}" in out


def test_jobs_sweep_counts_shared_tree_links(tmp_path, capsys) -> None:
    status = sweep.main(["--sweep", "jobs", "--topo", "leaf-spine", "--hosts-per-leaf", "2",
                         "--points", "1,2", "--out", str(tmp_path), *TINY])
    assert status == 0, capsys.readouterr().out
    _, rows = read_rows(tmp_path / "sweep-jobs.csv")
    one, two = rows
    assert two["jobs"] == "2" and two["correct"] == "True"
    # the second job's tree is rooted at the other spine: no link carries two jobs' aggregates,
    # so the same bandwidth-optimal time, and twice the traffic in all
    assert float(two["analytic_bw_s"]) == pytest.approx(float(one["analytic_bw_s"]))
    assert int(two["inter_switch_bytes"]) == 2 * int(one["inter_switch_bytes"])
    assert float(two["time_s"]) < 1.5 * float(one["time_s"])
    assert (tmp_path / "sweep-jobs.png").exists()


def test_the_analytic_model() -> None:
    bw = 100e6 / 8
    assert sweep.ina_wire_bytes(1024, 8) == (32 + 1) * (58 + 32)
    assert sweep.ring_time(1448 * 4, 4, bw) == pytest.approx(1.5 * 4 * 1502 / bw)
    assert sweep.ring_time(1000, 1, bw) == 0
    assert sweep.ina_time(1024, 8, bw, 3) == pytest.approx(3 * 33 * 90 / bw)


@pytest.mark.parametrize("argv, message", [
    (["--sweep", "workers", "--topo", "star", "--hosts", "2", "--points", "4"],
     "4 workers: the topology has 2 hosts"),
    (["--sweep", "loss", "--points", "x"], "--points: expected numbers"),
    (["--sweep", "size", "--points", "2"], "size 2: at least 4 bytes"),
    (["--sweep", "tree", "--topo", "fat-tree", "--fat-k", "3"], "--topo fat-tree: "),
])
def test_bad_arguments_exit_2_with_a_message(tmp_path, capsys, argv, message) -> None:
    assert sweep.main([*argv, "--out", str(tmp_path)]) == 2
    assert message in capsys.readouterr().err
