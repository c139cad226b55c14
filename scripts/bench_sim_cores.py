"""Both simulator cores side by side on the same commands: `python scripts/bench_sim_cores.py`.

Runs each command of issue 30 (`inaemu run --net sim --topo fat-tree --k 8 --workers 64` with
`--algo ina`, `--algo ring`, and `--algo ina --loss 1`) through `inaemu run`'s own code once
with `--sim-core python` and once with `--sim-core native`, in this process, one after the
other, checks that both gave the same records (times, bytes, retransmissions, errors,
verdicts) and prints each core's frames per CPU second and per wall second inside
`simulate` and their ratios;
first, the event loop alone (events per CPU second of each core's loop) and the links alone
(frame hops per CPU second through a chain of link directions). `--size-mib` (default 0.25) and
`--workers`/`--k` scale the commands. Numbers, not assertions: the ratio is only meaningful
between runs of the same process on the same load.

`--baseline REV` runs the same commands on the simulator as it was at commit REV too (its files
from this checkout's git history, in a child process), alternating with the two cores, and
prints the native core's frames per wall second over that commit's: issue 30 asks for 20x the
core it was filed against (`--baseline issue`, commit 1e15a28), and a ratio to a number
remembered from another day measures the machine's mood as much as the code.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import subprocess
import sys
import tempfile
import time
from pathlib import Path

# only what the simulator at the issue's commit has too: `--measure` runs this file there
from inaemu.experiment.sim_run import run_sim
from inaemu.sim import driver
from inaemu.sim.driver import simulate
from inaemu.run import add_arguments, config_from

ISSUE_CORE = "1e15a28"       # the last commit before issue 30's first: the core it measured

COMMANDS = (("ina", ["--algo", "ina"]), ("ring", ["--algo", "ring"]),
            ("ina, 1 % loss", ["--algo", "ina", "--loss", "1"]))
COMPARED = ("time_s", "bytes_sent", "bytes_received", "packets_sent", "retransmissions",
            "max_abs_err", "err_bound", "correct", "error")


def run(argv: list[str]) -> tuple[list[dict], float, float, int]:
    """(records, CPU seconds inside simulate, wall seconds inside simulate, frames) of `inaemu
    run --net sim ARGV`. CPU time of this process is the steadier number on a shared machine
    (the same work's CPU time moves far less with the load); wall time is what a user waits,
    and the only one that counts the gradients drawn on other cores (hosts/draw_ahead.py).
    Set-up, done before simulate, is left out of both."""
    parser = argparse.ArgumentParser()
    add_arguments(parser)
    cfg = config_from(parser.parse_args(["--net", "sim", *argv]))
    spent = [0.0, 0.0]

    def timed_simulate(*args, **kwargs):
        cpu, wall = time.process_time(), time.perf_counter()
        try:
            return simulate(*args, **kwargs)
        finally:
            spent[0] += time.process_time() - cpu
            spent[1] += time.perf_counter() - wall

    driver.simulate = timed_simulate          # (run_sim imports it from the driver)
    try:
        with tempfile.TemporaryDirectory() as out:
            records = run_sim(cfg, Path(out), lambda _line: None)
            report = json.loads((Path(out) / "sim_report.json").read_text())
    finally:
        driver.simulate = simulate
    parts = [part for part in report.values() if isinstance(part, dict) and "frames" in part]
    return records, spent[0], spent[1], sum(p["frames"] for p in parts)


def loop_alone(core: str, events: int = 300_000) -> float:
    """Events per second of the event loop by itself: each event posts the next one (a
    frame's arrival) and every 16th also re-arms a cancellable timer (a host's deadline)."""
    from inaemu.sim.cores import make_loop
    loop = make_loop(core)
    left = [events]
    timer = [None]

    def arrive(_frame) -> None:
        left[0] -= 1
        if left[0] > 0:
            loop.post(loop.now + 1e-6, arrive, None)
            if not left[0] & 15:
                if timer[0] is not None:
                    timer[0].cancel()
                timer[0] = loop.at(loop.now + 1e-3, arrive, None)

    for _ in range(8):
        loop.post(0.0, arrive, None)
    started = time.process_time()
    loop.run(until=1e9)
    return loop.events_run / (time.process_time() - started)


def links_alone(core: str, frames: int = 100_000, hops: int = 4) -> float:
    """Frame hops per CPU second through link directions alone: a chain of `hops` shaped,
    lossy directions, each arrival sent on along the next one (what a frame's way through
    the network costs without the switches' pipelines and the hosts' protocols)."""
    from inaemu.sim.cores import core_classes
    classes = core_classes(core)
    loop = classes.loop()
    chain = []
    done = [0]

    def last(_frame: bytes) -> None:
        done[0] += 1

    deliver = last
    for hop in reversed(range(hops)):
        link = classes.link(loop, f"n{hop}:1", f"n{hop + 1}:1", bw_bps=10e9, delay_s=1e-6,
                            loss=0.01, rng=random.Random(hop), deliver=deliver)
        chain.insert(0, link)
        deliver = link.send
    frame = bytes(1000)
    for i in range(frames):
        loop.post(i * 1e-6, chain[0].send, frame)
    started = time.process_time()
    loop.run(until=1e9)
    spent = time.process_time() - started
    hopped = sum(link.counters.delivered_packets for link in chain)
    return hopped / spent


def checkout(rev: str, into: Path, repo: Path | None = None) -> str:
    """The files of commit `rev` of `repo` (this checkout) written under `into` (`git
    archive`: no worktree to clean up after a kill); the commit's short hash. SystemExit says
    why when `rev` is not in the history (a shallow clone, a typo)."""
    repo = Path(__file__).resolve().parent.parent if repo is None else repo
    found = subprocess.run(["git", "-C", str(repo), "rev-parse", "--short", "--verify",
                            "--quiet", f"{rev}^{{commit}}"], capture_output=True, text=True)
    if found.returncode != 0:
        raise SystemExit(f"--baseline: {rev!r} is not a commit of {repo}'s history (a shallow "
                         f"clone has no old commits: git fetch --unshallow)")
    archive = subprocess.run(["git", "-C", str(repo), "archive", "--format=tar", rev],
                             capture_output=True, check=True).stdout
    subprocess.run(["tar", "-x", "-C", str(into)], input=archive, check=True)
    return found.stdout.strip()


def run_at(tree: Path, argv: list[str]) -> tuple[list[dict], float, float, int]:
    """`run(argv)` on the simulator whose files are under `tree`: this file run there in a
    child process (`--measure`), with only that tree on the import path."""
    env = {**os.environ, "PYTHONPATH": str(tree)}
    child = subprocess.run([sys.executable, str(Path(__file__).resolve()), "--measure", *argv],
                           cwd=tree, env=env, capture_output=True, text=True)
    if child.returncode != 0:
        raise RuntimeError(f"the simulator at {tree} failed on {' '.join(argv)}:\n"
                           + child.stderr[-2000:])
    got = json.loads(child.stdout.splitlines()[-1])
    return got["records"], got["cpu"], got["wall"], got["frames"]


def measure(argv: list[str]) -> int:
    """`--measure ARGV`: `run(ARGV)` as one JSON line (what `run_at` reads)."""
    records, cpu, wall, frames = run(argv)
    print(json.dumps({"records": records, "cpu": cpu, "wall": wall, "frames": frames},
                     default=str))
    return 0


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    if argv[:1] == ["--measure"]:
        return measure(argv[1:])
    parser = argparse.ArgumentParser(prog="python scripts/bench_sim_cores.py")
    parser.add_argument("--size-mib", default="0.25")
    parser.add_argument("--workers", default="64")
    parser.add_argument("--k", default="8", help="fat-tree k")
    parser.add_argument("--repeat", type=int, default=2, help="runs per core; the fastest counts")
    parser.add_argument("--only", choices=[name for name, _ in COMMANDS], help="one command")
    parser.add_argument("--baseline", metavar="REV",
                        help="also run the simulator of commit REV (from this checkout's "
                        f"history; 'issue' is issue 30's, {ISSUE_CORE}) and print the native "
                        "core's frames per wall second over its")
    args = parser.parse_args(argv)
    with tempfile.TemporaryDirectory(prefix="bench-baseline-") as tree:
        baseline = None
        if args.baseline:
            rev = ISSUE_CORE if args.baseline == "issue" else args.baseline
            baseline = (checkout(rev, Path(tree)), Path(tree))
        return compare(args, baseline)


def compare(args: argparse.Namespace, baseline: tuple[str, Path] | None) -> int:
    """The tables: both cores (and the baseline's simulator) on each command."""
    common = ["--topo", "fat-tree", "--k", args.k, "--workers", args.workers,
              "--size-mib", args.size_mib]
    python_loop, native_loop = loop_alone("python"), loop_alone("native")
    print(f"event loop alone: {python_loop:,.0f} events/s python, {native_loop:,.0f} native "
          f"({native_loop / python_loop:.2f}x)")
    python_links, native_links = links_alone("python"), links_alone("native")
    print(f"links alone: {python_links:,.0f} frame hops/s python, {native_links:,.0f} native "
          f"({native_links / python_links:.2f}x)")
    print(f"fat-tree k={args.k}, {args.workers} workers, {args.size_mib} MiB per worker, "
          f"best of {args.repeat}")
    print("frames per second inside simulate, of CPU (this process's threads together) and "
          "of wall")
    print(f"{'command':<16} {'frames':>10} {'python cpu':>11} {'native cpu':>11} {'ratio':>6} "
          f"{'python wall':>12} {'native wall':>12} {'ratio':>6}  same")
    same_everywhere = True
    against = []
    for name, extra in [c for c in COMMANDS if args.only in (None, c[0])]:
        runs = ("baseline", "python", "native") if baseline else ("python", "native")
        best = {core: [float("inf"), float("inf")] for core in runs}
        got = {}
        for _ in range(args.repeat):     # alternating, so all see the same load
            for core in runs:
                if core == "baseline":
                    records, cpu, wall, frames = run_at(baseline[1], [*common, *extra])
                else:
                    records, cpu, wall, frames = run([*common, *extra, "--sim-core", core])
                best[core] = [min(best[core][0], cpu), min(best[core][1], wall)]
                got[core] = (records, frames)
        (python, frames), (native, native_frames) = got["python"], got["native"]
        same = native_frames == frames and [
            {key: record[key] for key in COMPARED} for record in native] == [
            {key: record[key] for key in COMPARED} for record in python]
        same_everywhere = same_everywhere and same
        (py_cpu, py_wall), (na_cpu, na_wall) = best["python"], best["native"]
        print(f"{name:<16} {frames:>10,} {frames / py_cpu:>11,.0f} "
              f"{native_frames / na_cpu:>11,.0f} {py_cpu / na_cpu:>5.2f}x {frames / py_wall:>12,.0f} "
              f"{native_frames / na_wall:>12,.0f} {py_wall / na_wall:>5.2f}x  "
              f"{'yes' if same else 'NO'}")
        if baseline:
            (old, old_frames), (old_cpu, old_wall) = got["baseline"], best["baseline"]
            against.append((name, old_frames, old_frames / old_cpu, old_frames / old_wall,
                            native_frames / na_wall,
                            all(record.get("correct") for record in old)))
    if baseline:
        print(f"against the simulator at {baseline[0]}, frames per second inside simulate "
              f"(its own frames: the protocol has changed since)")
        print(f"{'command':<16} {'frames':>10} {'its cpu':>10} {'its wall':>10} "
              f"{'native wall':>12} {'ratio':>7}  it was correct")
        for name, frames, cpu_rate, wall_rate, native_rate, correct in against:
            print(f"{name:<16} {frames:>10,} {cpu_rate:>10,.0f} {wall_rate:>10,.0f} "
                  f"{native_rate:>12,.0f} {native_rate / wall_rate:>6.2f}x  "
                  f"{'yes' if correct else 'NO'}")
    return 0 if same_everywhere else 1


if __name__ == "__main__":
    raise SystemExit(main())
