"""Sweeps of all-reduce experiments on the simulated network, with the analytic time beside each.

    .venv/bin/python scripts/sweep.py --sweep workers|size|loss|tree|jobs [--net sim]
        [--topo fat-tree|leaf-spine|star] [--fat-k 4] [--leaves 2 --spines 2 --hosts-per-leaf 4]
        [--hosts 8] [--points 2,4,8] [--workers N] [--size BYTES] [--loss PCT] [--bw MBPS]
        [--elems K] [--pool-size P] [--rto S] [--seed S] [--time-limit S] [--out DIR]
        [--dask local[:N]|ADDRESS] [--parallel N]

One sweep varies one thing; every point is one `inaemu.sim.simulate` run per series:

| sweep   | x                         | series                     |
|---------|---------------------------|----------------------------|
| workers | workers (spread over the topology's hosts) | ina-tree, ring |
| size    | bytes per worker          | ina-tree, ring             |
| loss    | percent on every link     | ina-tree, ring             |
| tree    | workers                   | ina-tree, ina-flat (single switch: the tree's root) |
| jobs    | concurrent jobs (all hosts, interleaved) | ina-tree    |

Writes DIR/sweep-<name>.csv (one row per run) and DIR/sweep-<name>.png (measured time with the
bandwidth-optimal time and the switch bound beside it, and the bytes on inter-switch links),
prints a progress line per run and a summary table. The model is in docs/trees.md. Exit status:
0 when every run finished correct, 1 when one did not, 2 for a bad argument.

`--dask ADDRESS` runs every run as a task on that Dask scheduler, `--dask local[:N]` (or
`--parallel N`) on a LocalCluster of N processes (inaemu/distributed.py, docs/cluster.md); the
rows, and so the CSV, are those of the serial run but for `wall_s`.
"""

from __future__ import annotations

import argparse
import csv
import math
import sys
from collections import Counter
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from controller.errors import ControllerError  # noqa: E402
from controller.trees import choose_root, choose_roots, tree_shape  # noqa: E402
from inaemu.distributed import (DaskError, map_points, pickle_module_by_value,  # noqa: E402
                                target_from)
from inaemu.sim import (InaOptions, SimError, SimJob, SimTimeLimit, SwitchCost,  # noqa: E402
                        simulate)
from topologies.builders import fat_tree, leaf_spine, star  # noqa: E402
from topologies.model import Topology, TopologyError  # noqa: E402

SWEEPS = {"workers": ("ina-tree", "ring"), "size": ("ina-tree", "ring"),
          "loss": ("ina-tree", "ring"), "tree": ("ina-tree", "ina-flat"), "jobs": ("ina-tree",)}
DEFAULT_POINTS = {"workers": "2,4,8,16", "size": "4096,16384,65536", "loss": "0,1,5",
                  "tree": "4,8,16", "jobs": "1,2,4"}
COLUMNS = ("sweep", "x", "series", "topology", "workers", "jobs", "size_bytes", "loss_percent",
           "elems_k", "bw_mbps", "tree_depth", "time_s", "analytic_bw_s", "analytic_switch_s",
           "algbw_MBps", "busbw_MBps", "correct", "retransmissions", "inter_switch_bytes",
           "wall_s", "error")
INA_HEADERS = 14 + 20 + 8 + 16        # Ethernet, IPv4, UDP, INA header
TCP_MSS, TCP_FRAME = 1448, 1448 + 54  # the simulator's TCP segments (docs/sim.md)


class SweepError(Exception):
    """A bad sweep argument; the message says which and why."""


# -- the analytic model (docs/trees.md) -----------------------------------------------------------

def ina_chunks(size_bytes: int, k: int) -> int:
    return math.ceil(size_bytes / 4 / k)


def ina_wire_bytes(size_bytes: int, k: int) -> int:
    """Frame bytes one worker sends for one all-reduce: every chunk and the MAX round's packet."""
    return (ina_chunks(size_bytes, k) + 1) * (INA_HEADERS + 4 * k)


