"""`inaemu compare`: every algorithm over a range of sizes and worker counts, one chart.

Each (worker count, size) point is one `inaemu run` experiment (same options: --net, --topo,
--bw, --loss, ...; `--algo` defaults to all) in OUT/n<N>-<bytes>/. The command then writes
OUT/compare.json and OUT/compare.csv (every summary: measured time, model time, busbw) and
OUT/compare.png: per worker count, time vs size and busbw vs size (log scales), one colour per
algorithm, the measurements as markers and the cost model (docs/model.md) as lines.
Exit status 0 when every result is correct, 1 otherwise, 2 for a bad argument.

`--dask ADDRESS` / `--dask local[:N]` / `--parallel N` run each point as a task on a Dask
cluster (inaemu/distributed.py, docs/cluster.md); the rows keep the serial order, so the files
are the serial run's. Mininet points run one per server.
"""

from __future__ import annotations

import argparse
import csv
import json
import os
import sys
import time
from pathlib import Path

KIB = 1024
COMPARE_FIELDS = ("algo", "workers", "size_bytes", "time_s", "model_time_s",
                  "measured_over_model", "busbw_gbps", "model_busbw_gbps", "correct", "error")


def _int_list(text: str) -> list[int]:
    try:
        values = [int(v) for v in text.split(",") if v]
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected numbers separated by commas, got {text!r}") \
            from None
    if not values or min(values) <= 0:
        raise argparse.ArgumentTypeError(f"expected positive numbers, got {text!r}")
    return values


def add_arguments(parser: argparse.ArgumentParser) -> None:
    from inaemu import run as run_command
    run_command.add_arguments(parser)
    parser.set_defaults(algo="all")
    parser.add_argument("--sizes-kib", type=_int_list, default=[64, 256, 1024, 4096],
                        metavar="LIST", help="sizes per worker in KiB, comma-separated "
                        "(default 64,256,1024,4096)")
    parser.add_argument("--worker-counts", type=_int_list, default=None, metavar="LIST",
                        help="worker counts, comma-separated (default: --workers, or what "
                             "the topology gives)")
    parser.add_argument("--dask", metavar="local[:N]|ADDRESS", default=None,
                        help="run each point as a task on a Dask cluster: a scheduler address, "
                             "or local[:N] for a LocalCluster of N processes (default: serial)")
    parser.add_argument("--parallel", type=int, default=1, metavar="N",
                        help="N > 1: a LocalCluster of N processes (same as --dask local:N)")


def run(args: argparse.Namespace) -> int:
    from inaemu.distributed import DaskError, target_from
    from inaemu.experiment.config import ConfigError
    from inaemu.run import config_from
    try:
        base = config_from(args)
        counts = args.worker_counts or [base.workers]
        configs = [base.with_(workers=n, size_bytes=kib * KIB)
                   for n in counts for kib in args.sizes_kib]
        target = target_from(args.dask, args.parallel)
    except (ConfigError, DaskError) as error:
        print(f"inaemu compare: error: {error}", file=sys.stderr)
        return 2
    if base.net == "mininet" and os.geteuid() != 0:
        print("inaemu compare: Mininet needs root; try --net sim", file=sys.stderr)
        return 2
    out = (args.out or Path("out") / time.strftime("compare-%Y%m%d-%H%M%S", time.gmtime()))
    out = out.resolve()
    out.mkdir(parents=True, exist_ok=True)
    if target is None:
        rows = []
        for cfg in configs:
            print(f"compare: {cfg.workers} workers, {cfg.size_bytes} bytes, "
                  f"{', '.join(cfg.algos)}", flush=True)
            rows += compare_point((cfg, out), lambda line: print(line, flush=True)
                                  if not line.startswith("sim:") else None)
    else:
        try:
            rows = on_cluster(configs, out, target)
        except DaskError as error:
            print(f"inaemu compare: error: {error}", file=sys.stderr)
            return 2
    write_compare(out, rows)
    print(table(rows))
    print(f"results in {out}: compare.json, compare.csv, compare.png")
    if not all(r["correct"] for r in rows):
        print("inaemu compare: not every result is correct", file=sys.stderr)
        return 1
    return 0


