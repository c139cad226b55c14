"""Wall time of one simulator sweep run serially and on a Dask LocalCluster, in the same run.

    .venv/bin/python scripts/bench_dask_sweep.py [--processes 2] [--points 4096,...]

Runs scripts/sweep.py's size sweep (fat-tree k=4, every host a worker, INA tree and ring: two
runs per point) serially, then with `--dask local:N`, checks that both CSVs agree in every
column but wall_s, and prints both wall times, their ratio and the load average before and after
(the machine may be shared: quote ratios measured in one run).
"""

from __future__ import annotations

import argparse
import csv
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
DEFAULT_POINTS = ",".join(str(65536 * i) for i in range(1, 13))     # 12 sizes: 24 runs


def rows(path: Path) -> list[dict]:
    with path.open() as f:
        return [{k: v for k, v in r.items() if k != "wall_s"} for r in csv.DictReader(f)]


def timed_sweep(points: str, out: Path, extra: list[str]) -> float:
    command = [sys.executable, str(ROOT / "scripts" / "sweep.py"), "--sweep", "size",
               "--topo", "fat-tree", "--points", points, "--elems", "32", "--out", str(out),
               *extra]
    start = time.perf_counter()
    subprocess.run(command, check=True, stdout=subprocess.DEVNULL)
    return time.perf_counter() - start


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--processes", type=int, default=2)
    p.add_argument("--points", default=DEFAULT_POINTS)
    args = p.parse_args()
    runs = 2 * len(args.points.split(","))
    with tempfile.TemporaryDirectory() as tmp:
        load_before = os.getloadavg()
        serial = timed_sweep(args.points, Path(tmp) / "serial", [])
        dask = timed_sweep(args.points, Path(tmp) / "dask", ["--dask", f"local:{args.processes}"])
        load_after = os.getloadavg()
        same = rows(Path(tmp) / "serial" / "sweep-size.csv") == \
            rows(Path(tmp) / "dask" / "sweep-size.csv")
    print(f"{runs} runs: serial {serial:.1f} s, LocalCluster of {args.processes} processes "
          f"{dask:.1f} s (cluster start and stop included): ratio {dask / serial:.2f}; "
          f"identical CSV (but wall_s): {same}; load average before "
          f"{load_before[0]:.2f}, after {load_after[0]:.2f} on {os.cpu_count()} cores")
    return 0 if same else 1


if __name__ == "__main__":
    sys.exit(main())
