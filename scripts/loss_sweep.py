"""INA and ring all-reduce time against packet loss, beside the lossless time and an analytic
expectation (issue 11, docs/loss.md).

    .venv/bin/python scripts/loss_sweep.py [--net sim|mininet] [--topo star|fat-tree]
        [--workers N] [--jobs J] [--size-mib S] [--bw MBPS] [--losses 0,0.01,0.1,1,2,5,10,20]
        [--algo both|ina|ring] [--seed S] [--timeout S] [--tag T] [--out DIR]

Every point is one `inaemu run` (the command a user runs; on Mininet it needs root and
shaped links, --bw), so the sweep measures exactly what the run's table shows. Writes
DIR/loss-<net>-<topo>.csv (one row per algorithm and loss) and DIR/loss-<net>-<topo>.png, and
prints one line per run. Exit status 0 when every run finished correct, 1 otherwise.

The analytic expectation counts the bytes loss costs, not the waiting (so it is what a
perfect loss detector would reach; T0 is the measured lossless time, p the loss per link):
INA: a chunk's first round (every contribution up the tree, the partial sums, this worker's
result down) fails with q = 1 − (1 − p)^L, L = n + switches of the tree − 1 + depth; then
every worker sends a header-only QUERY (docs/protocol.md §3.1), and a recovery round, which
needs only the missing piece up and the result down, fails with r = 1 − (1 − p)^(2·depth).
A worker sends its values again only when its own uplink lost them (p / (1 − p) times per
chunk), so its link carries s = 1 + p / (1 − p) + h · q / (1 − r) frames' worth per chunk, h
the size of a QUERY's frame relative to a frame of k values (`inaemu run`'s, 364): INA takes T0 · s. Ring: segments cross 2 links
on a star (host, switch, host; 2 · depth on a fat-tree) and TCP resends only what was lost:
T0 / (1 − q_ring).
"""

from __future__ import annotations

import argparse
import csv
import json
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from controller.trees import choose_roots, tree_shape  # noqa: E402
from inaemu.experiment.arguments import DEFAULT_ELEMS  # noqa: E402
from inaemu.experiment.config import RunConfig  # noqa: E402

LOSSES = (0.0, 0.01, 0.1, 1.0, 2.0, 5.0, 10.0, 20.0)
FIELDS = ("net", "topo", "workers", "jobs", "size_bytes", "bw_mbps", "algo", "loss_pct",
          "time_s", "lossless_s", "ratio", "expected_s", "links_per_round", "retransmissions",
          "finished", "correct", "error")


