"""INA under random loss on a tree and on a star: each run's time over its lossless time.

    .venv/bin/python scripts/tree_loss.py [--tree-seeds 1-8] [--tree-losses 5,10]
        [--star-seeds 1-4] [--star-losses 1,5,10] [--star-workers 4] [--size-mib 1]
        [--skip-star] [--skip-tree] [--csv FILE]

Runs `inaemu run --net sim --algo ina` (virtual time: the same command gives the same number)
as a subprocess per point and reads its summary.json:

* the fat-tree k = 4, 16 workers (tree aggregation), lossless, then every seed at every loss;
* the star of `--star-workers`, lossless, then every seed at every loss.

The lossless time of a topology does not depend on the seed (only the gradients do), so one
lossless run per topology (seed 1) is the denominator. Prints one line per run (time, ratio,
correct, retransmissions) and a summary per (topology, loss): the worst and median ratio and
whether every run was correct. docs/loss.md ("Trees") holds its numbers.
"""

from __future__ import annotations

import argparse
import csv
import json
import os
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def seeds(text: str) -> list[int]:
    """'1-8' or '1,3,5'."""
    if "-" in text:
        low, high = text.split("-")
        return list(range(int(low), int(high) + 1))
    return [int(s) for s in text.split(",") if s]


def losses(text: str) -> list[float]:
    return [float(s) for s in text.split(",") if s]


def run(topo_args: list[str], loss: float, seed: int, size_mib: float,
        timeout: float) -> dict:
    """One `inaemu run --net sim --algo ina`; its summary row."""
    with tempfile.TemporaryDirectory(prefix="tree-loss-") as out:
        command = [sys.executable, "-m", "inaemu", "run", "--net", "sim", "--algo", "ina",
                   *topo_args, "--size-mib", str(size_mib), "--loss", str(loss),
                   "--seed", str(seed), "--timeout", str(timeout), "--out", out]
        env = dict(os.environ, PYTHONPATH=str(ROOT))
        done = subprocess.run(command, cwd=ROOT, env=env, capture_output=True, text=True)
        summary = Path(out) / "summary.json"
        if not summary.exists():
            raise SystemExit(f"{' '.join(command)} failed:\n{done.stdout}\n{done.stderr}")
        data = json.loads(summary.read_text())
    rows = data if isinstance(data, list) else [data]
    row = rows[0]
    return {"time_s": float(row["time_s"]), "correct": bool(row["correct"]),
            "finished": bool(row.get("finished", True)),
            "retx": int(row.get("retransmissions") or 0)}


def sweep(name: str, topo_args: list[str], loss_list: list[float], seed_list: list[int],
          args, rows: list[dict]) -> None:
    base = run(topo_args, 0.0, 1, args.size_mib, args.timeout)
    print(f"{name:9} loss  0   seed 1  {base['time_s']:8.4f} s   1.00x  "
          f"correct={base['correct']}", flush=True)
    rows.append(dict(topology=name, loss=0.0, seed=1, ratio=1.0, **base))
    for loss in loss_list:
        for seed in seed_list:
            point = run(topo_args, loss, seed, args.size_mib, args.timeout)
            ratio = point["time_s"] / base["time_s"]
            print(f"{name:9} loss {loss:3g}  seed {seed}  {point['time_s']:8.4f} s  "
                  f"{ratio:5.2f}x  correct={point['correct']}  retx={point['retx']}",
                  flush=True)
            rows.append(dict(topology=name, loss=loss, seed=seed, ratio=ratio, **point))


def summarize(rows: list[dict]) -> None:
    print("\ntopology  loss   worst   median  all correct")
    groups: dict[tuple, list[dict]] = {}
    for row in rows:
        if row["loss"] > 0:
            groups.setdefault((row["topology"], row["loss"]), []).append(row)
    for (topology, loss), group in groups.items():
        ratios = [r["ratio"] for r in group]
        print(f"{topology:9} {loss:4g}%  {max(ratios):6.2f}x  {statistics.median(ratios):6.2f}x"
              f"  {all(r['correct'] and r['finished'] for r in group)}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--tree-seeds", default="1-8")
    parser.add_argument("--tree-losses", default="5,10")
    parser.add_argument("--star-seeds", default="1-4")
    parser.add_argument("--star-losses", default="1,5,10")
    parser.add_argument("--star-workers", type=int, default=4)
    parser.add_argument("--size-mib", type=float, default=1.0)
    parser.add_argument("--timeout", type=float, default=120.0,
                        help="virtual time limit per run (s)")
    parser.add_argument("--skip-star", action="store_true")
    parser.add_argument("--skip-tree", action="store_true")
    parser.add_argument("--csv", type=Path, help="write every run's row here")
    args = parser.parse_args()
    rows: list[dict] = []
    if not args.skip_tree:
        sweep("fat-tree", ["--topo", "fat-tree", "--k", "4", "--workers", "16"],
              losses(args.tree_losses), seeds(args.tree_seeds), args, rows)
    if not args.skip_star:
        sweep("star", ["--topo", "star", "--workers", str(args.star_workers)],
              losses(args.star_losses), seeds(args.star_seeds), args, rows)
    summarize(rows)
    if args.csv:
        with args.csv.open("w", newline="") as stream:
            writer = csv.DictWriter(stream, fieldnames=list(rows[0]))
            writer.writeheader()
            writer.writerows(rows)


if __name__ == "__main__":
    main()
