"""Sharing one switch's aggregator memory among jobs that come and go (issue 31): static slices,
the hashed shared pool (docs/protocol.md §3.3) and the host ring, on the same timeline.

N jobs of n workers arrive as a Poisson process on a leaf-spine (or a fat-tree), each doing a
few all-reduces, all aggregated on one switch (`--switch`, default the first spine) whose
memory for aggregation is `--pool-ratio` times smaller than the jobs' windows together:

* **static**: today's slices: each job holds W / ratio slots (its window) for its whole life;
* **hashed**: every job's window is W slots, its chunks hash into one shared pool of
  N·W / ratio pairs (rounded down to a prime), those that find their cell taken go to the
  job's host aggregator;
* **ring**: every job all-reduces over a TCP ring instead.

Per mode it prints the job completion times (arrival to last sum: mean, p99, max), whether
every sum was correct, the share of chunks aggregated on the hosts (hashed), the bytes through
the host aggregators, and the pool's occupancy (mean over the run, sampled every
`--sample-ms`); then the ratios hashed / static measured in this run. `--csv DIR` writes the
per-job times and the occupancy series (jct.csv, occupancy.csv, occupancy.png).

    .venv/bin/python scripts/bench_sharing.py                       # 8 jobs x 4 workers
    .venv/bin/python scripts/bench_sharing.py --loss 1
    .venv/bin/python scripts/bench_sharing.py --topo fat-tree --k 8 --jobs 64 --modes hashed
"""

from __future__ import annotations

import argparse
import csv
import math
import random
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from controller.ina_jobs import shared_pool_pairs  # noqa: E402
from inaemu.scenario import model as m  # noqa: E402
from inaemu.scenario.sim_engine import SimScenario  # noqa: E402

OWNER = "MyIngress.ina_owner"


def parse_args(argv=None) -> argparse.Namespace:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--topo", choices=("leaf-spine", "fat-tree"), default="leaf-spine")
    p.add_argument("--leaves", type=int, default=8)
    p.add_argument("--spines", type=int, default=2)
    p.add_argument("--hosts-per-leaf", type=int, default=4)
    p.add_argument("--k", type=int, default=8, help="fat-tree arity")
    p.add_argument("--jobs", type=int, default=8)
    p.add_argument("--workers", type=int, default=4, help="workers per job")
    p.add_argument("--window", type=int, default=32, help="W: a job's window (slots)")
    p.add_argument("--pool-ratio", type=float, default=4.0,
                   help="the jobs' windows together / the switch's memory")
    p.add_argument("--size-kib", type=int, default=256, help="float32 per worker per call")
    p.add_argument("--iterations", type=int, default=3, help="all-reduces per job")
    p.add_argument("--compute-ms", type=float, default=0.0, help="compute before each call")
    p.add_argument("--arrival-ms", type=float, default=20.0,
                   help="mean time between job arrivals (Poisson process)")
    p.add_argument("--loss", type=float, default=0.0, help="percent, every link")
    p.add_argument("--bw-mbps", type=float, default=10000.0)
    p.add_argument("--delay-ms", type=float, default=0.05)
    p.add_argument("--switch-pps", type=float, default=1e6,
                   help="each switch's packet rate (1e6: a hardware switch's regime, where "
                        "memory, not the packet rate, is short)")
    p.add_argument("--host-pps", type=float, default=None,
                   help="a host aggregator's packet rate (default: --switch-pps)")
    p.add_argument("--elems-k", type=int, default=32)
    p.add_argument("--switch", default=None, help="the aggregating switch (default sp1 / c0)")
    p.add_argument("--modes", default="static,hashed,ring")
    p.add_argument("--seed", type=int, default=1)
    p.add_argument("--sample-ms", type=float, default=1.0)
    p.add_argument("--time-limit-s", type=float, default=120.0)
    p.add_argument("--csv", type=Path, default=None)
    args = p.parse_args(argv)
    for name in ("jobs", "workers", "window", "size_kib", "iterations", "elems_k"):
        if getattr(args, name) < 1:
            p.error(f"--{name.replace('_', '-')} must be at least 1")
    if args.pool_ratio < 1:
        p.error("--pool-ratio must be at least 1")
    if args.window / args.pool_ratio < 1:
        p.error("--window / --pool-ratio must leave a static slice of at least 1 slot")
    bad = set(args.modes.split(",")) - {"static", "hashed", "ring"}
    if bad:
        p.error(f"--modes: unknown {', '.join(sorted(bad))} (static, hashed, ring)")
    return args


