"""Soak: one network, hundreds of consecutive all-reduces, INA and the ring alternating.

Checks that a long series of runs on one machine leaks nothing (issue 33). On one star network
(the simulator or Mininet) it runs `--calls` all-reduces with `--loss` % random loss on every
link: jobs of `--calls-per-job` calls each on the same workers, INA and ring jobs alternating,
each arriving when the one before it has ended, each with its own random size (log-uniform
between `--min-size` and `--max-size`, seeded). So the controller adds and removes a job (job
id, slots, multicast group) and the agents start and stop every few calls, while the switch
processes and this process (the engine and its P4Runtime sessions) live throughout.

When each job arrives it samples from /proc the resident memory, open file descriptors and
threads of this process, of the switch processes and of the Mininet host shells (and counts
agent processes still alive). At the end it prints every call's verdict, each quantity's
growth after the warm-up and, on Mininet, what the teardown left behind; the curve goes to
`soak.csv` in `--out`. Growth compares the level of the samples over the last `--window`
calls with the level over the `--window` calls after the first `--warmup`: the median of
resident memory, which moves up and down by several MiB with each job's vector size (the
allocator keeps freed blocks for reuse), which is not growth; the minimum of descriptors and
threads, which an ended job's agents and their pipe readers still hold for a moment after the
next job arrives (LEVEL). A leak moves the whole level. The largest value after the warm-up is
printed beside it.

    python scripts/soak.py --net sim [--calls 500] [--calls-per-job 5] [--loss 1] [--seed 1]
    python scripts/soak.py --net mininet ...          (root)

Exit 0: every call correct, no growth beyond `--max-growth` %, nothing left behind; 1: not;
2: bad arguments.
"""

from __future__ import annotations

import argparse
import csv
import gc
import math
import os
import random
import statistics
import sys
import time
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

QUANTITIES = ("rss_kib", "fds", "threads")
# The level of a quantity over a window of samples. Resident memory: the median (it swings with
# each job's vector size). Descriptors and threads: the minimum. On Mininet an ended job's agents
# exit, and the engine's threads reading their pipes end, a few tenths of a second after the
# next job has arrived, so a sample holds 0 to `workers` of those threads and pipes (measured:
# the engine's threads 11-15, all 500 calls); a leaked descriptor or thread is in every later
# sample, so it raises the minimum.
LEVEL = {"rss_kib": statistics.median, "fds": min, "threads": min}
# roles whose processes live for the whole run: their growth is the leak test
LONG_LIVED = ("engine", "switches", "host shells")
FOREVER_S = 7 * 24 * 3600       # no scenario time limit: the soak ends when its calls do


@dataclass
class Usage:
    """What the processes of one role hold at one moment (summed over the role's processes)."""

    count: int = 0
    rss_kib: int = 0
    fds: int = 0
    threads: int = 0


def role_of(pid: int, argv: list[str], own_pid: int) -> str | None:
    """Which part of the experiment a process is, from its command line (None: not ours)."""
    if pid == own_pid:
        return "engine"
    if "hosts.scenario_agent" in argv:
        return "agents"
    if argv and argv[-1].startswith("mininet:"):
        return "host shells"
    name = Path(argv[0]).name if argv else ""
    is_switch = name.startswith("simple_switch") or "switch" in argv[1:3] or \
        (len(argv) > 2 and argv[1].endswith("inaemu") and argv[2] == "switch")
    if is_switch and any(a == "--grpc-server-addr" or a.startswith("--grpc-server-addr=")
                         for a in argv):
        return "switches"
    return None


def read_usage(pid: int) -> Usage | None:
    """One process's memory, descriptors and threads (None: it has gone)."""
    try:
        status = Path(f"/proc/{pid}/status").read_text()
        fds = len(os.listdir(f"/proc/{pid}/fd"))
    except OSError:
        return None
    fields = dict(line.split(":", 1) for line in status.splitlines() if ":" in line)
    rss = int(fields.get("VmRSS", "0 kB").split()[0])
    return Usage(1, rss, fds, int(fields["Threads"]))


def own_processes() -> dict[int, list[str]]:
    """This process and its descendants (pid -> argv): the experiment's, not other users'."""
    parents, argvs = {}, {}
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            stat = (entry / "stat").read_text()
            argv = (entry / "cmdline").read_bytes().decode(errors="replace").split("\0")[:-1]
        except OSError:
            continue
        pid = int(entry.name)
        parents[pid] = int(stat.rsplit(")", 1)[1].split()[1])
        argvs[pid] = argv
    own = os.getpid()
    mine = {}
    for pid in argvs:
        walk, seen = pid, 0
        while walk > 1 and walk != own and seen < 64:
            walk, seen = parents.get(walk, 0), seen + 1
        if walk == own:
            mine[pid] = argvs[pid]
    return mine


