"""Where a simulated run's time goes, by part: `python scripts/profile_sim.py RUN ARGUMENTS`.

Runs `inaemu run --net sim RUN ARGUMENTS` (e.g. `--topo fat-tree --k 8 --workers 64 --algo
ina --size-mib 1`, with `--sim-core native` for the native core) through the command's own
code, twice: unprofiled for the frames per second, then with cProfile on the event loop alone
(set-up, the workers' start and the verdicts left out). Each function's own time goes to the
part its file belongs to (event loop, links, switch ports, switch runtime, host framing, INA
session, ring transport; the native core's C loop, links, switch ports and host framing are
one part, since cProfile sees that C only as the loop's `run` and the C methods Python
calls); time in other C functions and the standard library goes to the part of its caller
(numpy in the codec is the codec's), up to a few levels. Prints each part's share and the
frames per second that part alone would allow. Numbers, not assertions (docs/sim-native.md, "Where
the time and memory go"). `--profile FILE` only reads an existing dump (any cProfile of a run).
"""

from __future__ import annotations

import argparse
import cProfile
import json
import pstats
import tempfile
from pathlib import Path

from inaemu.experiment.sim_run import run_sim
from inaemu.run import add_arguments, config_from
from inaemu.sim.cores import core_classes

PARTS = (   # (part, path fragments), first match wins
    # the native core's C: its methods Python calls, and its loop's own time, which cProfile
    # charges to the wrapper that runs the loop (`profiled_run`, below: the profiler starts
    # inside it, so it is recorded as a builtin named after it)
    ("native core (C)", ("inaemu_sim_native", "profiled_run")),
    ("event loop", ("inaemu/sim/events.py",)),
    ("links", ("inaemu/sim/link.py",)),
    ("switch ports (sim)", ("inaemu/sim/switch_node.py",)),
    # the generated fast path is exec'd source named "<p4switch fast path>" (and its helpers)
    ("switch runtime", ("p4switch/runtime/", "<p4switch ")),
    ("host framing", ("inaemu/sim/host_node.py", "inaemu/sim/frames.py", "hosts/framing.py")),
    ("INA worker + session", ("inaemu/sim/ina_worker.py", "hosts/ina_", "hosts/quantize.py",
                              "hosts/congestion.py")),
    ("ring worker + transport", ("inaemu/sim/ring_worker.py", "inaemu/sim/reliable.py",
                                 "hosts/ring_")),
    ("gradients + verdict", ("hosts/agent.py", "inaemu/sim/streamed_check.py",
                             "hosts/gradient_stream.py")),
    ("set-up", ("controller/", "p4switch/server/", "p4switch/compiler/", "inaemu/sim/control.py",
                "inaemu/sim/setup.py", "inaemu/sim/network.py", "inaemu/compile_cache.py",
                "grpc", "google/protobuf", "p4runtime")),
    ("driver", ("inaemu/sim/driver.py",)),
)


def part_of(func: tuple) -> str | None:
    """The part of a pstats function key (file, line, name); a builtin's file is "~", its
    name says whose it is (the native core's C methods name their module)."""
    where = func[2] if func[0] == "~" else func[0]
    for part, fragments in PARTS:
        if any(fragment in where for fragment in fragments):
            return part
    return None


def attribute(stats: pstats.Stats, depth: int = 4) -> dict[str, float]:
    """Own time per part; a function outside every part passes its time up its callers."""
    table = stats.stats
    totals: dict[str, float] = {}

    def give(func, seconds: float, level: int) -> None:
        part = part_of(func)
        if part is not None:
            totals[part] = totals.get(part, 0.0) + seconds
            return
        callers = table.get(func, (0, 0, 0, 0, {}))[4]
        edge_total = sum(edge[2] for edge in callers.values())
        if level >= depth or not callers or edge_total <= 0:
            totals["other"] = totals.get("other", 0.0) + seconds
            return
        for caller, edge in callers.items():
            give(caller, seconds * edge[2] / edge_total, level + 1)

    for func, (_cc, _nc, own, _cum, _callers) in table.items():
        give(func, own, 0)
    return totals


