"""Scaling sweep: INA (tree) and ring all-reduce from 8 to 1024 workers on fat-trees, in the
simulator, with what each run costs on this machine and the analytic model beside it.

    .venv/bin/python scripts/scale_sweep.py [--points 8,16,32,64,128,256,512,1024]
        [--algos ina,ring] [--size-mib 1] [--elems 256] [--bw 20] [--time-limit 600]
        [--timeout 1800] [--out out/scale] [--before EARLIER/scale.csv]
    .venv/bin/python scripts/scale_sweep.py --report out/scale/scale.csv [--before ...]

Each (workers, algorithm) runs in its own process (`--one W --algo A`, so the peak memory is
that run's own): the smallest even fat-tree k with k^3/4 >= W hosts, W workers spread over them
as `inaemu run` spreads them (one job; INA aggregates along the tree chosen by
controller.trees), 1 MiB of float32 per worker, k = 256 values per packet, 20 Mbit/s links,
window 16, rto 0.1 s (`inaemu run`'s defaults when the sweep was made; its links are 40 Mbit/s
and its window the pool now: kept, so that sweeps compare across sessions). Measured per run:
virtual time (the slowest worker), the set-up's wall time (compile + configure over P4Runtime),
the simulation's wall time, the process's whole wall time, the set-up's and the process's CPU
time (every thread: on a busy machine wall times stretch, CPU times much less), frames/s, peak
RSS (getrusage), correctness; and the α-β-γ model's time for the same run (inaemu/model,
docs/model.md).

Writes DIR/scale.csv and DIR/scale.png (virtual time with the model's curves; wall, set-up and
memory against workers; the set-up's share of the process wall, beside an earlier sweep's with
--before) and prints the markdown table of docs/scale.md (--report: only that, from a CSV).
Exit 0 when every run was correct, 1 otherwise.
"""

from __future__ import annotations

import argparse
import csv
import json
import resource
import subprocess
import sys
import time
from pathlib import Path

STARTED = time.perf_counter()
ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

COLUMNS = ("workers", "fat_k", "hosts", "switches", "algo", "virtual_s", "model_s", "correct",
           "setup_s", "sim_wall_s", "total_wall_s", "setup_share", "frames", "frames_per_s",
           "switch_packets", "routes", "peak_rss_mib", "compile_s", "connect_s", "pipeline_s",
           "routes_s", "jobs_s", "other_s", "setup_cpu_s", "process_cpu_s", "setup_cpu_share",
           "error")
SETUP_PHASES = ("compile", "connect", "pipeline", "routes", "jobs")
DEFAULT_POINTS = "8,16,32,64,128,256,512,1024"


def fat_k_for(workers: int) -> int:
    """The smallest even k whose fat-tree has a host per worker (k^3/4 hosts)."""
    k = 2
    while k ** 3 // 4 < workers:
        k += 2
    return k