def sample() -> dict[str, Usage]:
    """Every role's usage now."""
    gc.collect()                  # this process's garbage is not a leak
    own = os.getpid()
    out: dict[str, Usage] = {}
    for pid, argv in own_processes().items():
        role = role_of(pid, argv, own)
        usage = read_usage(pid) if role else None
        if usage is None:
            continue
        total = out.setdefault(role, Usage())
        for name in ("count",) + QUANTITIES:
            setattr(total, name, getattr(total, name) + getattr(usage, name))
    return out


def job_sizes(jobs: int, low: int, high: int, seed: int) -> list[int]:
    """One size per job, log-uniform in [low, high], whole float32 values."""
    rng = random.Random(seed)
    sizes = []
    for _ in range(jobs):
        size = int(math.exp(rng.uniform(math.log(low), math.log(high))))
        sizes.append(max(4, size - size % 4))
    return sizes


def build(args: argparse.Namespace):
    from inaemu.scenario import Experiment
    link = {"loss_percent": args.loss}
    if args.bw:
        link["bw_mbps"] = args.bw
    exp = Experiment.star(hosts=args.workers, **link)
    exp.name = "soak"
    exp.set_options(seed=args.seed, time_limit=FOREVER_S)
    jobs = math.ceil(args.calls / args.calls_per_job)
    previous = None
    for index, size in enumerate(job_sizes(jobs, args.min_size, args.max_size, args.seed)):
        calls = min(args.calls_per_job, args.calls - index * args.calls_per_job)
        name = f"j{index:03d}-{'ina' if index % 2 == 0 else 'ring'}"
        exp.add_job(name, algo="ina" if index % 2 == 0 else "ring", workers=exp.hosts,
                    size=size, iterations=calls, after=previous)
        previous = name
    return exp


def growth(curve: list[tuple[int, dict[str, Usage]]], warmup: int, window: int
           ) -> dict[tuple[str, str], tuple[float, float, int, float]]:
    """Per (role, quantity) of the long-lived roles: (level over the `window` calls after the
    warm-up, level over the last `window` calls, largest value after the warm-up, growth of
    the level in %); the level is LEVEL's statistic."""
    after = [(calls, usage) for calls, usage in curve if calls >= warmup]
    out = {}
    if not after:
        return out
    last = after[-1][0]
    early = [usage for calls, usage in after if calls < warmup + window] or [after[0][1]]
    late = [usage for calls, usage in after if calls >= last - window] or [after[-1][1]]
    for role in LONG_LIVED:
        early_values = [u[role] for u in early if role in u]
        late_values = [u[role] for u in late if role in u]
        if not early_values or not late_values:
            continue
        for quantity in QUANTITIES:
            level = LEVEL[quantity]
            base = level([getattr(u, quantity) for u in early_values])
            end = level([getattr(u, quantity) for u in late_values])
            peak = max(getattr(usage[role], quantity) for _, usage in after if role in usage)
            out[(role, quantity)] = (base, end, peak,
                                     100.0 * (end - base) / base if base else 0.0)
    return out


def write_curve(path: Path, curve: list[tuple[int, dict[str, Usage]]]) -> None:
    with path.open("w", newline="") as f:
        writer = csv.writer(f)
        writer.writerow(["calls_done", "role", "processes", *QUANTITIES])
        for calls, usage in curve:
            for role, u in sorted(usage.items()):
                writer.writerow([calls, role, u.count, u.rss_kib, u.fds, u.threads])