def compare_point(point: tuple, progress=None) -> list[dict]:
    """One (config, out dir) point: its experiment in OUT/n<N>-<bytes>/, its compare rows. A
    module-level function, so a Dask worker can run it."""
    from inaemu.experiment.runner import run_experiment
    cfg, out = point
    outcome = run_experiment(cfg, out / f"n{cfg.workers}-{cfg.size_bytes}",
                             progress or (lambda line: None))
    return [row_of(s) for s in outcome.summaries]


def on_cluster(configs: list, out: Path, target) -> list[dict]:
    """Every point as a Dask task (Mininet ones one per server); rows in the serial order."""
    from inaemu.distributed import map_points
    print(f"compare: {len(configs)} points on {target.describe()}", flush=True)

    def done(index: int, rows: list[dict]) -> None:
        cfg = configs[index]
        print(f"compare: [{index + 1}/{len(configs)}] {cfg.workers} workers, "
              f"{cfg.size_bytes} bytes: {len(rows)} results, "
              f"{'correct' if all(r['correct'] for r in rows) else 'NOT all correct'}",
              flush=True)
    per_point = map_points(compare_point, [(cfg, out) for cfg in configs], target,
                           mininet=configs[0].net == "mininet", done=done)
    return [row for rows in per_point for row in rows]


def row_of(summary: dict) -> dict:
    from inaemu.experiment.summary import algbw_gbps, busbw_gbps
    model = summary.get("model_time_s")
    row = {k: summary.get(k) for k in COMPARE_FIELDS}
    row["model_busbw_gbps"] = busbw_gbps(algbw_gbps(summary["size_bytes"], model),
                                         summary["workers"]) if model else None
    return row


def write_compare(out: Path, rows: list[dict]) -> None:
    (out / "compare.json").write_text(json.dumps(rows, indent=2) + "\n")
    with (out / "compare.csv").open("w", newline="") as f:
        writer = csv.DictWriter(f, fieldnames=COMPARE_FIELDS)
        writer.writeheader()
        for row in rows:
            writer.writerow({k: "" if row.get(k) is None else row[k] for k in COMPARE_FIELDS})
    plot(rows, out / "compare.png")


def table(rows: list[dict]) -> str:
    lines = [f"{'algo':7s} {'n':>3s} {'size':>10s} {'time s':>9s} {'model s':>9s} "
             f"{'meas/model':>10s} {'busbw Gb/s':>10s} correct"]
    for r in rows:
        def num(v, fmt):
            return "-" if v is None else format(v, fmt)
        lines.append(f"{r['algo']:7s} {r['workers']:3d} {r['size_bytes']:10d} "
                     f"{num(r['time_s'], '9.4f')} {num(r['model_time_s'], '9.4f')} "
                     f"{num(r['measured_over_model'], '10.3f')} {num(r['busbw_gbps'], '10.4f')} "
                     f"{'yes' if r['correct'] else 'NO'}")
    return "\n".join(lines)


def plot(rows: list[dict], path: Path) -> None:
    import matplotlib
    matplotlib.use("Agg")
    from matplotlib import pyplot

    from inaemu.experiment.output import ALGO_COLOURS
    counts = sorted({r["workers"] for r in rows})
    figure, axes = pyplot.subplots(len(counts), 2, figsize=(12, 4 * len(counts)), squeeze=False)
    for (times, buses), n in zip(axes, counts):
        mine = [r for r in rows if r["workers"] == n]
        for algo in dict.fromkeys(r["algo"] for r in mine):
            points = sorted((r for r in mine if r["algo"] == algo), key=lambda r: r["size_bytes"])
            sizes = [r["size_bytes"] for r in points]
            colour = ALGO_COLOURS.get(algo, "tab:gray")
            for axis, measured, model in ((times, "time_s", "model_time_s"),
                                          (buses, "busbw_gbps", "model_busbw_gbps")):
                axis.plot(sizes, [r[measured] or float("nan") for r in points], "o",
                          color=colour, label=f"{algo}")
                axis.plot(sizes, [r[model] or float("nan") for r in points], "-",
                          color=colour, alpha=0.7)
        times.set(xscale="log", yscale="log", xlabel="bytes per worker", ylabel="time (s)",
                  title=f"{n} workers: time (markers measured, lines model)")
        buses.set(xscale="log", xlabel="bytes per worker", ylabel="busbw (Gbit/s)",
                  title=f"{n} workers: bus bandwidth")
        times.legend(fontsize="small")
    figure.tight_layout()
    figure.savefig(path, dpi=80)
    pyplot.close(figure)