def network(args) -> m.Network:
    link = dict(bw_mbps=args.bw_mbps, delay_ms=args.delay_ms, loss_percent=args.loss)
    if args.topo == "fat-tree":
        return m.Network("fat-tree", k=args.k, **link)
    return m.Network("leaf-spine", leaves=args.leaves, spines=args.spines,
                     hosts_per_leaf=args.hosts_per_leaf, **link)


def job_hosts(args, hosts: list[str]) -> list[tuple[str, ...]]:
    """Disjoint hosts per job, a job's workers spread over the network (worker i of job j is
    host j + i·N): one job per host, as scenarios require."""
    need = args.jobs * args.workers
    if need > len(hosts):
        sys.exit(f"bench_sharing: {args.jobs} jobs x {args.workers} workers need {need} hosts, "
                 f"the network has {len(hosts)}")
    return [tuple(hosts[j + i * args.jobs] for i in range(args.workers))
            for j in range(args.jobs)]


def arrivals(args) -> list[float]:
    rng = random.Random(args.seed)
    t, times = 0.0, []
    for _ in range(args.jobs):
        times.append(t)
        t += rng.expovariate(1.0 / (args.arrival_ms / 1000.0))
    return times


def scenario(args, mode: str, net: m.Network) -> tuple[m.Scenario, dict]:
    topology = net.topology()
    switch = args.switch or ("c0" if args.topo == "fat-tree" else "sp1")
    hosts = [h.name for h in topology.hosts]
    slice_slots = max(1, int(args.window / args.pool_ratio))
    pairs = shared_pool_pairs(max(1, int(args.jobs * args.window / args.pool_ratio)))
    pool = args.window if mode == "hashed" else slice_slots
    options = m.Options(seed=args.seed, elems_k=args.elems_k, pool_size=pool,
                        time_limit_s=args.time_limit_s, switch_pps=args.switch_pps,
                        host_pps=args.host_pps,
                        sharing="hashed" if mode == "hashed" else "static",
                        shared_pairs=pairs if mode == "hashed" else None,
                        aggregation="single")
    jobs = tuple(
        m.Job(f"j{j}", "ring" if mode == "ring" else "ina", workers,
              m.Workload(args.size_kib * 1024, args.iterations, args.compute_ms / 1000.0),
              start, None, switch)
        for j, (workers, start) in enumerate(zip(job_hosts(args, hosts), arrivals(args))))
    memory = {"switch": switch, "slice_slots": slice_slots, "pairs": pairs,
              "pool_cells": 2 * pairs if mode == "hashed" else 2 * slice_slots * args.jobs}
    return m.Scenario(net, jobs, (), options, f"sharing-{mode}"), memory


class Occupancy:
    """Samples, every `every_s` of virtual time while jobs run, the share of the memory in use:
    hashed, the shared pool's cells owned by a chunk; static, the slices of the jobs placed."""

    def __init__(self, engine: SimScenario, mode: str, memory: dict, every_s: float):
        self.engine, self.mode, self.memory, self.every_s = engine, mode, memory, every_s
        self.series: list[tuple[float, float]] = []
        engine.loop.at(0.0, self.sample)

    def sample(self) -> None:
        engine = self.engine
        if all(run.state in ("done", "failed") for run in engine.runs):
            return
        self.series.append((engine.now(), self.used()))
        engine.loop.at(engine.now() + self.every_s, self.sample)

    def used(self) -> float:
        cells = self.memory["pool_cells"]
        if self.mode == "hashed":
            control = self.engine.control
            if control is None:
                return 0.0
            switch = self.engine.net.switches[self.memory["switch"]].switch
            shared = control.shared_pool(self.memory["switch"])
            if shared is None:
                return 0.0
            base, pairs = shared
            owners = switch.register_read_all(OWNER)[base:base + 2 * pairs]
            return sum(1 for tag in owners if tag) / cells
        if self.mode == "ring":
            return 0.0                     # the ring uses no aggregator
        live = sum(1 for run in self.engine.runs if run.state == "running")
        return live * 2 * self.memory["slice_slots"] / cells

    def mean(self) -> float:
        return sum(v for _, v in self.series) / len(self.series) if self.series else 0.0


def percentile(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, max(0, math.ceil(q * len(ordered)) - 1))]