def parse_args(argv: list[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--net", choices=("sim", "mininet"), default="sim")
    parser.add_argument("--topo", choices=("star", "fat-tree"), default="star")
    parser.add_argument("--workers", type=int, default=None,
                        help="per job (default 4 on a star, all 16 hosts over the jobs on a "
                             "fat-tree)")
    parser.add_argument("--jobs", type=int, default=1)
    parser.add_argument("--size-mib", type=float, default=1.0)
    parser.add_argument("--bw", type=float, default=20.0)
    parser.add_argument("--losses", default=",".join(f"{p:g}" for p in LOSSES))
    parser.add_argument("--algo", choices=("both", "ina", "ring"), default="both")
    parser.add_argument("--seed", type=int, default=7)
    parser.add_argument("--timeout", type=float, default=120.0)
    parser.add_argument("--tag", default="ls", help="Mininet name prefix (default ls)")
    parser.add_argument("--grpc-base", type=int, default=22000,
                        help="Mininet: switch i serves P4Runtime on this + i (default 52000, "
                             "away from inaemu run's 50000 that other runs may hold)")
    parser.add_argument("--out", type=Path, default=ROOT / "out" / "loss-sweep")
    args = parser.parse_args(argv)
    try:
        args.loss_list = [float(p) for p in args.losses.split(",") if p.strip()]
    except ValueError:
        parser.error(f"--losses: expected numbers separated by commas, got {args.losses!r}")
    if 0.0 not in args.loss_list:
        args.loss_list.insert(0, 0.0)      # the lossless time every ratio needs
    if args.workers is None:
        args.workers = 4 if args.topo == "star" else 16 // args.jobs
    return args


def links_per_round(args: argparse.Namespace) -> tuple[int, int, int]:
    """(INA first round, ring, tree depth): links a chunk's round crosses, as seen by one
    worker (module docstring)."""
    cfg = RunConfig(workers=args.workers, jobs=args.jobs, topo=args.topo, net="sim")
    topology = cfg.topology()
    jobs = list(cfg.job_hosts(topology).items())
    job, hosts = jobs[0]
    if args.topo == "star":
        return len(hosts) + 1, 2, 1
    root = choose_roots(topology, jobs)[0]
    shape = tree_shape(topology, job, hosts, root)
    tree_links = len(shape.order) - 1                  # one partial sum per child switch
    # the ring's neighbours are at most as far apart as two workers through the root
    return len(hosts) + tree_links + shape.depth, 2 * shape.depth, shape.depth


QUERY_FRAME = 14 + 20 + 8 + 16         # Ethernet, IPv4, UDP, the aggregation header
RUN_ELEMS = DEFAULT_ELEMS               # `inaemu run`'s default k


def expected_time(lossless: float | None, algo: str, loss_pct: float, links: int,
                  depth: int, k: int = RUN_ELEMS) -> float | None:
    """The analytic time of the module docstring."""
    if not lossless:
        return None
    p = loss_pct / 100.0
    q = 1.0 - (1.0 - p) ** links
    if algo == "ring":
        return lossless / (1.0 - q)
    r = 1.0 - (1.0 - p) ** (2 * depth)
    h = QUERY_FRAME / (QUERY_FRAME + 4 * k)
    return lossless * (1.0 + p / (1.0 - p) + h * q / (1.0 - r))


def run_point(args: argparse.Namespace, loss: float, run_dir: Path) -> list[dict]:
    command = [str(ROOT / ".venv" / "bin" / "inaemu"), "run", "--net", args.net,
               "--topo", args.topo, "--workers", str(args.workers), "--jobs", str(args.jobs),
               "--algo", args.algo, "--size-mib", f"{args.size_mib:g}", "--loss", f"{loss:g}",
               "--bw", f"{args.bw:g}", "--seed", str(args.seed), "--timeout",
               f"{args.timeout:g}", "--out", str(run_dir)]
    if args.net == "mininet":
        command += ["--tag", args.tag, "--grpc-base", str(args.grpc_base)]
    done = subprocess.run(command, cwd=ROOT, capture_output=True, text=True)
    (run_dir.parent / f"{run_dir.name}.log").write_text(done.stdout + done.stderr)
    summary = run_dir / "summary.json"
    if not summary.exists():
        tail = (done.stderr or done.stdout).strip().splitlines()[-1:] or ["no output"]
        return [{"algo": algo, "time_s": None, "correct": False, "finished": 0,
                 "retransmissions": None, "error": tail[0]} for algo in algos(args)]
    return json.loads(summary.read_text())


def algos(args: argparse.Namespace) -> tuple[str, ...]:
    return ("ina", "ring") if args.algo == "both" else (args.algo,)


def slowest(summaries: list[dict], algo: str) -> dict:
    """One row per algorithm: the slowest job (all jobs must finish for a time)."""
    mine = [s for s in summaries if s["algo"] == algo]
    times = [s.get("time_s") for s in mine]
    finished = all(t is not None for t in times) and mine
    return {"time_s": max(times) if finished else None,
            "retransmissions": sum(s.get("retransmissions") or 0 for s in mine),
            "finished": sum(s.get("finished") or 0 for s in mine),
            "correct": bool(mine) and all(s.get("correct") for s in mine),
            "error": "; ".join(s["error"] for s in mine if s.get("error")) or None}


def sweep(args: argparse.Namespace) -> list[dict]:
    args.out.mkdir(parents=True, exist_ok=True)
    ina_links, ring_links, depth = links_per_round(args)
    rows, lossless = [], {}
    for loss in sorted(args.loss_list):
        name = f"{args.net}-{args.topo}-w{args.workers}-j{args.jobs}-loss{loss:g}"
        summaries = run_point(args, loss, args.out / name)
        for algo in algos(args):
            row = slowest(summaries, algo)
            if loss == 0.0:
                lossless[algo] = row["time_s"]
            base = lossless.get(algo)
            links = ina_links if algo == "ina" else ring_links
            row.update(net=args.net, topo=args.topo, workers=args.workers, jobs=args.jobs,
                       size_bytes=int(args.size_mib * (1 << 20)), bw_mbps=args.bw, algo=algo,
                       loss_pct=loss, lossless_s=base, links_per_round=links,
                       expected_s=expected_time(base, algo, loss, links, depth),
                       ratio=row["time_s"] / base if base and row["time_s"] else None)
            rows.append(row)
            print(f"loss_sweep: {args.net} {args.topo} {algo} loss {loss:g}%: "
                  + (f"{row['time_s']:.3f} s ({row['ratio']:.2f}x lossless, expected "
                     f"{row['expected_s']:.3f} s)" if row["ratio"] else
                     f"{row['time_s']} s" if row["time_s"] else f"failed: {row['error']}")
                  + f", {row['retransmissions']} retx, correct {row['correct']}", flush=True)
    return rows


def write_csv(rows: list[dict], path: Path) -> None:
    with path.open("w", newline="") as handle:
        writer = csv.DictWriter(handle, fieldnames=FIELDS, extrasaction="ignore")
        writer.writeheader()
        writer.writerows(rows)


def plot(rows: list[dict], path: Path, title: str) -> None:
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    fig, ax = plt.subplots(figsize=(7, 4.2))
    colours = {"ina": "tab:blue", "ring": "tab:orange"}
    for algo in ("ina", "ring"):
        mine = [r for r in rows if r["algo"] == algo]
        if not mine:
            continue
        x = [max(r["loss_pct"], 0.003) for r in mine]      # 0 % drawn at the left edge
        ax.plot(x, [r["time_s"] if r["time_s"] else float("nan") for r in mine], "o-",
                color=colours[algo], label=f"{algo} measured")
        ax.plot(x, [r["expected_s"] or float("nan") for r in mine], ":",
                color=colours[algo], label=f"{algo} expected (bytes only)")
        if mine[0]["lossless_s"]:
            ax.axhline(mine[0]["lossless_s"], color=colours[algo], lw=0.8, ls="--",
                       label=f"{algo} lossless")
    ax.set_xscale("log")
    if any(r["time_s"] for r in rows):      # nothing finished: nothing to scale
        ax.set_yscale("log")
    ax.set_xlabel("loss on every link, % (0 % drawn at 0.003)")
    ax.set_ylabel("all-reduce time, s")
    ax.set_title(title, fontsize=10)
    ax.grid(True, which="both", alpha=0.3)
    ax.legend(fontsize=7)
    fig.tight_layout()
    fig.savefig(path, dpi=120)
    plt.close(fig)


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    rows = sweep(args)
    stem = f"loss-{args.net}-{args.topo}-w{args.workers}"
    stem += f"-j{args.jobs}" if args.jobs > 1 else ""
    write_csv(rows, args.out / f"{stem}.csv")
    plot(rows, args.out / f"{stem}.png",
         f"{args.net}, {args.topo}, {args.jobs} job(s) x {args.workers} workers, "
         f"{args.size_mib:g} MiB, {args.bw:g} Mbit/s")
    print(f"loss_sweep: wrote {args.out / (stem + '.csv')} and .png")
    return 0 if all(r["correct"] for r in rows) else 1


if __name__ == "__main__":
    sys.exit(main())
