"""INA against the host ring: all-reduce time per worker count, on the same network per run.

    .venv/bin/python scripts/bench_allreduce.py [--workers 2 4 8] [--size-mib 4] [--net sim]
                                                [--loss 0] [--elems 256] [--out DIR]

For each worker count, one `inaemu run` experiment (INA then ring on the same network: the
simulator by default, `--net mininet` as root) and prints the time ratio ring/INA next to the
bandwidth-optimal ratio 2(N−1)/N: a ring moves 2(N−1)/N times the vector per host, INA once, so
on a network where the links are the bottleneck the ratio tends to that number. Below it, the
aggregating switch (or the hosts' packet rate) limits INA; above it, something else limits the
ring. Every run's files go under DIR/workers-N/. Nothing is asserted or timed against a limit.
"""

from __future__ import annotations

import argparse
import os
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from inaemu.experiment.config import ConfigError, RunConfig  # noqa: E402
from inaemu.experiment.runner import run_experiment  # noqa: E402

MIB = 1024 * 1024


def optimal_ratio(n: int) -> float:
    """Bytes a ring all-reduce sends per host over those INA sends: 2(n−1)/n."""
    return 2 * (n - 1) / n


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--workers", type=int, nargs="+", default=[2, 4, 8])
    parser.add_argument("--size-mib", type=float, default=4.0)
    parser.add_argument("--net", choices=("sim", "mininet"), default="sim")
    parser.add_argument("--loss", type=float, default=0.0)
    parser.add_argument("--bw", type=float, default=None, help="Mbit/s per link")
    parser.add_argument("--elems", type=int, default=256)
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--timeout", type=float, default=300.0)
    parser.add_argument("--out", type=Path,
                        default=Path("out") / time.strftime("bench-%Y%m%d-%H%M%S", time.gmtime()))
    args = parser.parse_args(argv)
    if args.net == "mininet" and os.geteuid() != 0:
        print("bench_allreduce: Mininet needs root; try --net sim", file=sys.stderr)
        return 2
    rows = []
    for n in args.workers:
        try:
            cfg = RunConfig(workers=n, size_bytes=int(args.size_mib * MIB) // 4 * 4,
                            loss=args.loss, bw_mbps=args.bw, elems_k=args.elems,
                            seed=args.seed, net=args.net, timeout=args.timeout)
        except ConfigError as error:
            print(f"bench_allreduce: error: {error}", file=sys.stderr)
            return 2
        print(f"bench: {n} workers, {args.size_mib:g} MiB each, {args.net}, loss {args.loss:g}%",
              flush=True)
        outcome = run_experiment(cfg, args.out / f"workers-{n}",
                                 progress=lambda line: print(f"  {line}", flush=True))
        by_algo = {s["algo"]: s for s in outcome.summaries}
        ina, ring = by_algo["ina"], by_algo["ring"]
        ratio = (ring["time_s"] / ina["time_s"]) if ina["time_s"] and ring["time_s"] else None
        rows.append((n, ina, ring, ratio))
        print(f"bench: {n} workers: ina {_s(ina['time_s'])}, ring {_s(ring['time_s'])}, "
              f"ring/ina {_r(ratio)} (bandwidth-optimal {optimal_ratio(n):.2f})", flush=True)
    print()
    print(f"all-reduce of {args.size_mib:g} MiB per worker on {args.net}, loss {args.loss:g}%, "
          f"k={args.elems}")
    print(f"{'N':>3}  {'ina s':>9}  {'ring s':>9}  {'ring/ina':>8}  {'2(N-1)/N':>8}  "
          f"{'ina busbw':>10}  {'ring busbw':>10}  correct")
    for n, ina, ring, ratio in rows:
        print(f"{n:>3}  {_s(ina['time_s']):>9}  {_s(ring['time_s']):>9}  {_r(ratio):>8}  "
              f"{optimal_ratio(n):>8.2f}  {_g(ina['busbw_gbps']):>10}  "
              f"{_g(ring['busbw_gbps']):>10}  "
              f"{'yes' if ina['correct'] and ring['correct'] else 'NO'}")
    print(f"\nbusbw in Gbit/s; files under {args.out}")
    return 0 if all(ina["correct"] and ring["correct"] for _, ina, ring, _ in rows) else 1


def _s(value) -> str:
    return "-" if value is None else f"{value:.4f}"


def _r(value) -> str:
    return "-" if value is None else f"{value:.2f}"


def _g(value) -> str:
    return "-" if value is None else f"{value:.4f}"


if __name__ == "__main__":
    sys.exit(main())