def run_one(workers: int, algo: str, args) -> dict:
    """One (workers, algorithm) run in this process; a dict of COLUMNS."""
    from controller.trees import choose_roots
    from inaemu.experiment.agents import max_retx, rto_max
    from inaemu.experiment.config import RunConfig
    from inaemu.sim import InaOptions, SimError, SimJob, prepare_setup, simulate

    k = fat_k_for(workers)
    cfg = RunConfig(algos=(algo,), workers=workers, jobs=1, size_bytes=int(args.size_mib * 2**20),
                    bw_mbps=args.bw or None, elems_k=args.elems, window=16, rto=0.1,
                    net="sim", timeout=args.time_limit, topo="fat-tree", fat_k=k)
    topology = cfg.topology()
    (job, hosts), = cfg.job_hosts(topology).items()
    root, = choose_roots(topology, [(job, hosts)])
    jobs = [SimJob(job, hosts, root, hierarchical=True)]
    row = {"workers": workers, "fat_k": k, "hosts": len(topology.hosts),
           "switches": len(topology.switches), "algo": algo, "correct": False, "error": ""}
    try:
        cpu_before = time.process_time()    # every thread of the process (gRPC servers too)
        setup = prepare_setup(topology, jobs, elems_k=cfg.elems_k, pool_size=cfg.pool_size,
                              ina=algo == "ina")
        setup_cpu = time.process_time() - cpu_before
        result = simulate(topology, jobs, algo=algo, size_bytes=cfg.size_bytes,
                          elems_k=cfg.elems_k, seed=cfg.seed, time_limit=cfg.timeout,
                          ina=InaOptions(pool_size=cfg.pool_size, window=cfg.window, rto=cfg.rto,
                                         rto_max=rto_max(cfg.rto),
                                         max_retx=max_retx(cfg.rto, cfg.timeout)),
                          setup=setup)
    except SimError as error:
        row["error"] = str(error)[:300]
        row["total_wall_s"] = time.perf_counter() - STARTED
        row["peak_rss_mib"] = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
        return row
    total = time.perf_counter() - STARTED
    process_cpu = time.process_time()       # since the process started, as `total`
    times = [r.time_s for r in result.records if r.time_s is not None]
    row.update(virtual_s=max(times) if len(times) == len(result.records) else None,
               correct=result.correct, setup_s=setup.wall_s, sim_wall_s=result.wall_s,
               total_wall_s=total, setup_share=setup.wall_s / total, frames=result.frames,
               setup_cpu_s=setup_cpu, process_cpu_s=process_cpu,
               setup_cpu_share=setup_cpu / process_cpu,
               frames_per_s=result.frames_per_wall_s, switch_packets=result.switch_packets,
               routes=setup.routes,
               other_s=total - setup.wall_s - result.wall_s,   # start-up, topology, inputs
               **{f"{name}_s": setup.phases.get(name) for name in SETUP_PHASES},
               peak_rss_mib=resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024,
               error="" if result.correct else "; ".join(
                   sorted({r.error or "wrong result" for r in result.records
                           if not r.correct}))[:300])
    try:
        from inaemu.model.for_run import model_times
        row["model_s"] = model_times(cfg)[(algo, job)]
    except Exception as error:      # the model never hides a measurement
        row["model_s"] = None
        row["error"] = (row["error"] + f" model: {error}")[:300]
    return row


def sweep(args) -> list[dict]:
    rows = []
    for workers in [int(p) for p in args.points.split(",")]:
        for algo in args.algos.split(","):
            command = [sys.executable, str(Path(__file__).resolve()), "--one", str(workers),
                       "--algo", algo, "--size-mib", str(args.size_mib), "--elems",
                       str(args.elems), "--bw", str(args.bw), "--time-limit",
                       str(args.time_limit)]
            try:
                done = subprocess.run(command, capture_output=True, text=True,
                                      timeout=args.timeout)
                lines = [line for line in done.stdout.splitlines() if line.startswith("{")]
                row = json.loads(lines[-1]) if lines else {
                    "workers": workers, "algo": algo, "correct": False,
                    "error": (done.stderr.strip().splitlines() or ["no output"])[-1][:300]}
            except subprocess.TimeoutExpired:
                row = {"workers": workers, "algo": algo, "correct": False,
                       "error": f"no result within {args.timeout:g} s of wall time"}
            rows.append(row)
            print(_line(row), flush=True)
            write_csv(rows, args.out / "scale.csv")
    return rows


def _line(row: dict) -> str:
    def num(name, fmt):
        value = row.get(name)
        return format(value, fmt) if isinstance(value, (int, float)) else "-"
    return (f"{row['workers']:>5} {row['algo']:<5} k={row.get('fat_k', '-'):<3} "
            f"virtual {num('virtual_s', '.4f')} s (model {num('model_s', '.4f')}) "
            f"wall {num('total_wall_s', '.1f')} s (set-up {num('setup_s', '.1f')}, "
            f"sim {num('sim_wall_s', '.1f')}, {num('frames_per_s', ',.0f')} frames/s) "
            f"cpu set-up {num('setup_cpu_s', '.2f')} of {num('process_cpu_s', '.1f')} s "
            f"peak {num('peak_rss_mib', ',.0f')} MiB correct={row.get('correct')} "
            f"{row.get('error') or ''}")


