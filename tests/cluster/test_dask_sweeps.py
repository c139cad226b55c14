"""Sweeps on Dask (inaemu/distributed.py): a simulator sweep on a LocalCluster of 2 processes
writes the serial run's CSV (all but the wall-clock column), `inaemu compare --parallel 2` the
serial compare.csv; bad --dask values exit 2 with one line. Dask distributed is a required test
dependency (the `cluster` extra that bootstrap.sh installs), never skipped. About 15 s."""

from __future__ import annotations

import csv
import importlib.util
import sys
from pathlib import Path

import pytest

from inaemu import distributed as dist
from inaemu.cli import main as inaemu_main
from tests.conftest import PROJECT_ROOT

SPEC = importlib.util.spec_from_file_location("sweep", PROJECT_ROOT / "scripts" / "sweep.py")
sweep = importlib.util.module_from_spec(SPEC)
sys.modules.setdefault("sweep", sweep)
SPEC.loader.exec_module(sweep)

SWEEP = ["--sweep", "size", "--topo", "leaf-spine", "--hosts-per-leaf", "2",
         "--points", "256,512,1024", "--elems", "8", "--loss", "2", "--seed", "7"]


def rows_without_wall(path: Path) -> list[dict]:
    with path.open() as f:
        return [{k: v for k, v in row.items() if k != "wall_s"} for row in csv.DictReader(f)]


def test_sweep_on_a_two_process_local_cluster_equals_the_serial_run(tmp_path, capsys) -> None:
    assert sweep.main([*SWEEP, "--out", str(tmp_path / "serial")]) == 0
    assert sweep.main([*SWEEP, "--out", str(tmp_path / "dask"), "--dask", "local:2"]) == 0
    out = capsys.readouterr().out
    assert "6 runs on a LocalCluster of 2 processes" in out
    assert "[6/6] size=1024 ring" in out
    serial = rows_without_wall(tmp_path / "serial" / "sweep-size.csv")
    on_dask = rows_without_wall(tmp_path / "dask" / "sweep-size.csv")
    assert len(serial) == 6
    assert any(int(r["retransmissions"]) > 0 for r in serial)   # loss: the seeded paths ran
    assert on_dask == serial


def test_compare_parallel_writes_the_serial_compare_csv(tmp_path, capsys) -> None:
    common = ["compare", "--net", "sim", "--topo", "star", "--workers", "2", "--algo", "both",
              "--sizes-kib", "2,4", "--loss", "1", "--seed", "3"]
    assert inaemu_main([*common, "--out", str(tmp_path / "serial")]) == 0
    assert inaemu_main([*common, "--out", str(tmp_path / "dask"), "--parallel", "2"]) == 0
    out = capsys.readouterr().out
    assert "2 points on a LocalCluster of 2 processes" in out
    serial = (tmp_path / "serial" / "compare.csv").read_text()
    assert serial.count("\n") == 5
    assert (tmp_path / "dask" / "compare.csv").read_text() == serial
    assert (tmp_path / "dask" / "n2-4096" / "summary.json").exists()


@pytest.mark.parametrize("text, expected", [
    ("local:3", dist.DaskTarget(processes=3)),
    ("tcp://10.1.2.3:8786", dist.DaskTarget(address="tcp://10.1.2.3:8786")),
    ("sched:8786", dist.DaskTarget(address="sched:8786")),
])
def test_parse_target(text, expected) -> None:
    assert dist.parse_target(text) == expected


def test_parallel_without_dask_is_a_local_cluster_and_one_is_serial() -> None:
    assert dist.target_from(None, 1) is None
    assert dist.target_from(None, 4) == dist.DaskTarget(processes=4)
    assert dist.target_from("local", 3) == dist.DaskTarget(processes=3)


@pytest.mark.parametrize("bad", ["local:0", "local:x", "nohost", "tcp://h:port"])
def test_bad_dask_values_exit_2_with_one_line(bad, tmp_path, capsys) -> None:
    assert sweep.main([*SWEEP, "--out", str(tmp_path), "--dask", bad]) == 2
    err = capsys.readouterr().err
    assert err.startswith("sweep: error: --dask") and err.count("\n") == 1
    assert inaemu_main(["compare", "--net", "sim", "--dask", bad]) == 2
    assert "inaemu compare: error: --dask" in capsys.readouterr().err


def hold_exclusively(path: str) -> str:
    """Holds `path` (O_EXCL) for a moment: 'overlap' if another task held it at the same time."""
    import os
    import time
    try:
        fd = os.open(path, os.O_CREAT | os.O_EXCL)
    except FileExistsError:
        return "overlap"
    time.sleep(0.5)
    os.close(fd)
    os.unlink(path)
    return "alone"


def test_mininet_points_never_share_a_host(tmp_path) -> None:
    dist.pickle_module_by_value(__name__)     # the workers cannot import this test module
    marker = str(tmp_path / "mininet-running")
    results = dist.map_points(hold_exclusively, [marker] * 4, dist.DaskTarget(processes=2),
                              mininet=True)
    assert results == ["alone"] * 4


def test_a_scheduler_without_mininet_workers_is_refused_for_mininet_points() -> None:
    import distributed
    with distributed.LocalCluster(n_workers=1, processes=False, dashboard_address=None) as local:
        with pytest.raises(dist.DaskError, match="no worker offers the 'mininet' resource"):
            dist.map_points(str, [1], dist.DaskTarget(address=local.scheduler_address),
                            mininet=True)
        assert dist.map_points(str, [1, 2], dist.DaskTarget(address=local.scheduler_address)) \
            == ["1", "2"]
