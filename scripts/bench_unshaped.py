"""INA against the ring on unshaped Mininet links: issue 13's end-to-end benchmark.

    sudo .venv/bin/python scripts/bench_unshaped.py [--workers 4,8] [--rounds 3]
        [--size-mib 16] [--out DIR] [--baseline DIR] [-- extra inaemu run arguments]

Each round runs `inaemu run --net mininet --topo star --bw 0 --algo both` once per worker count
(INA, then the ring, on one switch process), in a fresh process, so INA and the ring of one
round share the machine's state of that moment. With `--baseline DIR` (a copy of the tree, e.g.
`git archive REV | tar -x -C DIR`) every round also runs that tree's `inaemu`, alternating with
the working tree's, so before and after meet the same load. Per run it records the two call
times, ring/INA, retransmissions and the load average; at the end it prints, per tree and
worker count, the median and the range of ring/INA (the number issue 13 asks for: >= 1.0,
bandwidth optimum 1.5 at 4 workers and 1.75 at 8) and writes `unshaped.csv`.

The times are wall times of Python processes sharing 2 cores, so they move between runs: read
the ratio of one run, and the median over rounds, never one absolute time. Each `inaemu run`
takes Mininet's lock (`/work/coord/mininet.lock` when that directory exists) so other Mininet
users of the machine are never run beside it.
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
LOCK = Path("/work/coord/mininet.lock")
OPTIMUM = {4: 1.5, 8: 1.75}     # the bandwidth optimum 2(n-1)/n over 1: docs/model.md


def parse_args(argv: list[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--workers", default="4,8", help="worker counts, comma-separated")
    parser.add_argument("--rounds", type=int, default=3, help="runs per worker count and tree")
    parser.add_argument("--size-mib", type=float, default=16)
    parser.add_argument("--baseline", type=Path, default=None,
                        help="a copy of an earlier tree, run alternately with this one")
    parser.add_argument("--out", type=Path, default=None, help="where unshaped.csv goes")
    parser.add_argument("extra", nargs="*", help="more `inaemu run` arguments (after --)")
    args = parser.parse_args(argv)
    try:
        args.worker_counts = [int(w) for w in args.workers.split(",")]
    except ValueError:
        parser.error(f"--workers: expected comma-separated integers, got {args.workers!r}")
    if args.rounds < 1:
        parser.error("--rounds: at least 1")
    if args.baseline is not None and not (args.baseline / "inaemu" / "cli.py").exists():
        parser.error(f"--baseline {args.baseline}: no inaemu/cli.py there (not a tree copy)")
    return args


def run_once(tree: Path | None, workers: int, args: argparse.Namespace, out: Path) -> dict:
    """One `inaemu run ... --algo both`; returns the two call times and what goes with them."""
    env = dict(os.environ)
    if tree is not None:
        env["PYTHONPATH"] = str(tree)
    command = [sys.executable, "-m", "inaemu", "run", "--net", "mininet", "--topo", "star",
               "--bw", "0", "--algo", "both", "--workers", str(workers),
               "--size-mib", f"{args.size_mib:g}", "--out", str(out), *args.extra]
    if LOCK.parent.is_dir():
        command = ["flock", "-o", str(LOCK), *command]
    load = os.getloadavg()[0]
    # `python -m` puts the working directory first on sys.path: run in the tree itself, or the
    # tree a relative working directory holds would be imported instead of the baseline
    done = subprocess.run(command, env=env, capture_output=True, text=True,
                          cwd=tree if tree is not None else ROOT)
    if done.returncode != 0:
        tail = "\n".join((done.stdout + done.stderr).splitlines()[-15:])
        raise SystemExit(f"bench_unshaped: `inaemu run` failed ({done.returncode}):\n{tail}")
    rows = {row["algo"]: row for row in json.loads((out / "summary.json").read_text())}
    config = json.loads((out / "config.json").read_text())
    ina, ring = rows["ina"], rows["ring"]
    if not (ina["correct"] and ring["correct"]):
        raise SystemExit(f"bench_unshaped: a wrong result in {out}: see summary.json")
    return {"workers": workers, "ina_s": ina["time_s"], "ring_s": ring["time_s"],
            "ring_over_ina": ring["time_s"] / ina["time_s"],
            "ina_retx": ina["retransmissions"], "window": config.get("window"),
            "load": round(load, 2)}


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    if os.geteuid() != 0:
        raise SystemExit("bench_unshaped: Mininet needs root")
    out = (args.out or Path(tempfile.mkdtemp(prefix="bench-unshaped-"))).resolve()
    out.mkdir(parents=True, exist_ok=True)
    trees = [("now", None)] + ([("baseline", args.baseline.resolve())] if args.baseline else [])
    results = []
    total = args.rounds * len(args.worker_counts) * len(trees)
    for round_ in range(args.rounds):
        for workers in args.worker_counts:
            order = trees if round_ % 2 == 0 else trees[::-1]
            for name, tree in order:
                run = run_once(tree, workers, args, out / f"{name}-{workers}w-{round_}")
                run.update(tree=name, round=round_)
                results.append(run)
                print(f"[{len(results)}/{total}] {name:8s} {workers} workers: INA "
                      f"{run['ina_s']:.2f} s, ring {run['ring_s']:.2f} s, ring/INA "
                      f"{run['ring_over_ina']:.2f} (retx {run['ina_retx']}, load "
                      f"{run['load']:.1f})", flush=True)
    with open(out / "unshaped.csv", "w", newline="") as handle:
        writer = csv.DictWriter(handle, fieldnames=list(results[0]))
        writer.writeheader()
        writer.writerows(results)
    print(f"\n{'tree':8s} {'workers':>7s} {'INA s (median)':>15s} {'ring s (median)':>16s} "
          f"{'ring/INA median':>16s} {'range':>12s} {'optimum':>8s}")
    for name, _ in trees:
        for workers in args.worker_counts:
            mine = [r for r in results if r["tree"] == name and r["workers"] == workers]
            ratios = [r["ring_over_ina"] for r in mine]
            print(f"{name:8s} {workers:7d} {statistics.median(r['ina_s'] for r in mine):15.2f} "
                  f"{statistics.median(r['ring_s'] for r in mine):16.2f} "
                  f"{statistics.median(ratios):16.2f} "
                  f"{min(ratios):5.2f}-{max(ratios):<6.2f} {OPTIMUM.get(workers, float('nan')):8.2f}")
    print(f"\nruns in {out} (unshaped.csv)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