class CodeStats:
    """A profile keyed by code object, in pstats' `stats` layout ({key: (cc, nc, own, cum,
    callers)}). Why not pstats.Stats(profiler): it keys functions by (file, line, name), and
    every switch runs its own copy of the generated fast path under one such name, so the
    copies overwrite each other and all but one switch's runtime time is lost."""

    def __init__(self, profiler: cProfile.Profile):
        def key(code) -> tuple:
            if isinstance(code, str):                      # a builtin
                return ("~", 0, code)
            return (code.co_filename, code.co_firstlineno, code.co_name, id(code))

        self.stats: dict = {}
        callers: dict = {}
        for entry in profiler.getstats():
            caller = key(entry.code)
            for sub in entry.calls or ():
                edges = callers.setdefault(key(sub.code), {})
                old = edges.get(caller, (0, 0, 0.0, 0.0))
                edges[caller] = (old[0] + sub.callcount, old[1] + sub.reccallcount,
                                 old[2] + sub.inlinetime, old[3] + sub.totaltime)
            self.stats[caller] = (entry.callcount - entry.reccallcount, entry.callcount,
                                  entry.inlinetime, entry.totaltime, {})
        for callee, edges in callers.items():
            if callee in self.stats:
                self.stats[callee][4].update(edges)


def run(argv: list[str], profiler: cProfile.Profile | None) -> dict:
    """`inaemu run --net sim ARGV` through its own arguments and `run_sim`; the profiler,
    when given, runs only while the event loop does. Returns sim_report.json."""
    parser = argparse.ArgumentParser()
    add_arguments(parser)
    cfg = config_from(parser.parse_args(["--net", "sim", *argv]))
    loop_class = core_classes(cfg.sim_core).loop
    original, own = loop_class.run, loop_class.__dict__.get("run")

    def profiled_run(loop, **kwargs):
        profiler.enable()
        try:
            return original(loop, **kwargs)
        finally:
            profiler.disable()

    if profiler is not None:
        loop_class.run = profiled_run
    try:
        with tempfile.TemporaryDirectory() as out:
            records = run_sim(cfg, Path(out), lambda _line: None)
            report = json.loads((Path(out) / "sim_report.json").read_text())
    finally:
        if profiler is not None and own is not None:
            loop_class.run = own
        elif profiler is not None:
            del loop_class.run      # inherited from the C type
    report["correct"] = all(record["correct"] for record in records)
    return report


def report(stats: pstats.Stats, frames: int = 0, wall: float = 0.0) -> None:
    totals = attribute(stats)
    whole = sum(totals.values())
    print(f"{'part':<26} {'s':>8} {'share':>7} {'frames/s alone':>15}")
    for part, seconds in sorted(totals.items(), key=lambda item: -item[1]):
        if seconds < 0.005:
            continue
        alone = f"{frames / (wall * seconds / whole):15,.0f}" if frames and seconds else ""
        print(f"{part:<26} {seconds:8.2f} {100 * seconds / whole:6.1f}% {alone}")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python scripts/profile_sim.py",
                                     usage="%(prog)s [--profile FILE] [inaemu run arguments]")
    parser.add_argument("--profile", help="only read this cProfile dump")
    args, run_argv = parser.parse_known_args(argv)
    if args.profile:
        report(pstats.Stats(args.profile))
        return 0
    plain = run(run_argv, None)
    for algo, part in plain.items():
        if isinstance(part, dict) and "frames" in part:
            print(f"{algo}: {part['frames']:,} frames in {part['wall_s']:.2f} s "
                  f"({part['frames'] / part['wall_s']:,.0f} frames/s), virtual "
                  f"{part['virtual_s']:.4f} s; correct={plain['correct']}")
    profiler = cProfile.Profile()
    run(run_argv, profiler)
    frames = sum(part["frames"] for part in plain.values() if isinstance(part, dict)
                 and "frames" in part)
    wall = sum(part["wall_s"] for part in plain.values() if isinstance(part, dict)
               and "frames" in part)
    report(CodeStats(profiler), frames, wall)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