def write_csv(rows: list[dict], path: Path) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    with path.open("w", newline="") as out:
        writer = csv.DictWriter(out, fieldnames=COLUMNS, extrasaction="ignore")
        writer.writeheader()
        writer.writerows(rows)


def plot(rows: list[dict], path: Path, before: list[dict] | None = None) -> None:
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, (left, right, share) = plt.subplots(1, 3, figsize=(17, 4.5))
    colours = {"ina": "tab:blue", "ring": "tab:orange"}
    for algo, colour in colours.items():
        mine = sorted((r for r in rows if r.get("algo") == algo), key=lambda r: r["workers"])
        done = [r for r in mine if r.get("virtual_s")]
        modelled = [r for r in mine if r.get("model_s")]
        left.plot([r["workers"] for r in done], [r["virtual_s"] for r in done], "o",
                  color=colour, label=f"{algo} measured (virtual)")
        left.plot([r["workers"] for r in modelled], [r["model_s"] for r in modelled], "--",
                  color=colour, label=f"{algo} α-β-γ model")
        timed = [r for r in mine if r.get("total_wall_s")]
        right.plot([r["workers"] for r in timed], [r["total_wall_s"] for r in timed], "o-",
                   color=colour, label=f"{algo} wall (process)")
        right.plot([r["workers"] for r in timed], [r.get("setup_s") or 0 for r in timed], "x:",
                   color=colour, label=f"{algo} set-up wall")
        shared = [r for r in timed if r.get("setup_share") is not None]
        share.plot([r["workers"] for r in shared], [100 * r["setup_share"] for r in shared],
                   "o-", color=colour, label=f"{algo}")
        earlier = sorted((r for r in before or () if r.get("algo") == algo and
                          r.get("setup_share") is not None), key=lambda r: r["workers"])
        share.plot([r["workers"] for r in earlier], [100 * r["setup_share"] for r in earlier],
                   "o:", color=colour, alpha=0.5, label=f"{algo} before (--before)")
    share.axhline(10, color="black", linewidth=0.8, linestyle="--", label="10 % target")
    share.set_ylabel("set-up / process wall, %")
    share.set_title("set-up share")
    share.legend(fontsize=7)
    for axis in (left, right, share):
        axis.set_xscale("log", base=2)
        axis.set_xlabel("workers (fat-tree, 1 MiB each)")
        axis.grid(True, which="both", alpha=0.3)
    left.set_ylabel("all-reduce time, virtual s")
    left.set_title("time: measured vs model")
    right.set_ylabel("wall seconds")
    right.set_yscale("log")
    right.set_title("cost on this machine")
    memory = right.twinx()
    for algo, colour in colours.items():
        mine = sorted((r for r in rows if r.get("algo") == algo and r.get("peak_rss_mib")),
                      key=lambda r: r["workers"])
        memory.plot([r["workers"] for r in mine], [r["peak_rss_mib"] / 1024 for r in mine], "s-",
                    color=colour, alpha=0.35, label=f"{algo} peak RSS")
    memory.set_ylabel("peak memory, GiB")
    left.legend(fontsize=8)
    lines, labels = right.get_legend_handles_labels()
    more, more_labels = memory.get_legend_handles_labels()
    right.legend(lines + more, labels + more_labels, fontsize=7, loc="upper left")
    fig.tight_layout()
    fig.savefig(path, dpi=110)


