"""scripts/bench_allreduce.py on the simulator with tiny vectors: the ratio table is printed and
its numbers are the runs' own (no timing is asserted)."""

from __future__ import annotations

import importlib.util
import json
from pathlib import Path

import pytest

SCRIPT = Path(__file__).resolve().parents[2] / "scripts" / "bench_allreduce.py"


def load_bench():
    spec = importlib.util.spec_from_file_location("bench_allreduce", SCRIPT)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_optimal_ratio() -> None:
    bench = load_bench()
    assert [bench.optimal_ratio(n) for n in (2, 4, 8)] == [1.0, 1.5, 1.75]


def test_bench_prints_ring_over_ina_next_to_the_optimum(tmp_path, capsys) -> None:
    bench = load_bench()
    status = bench.main(["--workers", "2", "3", "--size-mib", "0.004", "--elems", "8",
                         "--out", str(tmp_path)])
    printed = capsys.readouterr().out
    assert status == 0, printed
    rows = {}
    for line in printed.splitlines():
        cells = line.split()
        if len(cells) == 8 and cells[0].isdigit():
            rows[int(cells[0])] = cells
    assert sorted(rows) == [2, 3]
    for n, cells in rows.items():
        summaries = json.loads((tmp_path / f"workers-{n}" / "summary.json").read_text())
        ina, ring = (s["time_s"] for s in summaries)
        assert float(cells[3]) == pytest.approx(ring / ina, abs=0.006)
        assert cells[4] == f"{2 * (n - 1) / n:.2f}"
        assert cells[7] == "yes"