def ring_time(size_bytes: int, n: int, bw_bytes_s: float) -> float:
    """Bandwidth-optimal ring: each host sends 2(n−1)/n · S in full TCP frames."""
    return 2 * (n - 1) / n * size_bytes * TCP_FRAME / TCP_MSS / bw_bytes_s if n > 1 else 0.0


def ina_time(size_bytes: int, k: int, bw_bytes_s: float, busiest_link: int) -> float:
    """INA: each worker's link carries S plus headers once each way; a link shared by `busiest_link`
    aggregates (jobs sharing a tree edge, or workers funnelled into one switch) carries that
    many."""
    return busiest_link * ina_wire_bytes(size_bytes, k) / bw_bytes_s


def tree_load(topology: Topology, jobs: list[tuple[int, tuple[str, ...]]],
              roots: list[str]) -> tuple[Counter, dict]:
    """Per switch (packets, copies) per chunk for tree jobs, and per tree edge how many jobs
    use it."""
    work: Counter = Counter()
    edges: Counter = Counter()
    for (job, workers), root in zip(jobs, roots):
        shape = tree_shape(topology, job, workers, root)
        for switch in shape.order:
            m = len(shape.members[switch])
            child = shape.parent[switch] is not None
            work[(switch, "packets")] += m + child   # members' packets, the parent's result
            work[(switch, "copies")] += m + child    # the multicast, the partial sent up
            if child:
                edges[(switch, shape.parent[switch])] += 1
    return work, edges


def flat_load(topology: Topology, workers: tuple[str, ...], root: str) -> tuple[Counter, dict]:
    """Per switch (packets, copies) per chunk with every worker aggregated at `root`, and per link
    (either direction) how many workers' packets cross it."""
    work: Counter = Counter()
    links: Counter = Counter()
    for host in workers:
        path = topology.shortest_path(host, root)
        for a, b in zip(path, path[1:]):
            links[(a, b)] += 1
        for switch in path[1:-1]:                      # transit: the contribution and the result
            work[(switch, "packets")] += 2
            work[(switch, "copies")] += 2
        work[(root, "packets")] += 1
        work[(root, "copies")] += 1                   # its replica of the multicast
    return work, links


def switch_time(work: Counter, chunks: int, cost: SwitchCost, frame: int) -> float:
    """The busiest switch's service time for every chunk and the MAX round."""
    per_chunk = max((work[(s, "packets")] * (cost.per_packet_s + cost.per_byte_s * frame)
                     + work[(s, "copies")] * cost.per_copy_s)
                    for s in {s for s, _ in work})
    return (chunks + 1) * per_chunk


# -- runs -----------------------------------------------------------------------------------------

@dataclass(frozen=True)
class Run:
    sweep: str
    x: float
    series: str
    workers: int
    jobs: int
    size_bytes: int
    loss: float


def build_topology(args) -> Topology:
    try:
        if args.topo == "fat-tree":
            return fat_tree(args.fat_k)
        if args.topo == "leaf-spine":
            return leaf_spine(args.leaves, args.spines, args.hosts_per_leaf)
        return star(args.hosts)
    except TopologyError as error:
        raise SweepError(f"--topo {args.topo}: {error}") from None