def parse_args(argv: list[str] | None) -> argparse.Namespace:
    from inaemu.scenario.units import size_bytes
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--net", choices=("sim", "mininet"), default="sim")
    parser.add_argument("--calls", type=int, default=500)
    parser.add_argument("--calls-per-job", type=int, default=5)
    parser.add_argument("--warmup", type=int, default=50, metavar="CALLS")
    parser.add_argument("--window", type=int, default=50, metavar="CALLS",
                        help="calls whose samples give each level compared (50)")
    parser.add_argument("--workers", type=int, default=4)
    parser.add_argument("--bw", type=float, default=100.0, metavar="MBPS",
                        help="link rate (0: unshaped)")
    parser.add_argument("--loss", type=float, default=1.0, metavar="PERCENT")
    parser.add_argument("--min-size", default="16KiB")
    parser.add_argument("--max-size", default="2MiB")
    parser.add_argument("--max-growth", type=float, default=5.0, metavar="PERCENT")
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--out", type=Path)
    args = parser.parse_args(argv)
    try:
        args.min_size = size_bytes(args.min_size, "--min-size")
        args.max_size = size_bytes(args.max_size, "--max-size")
    except ValueError as error:
        parser.error(str(error))
    if args.calls < 1 or args.calls_per_job < 1 or args.workers < 2:
        parser.error("--calls and --calls-per-job must be >= 1, --workers >= 2")
    if not 4 <= args.min_size <= args.max_size:
        parser.error("need 4 B <= --min-size <= --max-size")
    if not 0 <= args.loss < 100 or args.bw < 0 or not 0 <= args.warmup < args.calls \
            or args.window < 1:
        parser.error("need 0 <= --loss < 100, --bw >= 0, 0 <= --warmup < --calls and "
                     "--window >= 1")
    if args.net == "mininet" and os.geteuid() != 0:
        parser.error("--net mininet needs root")
    return args


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    from inaemu.scenario.model import ScenarioError
    try:
        exp = build(args)
        scenario = exp.scenario()
    except (ScenarioError, ValueError) as error:
        print(f"soak: error: {error}", file=sys.stderr)
        return 2
    out = args.out or ROOT / "out" / time.strftime(f"soak-{args.net}-%Y%m%d-%H%M%S")
    out.mkdir(parents=True, exist_ok=True)
    before = sample()
    curve: list[tuple[int, dict[str, Usage]]] = []
    arrivals = [0]
    started = time.monotonic()

    def on_line(line: str) -> None:
        if " arrives (" not in line:
            return
        calls = arrivals[0] * args.calls_per_job
        arrivals[0] += 1
        usage = sample()
        curve.append((calls, usage))
        if arrivals[0] % 10 == 1:
            parts = [f"{role} {u.rss_kib / 1024:.0f} MiB/{u.fds} fds/{u.threads} threads"
                     for role, u in sorted(usage.items()) if role in LONG_LIVED]
            print(f"soak: {calls}/{args.calls} calls after {time.monotonic() - started:.0f} s; "
                  + "; ".join(parts), flush=True)

    from inaemu.scenario.api import run_scenario
    result = run_scenario(scenario, net=args.net, progress=on_line, bar=False)
    at_work = list(curve)    # the levels: samples taken as jobs arrive, the network at work
    curve.append((args.calls, sample()))      # in the curve too: after the network's end
    after = sample()
    write_curve(out / "soak.csv", curve)

    calls = [it for it in result.iterations if it.ended_s is not None]
    wrong = [f"{it.job} call {it.iteration}: {it.error or 'wrong sum'}"
             for it in result.iterations if not it.correct]
    wrong += [f"{job.name}: {job.error}" for job in result.jobs
              if job.error and not any(line.startswith(job.name + " ") for line in wrong)]
    print(f"\nsoak on {args.net}: {len(calls) - len(wrong)} of {args.calls} all-reduces correct "
          f"({args.workers} workers, {args.loss:g} % loss, {len(result.jobs)} jobs, "
          f"{time.monotonic() - started:.0f} s)")
    for line in wrong[:10]:
        print(f"  {line}")
    table = growth(at_work, args.warmup, args.window)
    print(f"\n{'process':12} {'quantity':8} {'after warm-up':>14} {'at the end':>12} "
          f"{'growth':>8} {'max':>10}")
    grew = []
    for (role, quantity), (base, end, peak, percent) in table.items():
        print(f"{role:12} {quantity:8} {base:>14g} {end:>12g} {percent:>7.1f}% {peak:>10}")
        if percent > args.max_growth:
            grew.append(f"{role} {quantity} +{percent:.1f} %")
    left = leftovers(args, scenario, after, before)
    print("\nafter teardown: " + ("nothing left behind" if not left else "; ".join(left)))
    print(f"curve: {out / 'soak.csv'}")
    ok = result.correct and len(calls) == args.calls and not wrong and not grew and not left
    print(f"verdict: {'pass' if ok else 'FAIL'}"
          + ("" if ok else f" ({'; '.join(grew + left + wrong[:1]) or 'incomplete'})"))
    return 0 if ok else 1


def leftovers(args, scenario, after: dict[str, Usage], before: dict[str, Usage]) -> list[str]:
    """What the run left behind: processes of ours, the network's interfaces, and this
    process's descriptors or threads beyond what it had before the network existed."""
    left = [f"{u.count} {role} process(es)" for role, u in after.items()
            if role != "engine" and u.count]
    if args.net == "mininet":
        from topologies.mininet_net import leftovers as network_leftovers
        processes, interfaces = network_leftovers(scenario.network.topology())
        if processes:
            left.append(f"{len(processes)} process(es) of the network")
        if interfaces:
            left.append(f"interfaces {', '.join(interfaces[:4])}")
    for quantity in ("fds", "threads"):
        was, now = getattr(before["engine"], quantity), getattr(after["engine"], quantity)
        if now > was:
            left.append(f"this process holds {now - was} more {quantity} than before the run")
    return left


if __name__ == "__main__":
    sys.exit(main())
