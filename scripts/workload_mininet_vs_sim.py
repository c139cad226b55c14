"""A workload on Mininet against the simulator on the same settings (docs/workloads.md).

Runs `inaemu workload` with the given arguments once with `--net mininet` (root) and once with
`--net sim`, and prints per algorithm both iteration times, Mininet/simulator and each beside
the model with overlap. Arguments after `--` go to both runs unchanged.

    sudo python scripts/workload_mininet_vs_sim.py --out DIR -- --model resnet50 \\
        --topo star --workers 16 --bw 10 --compute-speedup 1000 --algo ina,ring
"""

from __future__ import annotations

import argparse
import csv
import subprocess
import sys
import time
from pathlib import Path


def run(net: str, arguments: list[str], out: Path) -> dict[str, dict]:
    command = [sys.executable, "-m", "inaemu", "workload", *arguments, "--net", net,
               "--out", str(out)]
    print(f"== {' '.join(command[2:])}", flush=True)
    started = time.monotonic()
    status = subprocess.call(command)
    print(f"== {net}: exit {status} after {time.monotonic() - started:.0f} s", flush=True)
    path = out / "workload.csv"
    if not path.exists():
        return {}
    with path.open() as f:
        return {row["algo"]: row for row in csv.DictReader(f)}


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--out", default="results/workload-mininet-vs-sim")
    parser.add_argument("workload", nargs=argparse.REMAINDER,
                        help="-- then `inaemu workload` arguments (not --net or --out)")
    args = parser.parse_args()
    arguments = [a for a in args.workload if a != "--"]
    if any(a in ("--net", "--out") or a.startswith(("--net=", "--out=")) for a in arguments):
        parser.error("--net and --out are set by this script")
    out = Path(args.out)
    rows = {net: run(net, arguments, out / net) for net in ("mininet", "sim")}
    print(f"\n{'algo':6} {'mininet s':>10} {'sim s':>10} {'mininet/sim':>12} {'model s':>10} "
          f"{'mn/model':>9} {'sim/model':>9}  correct (mininet, sim)")
    worst = 0.0
    for algo, sim in rows["sim"].items():
        mn = rows["mininet"].get(algo)
        if mn is None:
            continue
        t_mn, t_sim = float(mn["time_s"] or "nan"), float(sim["time_s"] or "nan")
        model = float(sim["model_time_s"] or "nan")
        worst = max(worst, abs(t_mn / t_sim - 1))
        print(f"{algo:6} {t_mn:10.3f} {t_sim:10.3f} {t_mn / t_sim:12.3f} {model:10.3f} "
              f"{t_mn / model:9.3f} {t_sim / model:9.3f}  {mn['correct']}, {sim['correct']}")
    print(f"largest Mininet/simulator difference: {worst * 100:.1f} %")
    return 0


if __name__ == "__main__":
    sys.exit(main())