def spread(hosts: list[str], n: int) -> tuple[str, ...]:
    """n hosts spread evenly over the topology's hosts (so trees span several switches)."""
    return tuple(hosts[i * len(hosts) // n] for i in range(n))


def parse_points(text: str, sweep: str) -> list[float]:
    try:
        points = [float(p) for p in text.split(",") if p.strip()]
    except ValueError:
        raise SweepError(f"--points: expected numbers separated by commas, got {text!r}") from None
    if not points:
        raise SweepError("--points: no points")
    if sweep != "loss" and any(p != int(p) or p < 1 for p in points):
        raise SweepError(f"--points: a {sweep} sweep takes whole numbers >= 1, got {text!r}")
    if sweep == "loss" and any(not 0 <= p < 100 for p in points):
        raise SweepError(f"--points: loss must be a percentage in [0, 100), got {text!r}")
    return points


def plan_runs(args, hosts: int) -> list[Run]:
    points = parse_points(args.points or DEFAULT_POINTS[args.sweep], args.sweep)
    runs = []
    for x in points:
        workers, jobs, size, loss = args.workers or hosts, 1, args.size, args.loss
        if args.sweep in ("workers", "tree"):
            workers = int(x)
        elif args.sweep == "size":
            size = int(x)
        elif args.sweep == "loss":
            loss = x
        else:
            jobs = int(x)
        if workers > hosts or workers < 1:
            raise SweepError(f"{workers} workers: the topology has {hosts} hosts")
        if workers < jobs:
            raise SweepError(f"{jobs} jobs need at least as many workers, have {workers}")
        if size < 4:
            raise SweepError(f"size {size}: at least 4 bytes (one float32)")
        runs += [Run(args.sweep, x, series, workers, jobs, size, loss)
                 for series in SWEEPS[args.sweep]]
    return runs


def job_list(topology: Topology, run: Run) -> list[tuple[int, tuple[str, ...]]]:
    chosen = spread([h.name for h in topology.hosts], run.workers)
    return [(j + 1, chosen[j::run.jobs]) for j in range(run.jobs)]


def execute(topology: Topology, run: Run, args) -> dict:
    jobs = job_list(topology, run)
    bw = args.bw * 1e6 / 8
    cost = SwitchCost() if args.switch_pps is None else SwitchCost.from_pps(args.switch_pps)
    frame = INA_HEADERS + 4 * args.elems
    chunks = ina_chunks(run.size_bytes, args.elems)
    depth = ""
    if run.series == "ring":
        sim_jobs = [SimJob(job, workers) for job, workers in jobs]
        analytic = ring_time(run.size_bytes, run.workers // run.jobs, bw)
        bound = float("nan")
    elif run.series == "ina-flat":
        sim_jobs = [SimJob(job, workers, choose_root(topology, workers)) for job, workers in jobs]
        loads = [flat_load(topology, j.workers, j.switch) for j in sim_jobs]
        work = sum((w for w, _ in loads), Counter())
        links = sum((l for _, l in loads), Counter())
        analytic = ina_time(run.size_bytes, args.elems, bw, max(links.values(), default=1))
        bound = switch_time(work, chunks, cost, frame)
        depth = 1
    else:
        roots = choose_roots(topology, jobs)
        sim_jobs = [SimJob(job, workers, root, hierarchical=True)
                    for (job, workers), root in zip(jobs, roots)]
        work, edges = tree_load(topology, jobs, roots)
        analytic = ina_time(run.size_bytes, args.elems, bw, max(edges.values(), default=1))
        bound = switch_time(work, chunks, cost, frame)
        depth = max(tree_shape(topology, job, workers, root).depth
                    for (job, workers), root in zip(jobs, roots))
    error = ""
    try:
        result = simulate(topology, sim_jobs, algo="ring" if run.series == "ring" else "ina",
                          size_bytes=run.size_bytes, elems_k=args.elems, seed=args.seed,
                          loss=run.loss, bw=args.bw, switch_cost=cost,
                          time_limit=args.time_limit,
                          ina=InaOptions(pool_size=args.pool_size, rto=args.rto))
    except SimTimeLimit as limit:
        result, error = limit.result, str(limit)
    times = [r.time_s for r in result.records]
    finished = all(t is not None for t in times)
    time_s = max(times) if finished and times else float("nan")
    n = run.workers // run.jobs
    algbw = run.size_bytes / time_s / 1e6 if finished and time_s > 0 else float("nan")
    hosts = {h.name for h in topology.hosts}
    inter = sum(l["delivered_bytes"] for l in result.links
                if l["src"].split(":")[0] not in hosts and l["dst"].split(":")[0] not in hosts)
    errors = [r.error for r in result.records if r.error]
    return {"sweep": run.sweep, "x": run.x, "series": run.series, "topology": topology.name,
            "workers": run.workers, "jobs": run.jobs, "size_bytes": run.size_bytes,
            "loss_percent": run.loss, "elems_k": args.elems, "bw_mbps": args.bw,
            "tree_depth": depth, "time_s": time_s, "analytic_bw_s": analytic,
            "analytic_switch_s": bound, "algbw_MBps": algbw,
            "busbw_MBps": algbw * 2 * (n - 1) / n if n > 1 else algbw,
            "correct": result.correct and not error, "retransmissions":
            sum(r.retransmissions for r in result.records), "inter_switch_bytes": inter,
            "wall_s": round(result.wall_s, 3), "error": error or (errors[0] if errors else "")}


# -- output ---------------------------------------------------------------------------------------

def write_csv(rows: list[dict], path: Path) -> None:
    with path.open("w", newline="") as f:
        writer = csv.DictWriter(f, fieldnames=COLUMNS)
        writer.writeheader()
        writer.writerows(rows)


def plot(rows: list[dict], sweep: str, path: Path) -> None:
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    labels = {"workers": "workers", "size": "bytes per worker", "loss": "loss per link (%)",
              "tree": "workers", "jobs": "concurrent jobs"}
    figure, (times, traffic) = plt.subplots(1, 2, figsize=(11, 4.2))
    for i, series in enumerate(dict.fromkeys(r["series"] for r in rows)):
        mine = [r for r in rows if r["series"] == series]
        xs = [r["x"] for r in mine]
        color = f"C{i}"
        times.plot(xs, [r["time_s"] for r in mine], "o-", color=color, label=f"{series} measured")
        times.plot(xs, [r["analytic_bw_s"] for r in mine], "--", color=color,
                   label=f"{series} bandwidth-optimal")
        if not all(math.isnan(r["analytic_switch_s"]) for r in mine):
            times.plot(xs, [r["analytic_switch_s"] for r in mine], ":", color=color,
                       label=f"{series} switch bound")
        traffic.plot(xs, [r["inter_switch_bytes"] for r in mine], "o-", color=color,
                     label=series)
    times.set(xlabel=labels[sweep], ylabel="all-reduce time (virtual s)", yscale="log",
              title=f"sweep {sweep}: time")
    traffic.set(xlabel=labels[sweep], ylabel="bytes on inter-switch links",
                title="cross-tier traffic")
    if sweep == "size":
        times.set_xscale("log")
        traffic.set_xscale("log")
    times.legend(fontsize=7)
    traffic.legend(fontsize=7)
    figure.tight_layout()
    figure.savefig(path, dpi=100)
    plt.close(figure)


def summary(rows: list[dict]) -> str:
    head = f"{'x':>8} {'series':<9} {'time_s':>10} {'bw-opt_s':>10} {'switch_s':>10} " \
           f"{'ratio':>6} {'inter-switch B':>14} {'retx':>6} correct"
    lines = [head, "-" * len(head)]
    for r in rows:
        ratio = r["time_s"] / r["analytic_bw_s"] if r["analytic_bw_s"] else float("nan")
        lines.append(f"{r['x']:>8g} {r['series']:<9} {r['time_s']:>10.5f} "
                     f"{r['analytic_bw_s']:>10.5f} {r['analytic_switch_s']:>10.5f} {ratio:>6.2f} "
                     f"{r['inter_switch_bytes']:>14} {r['retransmissions']:>6} {r['correct']}")
    return "\n".join(lines)


def parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--sweep", choices=tuple(SWEEPS), required=True)
    p.add_argument("--net", choices=("sim",), default="sim",
                   help="only the simulator (Mininet sweeps: run `inaemu run` per point)")
    p.add_argument("--topo", choices=("fat-tree", "leaf-spine", "star"), default="fat-tree")
    p.add_argument("--fat-k", type=int, default=4)
    p.add_argument("--leaves", type=int, default=2)
    p.add_argument("--spines", type=int, default=2)
    p.add_argument("--hosts-per-leaf", type=int, default=4)
    p.add_argument("--hosts", type=int, default=8, help="star: hosts")
    p.add_argument("--points", help="the x values, comma-separated (default per sweep)")
    p.add_argument("--workers", type=int, help="workers when not swept (default: every host)")
    p.add_argument("--size", type=int, default=16384, help="bytes per worker when not swept")
    p.add_argument("--loss", type=float, default=0.0, help="percent when not swept")
    p.add_argument("--bw", type=float, default=100.0, help="Mbit/s on every link")
    p.add_argument("--elems", type=int, default=32, help="values per INA packet (k)")
    p.add_argument("--pool-size", type=int, default=64)
    p.add_argument("--rto", type=float, default=0.02)
    p.add_argument("--switch-pps", type=float, help="switch speed (default: the sim's cost)")
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--time-limit", type=float, default=120.0, help="virtual seconds per run")
    p.add_argument("--out", type=Path, default=Path("sweeps"))
    p.add_argument("--dask", metavar="local[:N]|ADDRESS",
                   help="run each point as a task on a Dask cluster (default: serial)")
    p.add_argument("--parallel", type=int, default=1, metavar="N",
                   help="N > 1: a local Dask cluster of N processes (same as --dask local:N)")
    return p


def progress_line(number: int, total: int, run: Run, row: dict) -> str:
    return (f"[{number}/{total}] {run.sweep}={run.x:g} {run.series}: "
            f"{row['time_s']:.5f} s virtual (bandwidth-optimal "
            f"{row['analytic_bw_s']:.5f} s), {row['inter_switch_bytes']} inter-switch "
            f"bytes, {'correct' if row['correct'] else 'NOT correct'}"
            f"{' — ' + row['error'] if row['error'] else ''}, {row['wall_s']} s wall")


class Point:
    """One run as a Dask task: picklable, the topology and options travel with it."""

    def __init__(self, topology: Topology, args):
        self.topology, self.args = topology, args

    def __call__(self, run: Run) -> dict:
        return execute(self.topology, run, self.args)


def run_all(topology: Topology, runs: list[Run], args) -> list[dict]:
    """Every run, serially here or as tasks on a Dask cluster; rows in the runs' order."""
    target = target_from(args.dask, args.parallel)
    if target is None:
        rows = []
        for number, run in enumerate(runs, start=1):
            rows.append(execute(topology, run, args))
            print(progress_line(number, len(runs), run, rows[-1]), flush=True)
        return rows
    print(f"sweep: {len(runs)} runs on {target.describe()}", flush=True)
    pickle_module_by_value(__name__)
    return map_points(Point(topology, args), runs, target, done=lambda i, row: print(
        progress_line(i + 1, len(runs), runs[i], row), flush=True))


def main(argv: list[str] | None = None) -> int:
    args = parser().parse_args(argv)
    try:
        if args.bw <= 0 or args.switch_pps is not None and args.switch_pps <= 0:
            raise SweepError("--bw and --switch-pps must be positive")
        topology = build_topology(args)
        runs = plan_runs(args, len(topology.hosts))
        args.out.mkdir(parents=True, exist_ok=True)
        rows = run_all(topology, runs, args)
    except (SweepError, SimError, ControllerError, OSError, DaskError) as error:
        print(f"sweep: error: {error}", file=sys.stderr)
        return 2
    csv_path = args.out / f"sweep-{args.sweep}.csv"
    png_path = args.out / f"sweep-{args.sweep}.png"
    write_csv(rows, csv_path)
    plot(rows, args.sweep, png_path)
    print(summary(rows))
    print(f"wrote {csv_path} and {png_path}")
    return 0 if all(r["correct"] for r in rows) else 1


if __name__ == "__main__":
    sys.exit(main())