def read_csv(path: Path) -> list[dict]:
    def value(text: str):
        for kind in (int, float):
            try:
                return kind(text)
            except ValueError:
                pass
        return {"True": True, "False": False, "": None}.get(text, text)
    with path.open() as source:
        return [{k: value(v) for k, v in row.items()} for row in csv.DictReader(source)]


def markdown(rows: list[dict], before: list[dict] | None = None) -> str:
    """The table of docs/scale.md: one line per run, with the earlier run's set-up beside."""
    earlier = {(r["workers"], r["algo"]): r for r in before or ()}

    def num(row, name, fmt, scale=1.0):
        value = (row or {}).get(name)
        return format(value * scale, fmt) if isinstance(value, (int, float)) else "-"
    lines = ["| workers | k | algo | virtual s | model s | set-up s (before) | pipeline s | "
             "sim wall s | process wall s (before) | set-up share (before) | < 10 % | "
             "frames/s | peak RSS GiB | correct |", "|" + "---|" * 14]
    for row in rows:
        old = earlier.get((row["workers"], row["algo"]))
        share = row.get("setup_share")
        lines.append(
            f"| {row['workers']} | {row.get('fat_k', '-')} | {row['algo']} | "
            f"{num(row, 'virtual_s', '.4f')} | {num(row, 'model_s', '.4f')} | "
            f"{num(row, 'setup_s', '.1f')} ({num(old, 'setup_s', '.1f')}) | "
            f"{num(row, 'pipeline_s', '.1f')} | {num(row, 'sim_wall_s', '.1f')} | "
            f"{num(row, 'total_wall_s', '.1f')} ({num(old, 'total_wall_s', '.1f')}) | "
            f"{num(row, 'setup_share', '.0f', 100)} % ({num(old, 'setup_share', '.0f', 100)} %)"
            f" | {'yes' if isinstance(share, float) and share < 0.10 else 'no'} | "
            f"{num(row, 'frames_per_s', ',.0f')} | {num(row, 'peak_rss_mib', '.2f', 1 / 1024)}"
            f" | {row.get('correct')} |")
    return "\n".join(lines)


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--points", default=DEFAULT_POINTS, help="worker counts")
    parser.add_argument("--algos", default="ina,ring")
    parser.add_argument("--algo", default="ina", help=argparse.SUPPRESS)
    parser.add_argument("--one", type=int, default=None, help=argparse.SUPPRESS)
    parser.add_argument("--size-mib", type=float, default=1.0)
    parser.add_argument("--elems", type=int, default=256)
    parser.add_argument("--bw", type=float, default=20.0, help="Mbit/s, 0: unshaped")
    parser.add_argument("--time-limit", type=float, default=600.0, help="virtual seconds")
    parser.add_argument("--timeout", type=float, default=1800.0,
                        help="wall seconds per run before it counts as failed")
    parser.add_argument("--out", type=Path, default=ROOT / "out" / "scale")
    parser.add_argument("--before", type=Path, default=None,
                        help="an earlier sweep's scale.csv, drawn and tabled beside this one")
    parser.add_argument("--report", type=Path, default=None,
                        help="no runs: redraw DIR (--out) and print the markdown table of this "
                             "scale.csv")
    args = parser.parse_args(argv)
    before = read_csv(args.before) if args.before else None
    if args.report is not None:
        rows = read_csv(args.report)
        args.out.mkdir(parents=True, exist_ok=True)
        plot(rows, args.out / "scale.png", before)
        print(markdown(rows, before))
        return 0
    if args.one is not None:
        print(json.dumps(run_one(args.one, args.algo, args)))
        return 0
    rows = sweep(args)
    write_csv(rows, args.out / "scale.csv")
    plot(rows, args.out / "scale.png", before)
    print(markdown(rows, before))
    print(f"wrote {args.out / 'scale.csv'} and {args.out / 'scale.png'}")
    return 0 if rows and all(r.get("correct") for r in rows) else 1


if __name__ == "__main__":
    sys.exit(main())