def run_mode(args, mode: str) -> dict:
    net = network(args)
    scn, memory = scenario(args, mode, net)
    started = time.perf_counter()
    engine = SimScenario(scn)
    occupancy = Occupancy(engine, mode, memory, args.sample_ms / 1000.0)
    engine.run()
    jct, correct = {}, True
    for run in engine.runs:
        ok = run.state == "done" and all(it.correct for it in run.iterations) and \
            len(run.iterations) == args.iterations
        correct &= ok
        jct[run.job.name] = (run.ended_s - run.job.start_s) if run.ended_s is not None \
            else float("nan")
    host_chunks = host_bytes = 0
    for run in engine.runs:
        for server in getattr(run, "host_aggregators", ()):
            host_chunks += server.aggregator.counters.results_multicast
            host_bytes += server.bytes_in + server.bytes_out
    chunks_per_call = math.ceil(args.size_kib * 1024 / 4 / args.elems_k)
    total_chunks = chunks_per_call * args.iterations * args.jobs
    times = [t for t in jct.values() if not math.isnan(t)]
    return {"mode": mode, "jct": jct, "correct": correct,
            "mean": sum(times) / len(times) if times else float("nan"),
            "p99": percentile(times, 0.99) if times else float("nan"),
            "max": max(times) if times else float("nan"),
            "host_share": host_chunks / total_chunks, "host_bytes": host_bytes,
            "occupancy": occupancy.mean(), "series": occupancy.series, "memory": memory,
            "wall_s": time.perf_counter() - started}


def plot_occupancy(results: dict, path: Path) -> None:
    """The memory in use over time, one line per mode (skipped without matplotlib)."""
    try:
        import matplotlib
        matplotlib.use("Agg")
        from matplotlib import pyplot
    except ImportError:
        return
    figure, axes = pyplot.subplots(figsize=(8, 3.5))
    for mode, r in results.items():
        if mode != "ring" and r["series"]:
            times, used = zip(*r["series"])
            axes.step(times, [100 * u for u in used], where="post", label=mode)
    axes.set_xlabel("virtual time (s)")
    axes.set_ylabel("aggregator memory in use (%)")
    axes.set_ylim(0, 105)
    axes.legend()
    figure.tight_layout()
    figure.savefig(path, dpi=120)
    pyplot.close(figure)


def main(argv=None) -> int:
    args = parse_args(argv)
    modes = args.modes.split(",")
    print(f"bench_sharing: {args.jobs} jobs x {args.workers} workers on {args.topo}, "
          f"window {args.window}, memory 1/{args.pool_ratio:g} of the windows, "
          f"{args.iterations} x {args.size_kib} KiB, arrivals every {args.arrival_ms} ms "
          f"(Poisson), loss {args.loss} %, switch {args.switch_pps:g} pps, host aggregator "
          f"{args.host_pps or args.switch_pps:g} pps, compute {args.compute_ms} ms, "
          f"seed {args.seed}",
          flush=True)
    results = {}
    for mode in modes:
        r = results[mode] = run_mode(args, mode)
        mem = r["memory"]
        what = (f"shared pool {mem['pairs']} pairs" if mode == "hashed" else
                f"slices of {mem['slice_slots']} slots" if mode == "static" else "no switch")
        print(f"{mode:7s} ({what}): correct {r['correct']}, JCT mean {r['mean']:.4f} s, "
              f"p99 {r['p99']:.4f} s, max {r['max']:.4f} s; chunks on hosts "
              f"{100 * r['host_share']:.1f} %, host aggregator bytes {r['host_bytes']:,}, "
              f"occupancy {100 * r['occupancy']:.0f} % ({r['wall_s']:.0f} s wall)", flush=True)
    if "static" in results and "hashed" in results:
        s, h = results["static"], results["hashed"]
        slower = max(h["jct"][j] / s["jct"][j] for j in s["jct"])
        print(f"hashed / static: mean JCT {h['mean'] / s['mean']:.3f}, p99 "
              f"{h['p99'] / s['p99']:.3f}; slowest job relative to static {slower:.3f}")
    if "ring" in results and "hashed" in results:
        print(f"hashed / ring: mean JCT {results['hashed']['mean'] / results['ring']['mean']:.3f}")
    if args.csv:
        args.csv.mkdir(parents=True, exist_ok=True)
        with open(args.csv / "jct.csv", "w", newline="") as f:
            w = csv.writer(f)
            w.writerow(["mode", "job", "jct_s"])
            for mode, r in results.items():
                for job, t in r["jct"].items():
                    w.writerow([mode, job, f"{t:.6f}"])
        with open(args.csv / "occupancy.csv", "w", newline="") as f:
            w = csv.writer(f)
            w.writerow(["mode", "t_s", "occupied"])
            for mode, r in results.items():
                for t, v in r["series"]:
                    w.writerow([mode, f"{t:.6f}", f"{v:.4f}"])
        plot_occupancy(results, args.csv / "occupancy.png")
    return 0 if all(r["correct"] for r in results.values()) else 1


if __name__ == "__main__":
    sys.exit(main())
