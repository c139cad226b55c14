"""`inaemu trace RUN_DIR`: follow every aggregation packet of a traced run (docs/trace.md).

Reads every switch's log and pcaps under RUN_DIR (or RUN_DIR/net, RUN_DIR/trace), prints per
slot round the lifecycle with timestamps, or only counts (`--summary`), and writes the plots
(`--plots`). Exit status: 0 on success; 2 for a bad argument, a directory without captures, or a
malformed log or capture (one line on stderr, nothing written).
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from inaemu.trace.events import TraceError
from inaemu.trace.lifecycle import Selection, build, counts, select
from inaemu.trace.reader import read_run
from inaemu.trace.report import format_counts, format_lifecycle

NO_CAPTURES = ("{dir}: no switch logs or captures here (nor in net/ or trace/); "
               "record a run with tracing on: `inaemu run --trace --out DIR`, or "
               "MininetNetwork(trace=True, pcap=True, run_dir=DIR)")


def _non_negative(text: str) -> int:
    try:
        value = int(text, 0)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a non-negative integer, got {text!r}") from None
    if value < 0:
        raise argparse.ArgumentTypeError(f"expected a non-negative integer, got {text!r}")
    return value


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("run_dir", type=Path, metavar="RUN_DIR",
                        help="a run directory (inaemu run --trace --out RUN_DIR)")
    parser.add_argument("--job", type=_non_negative, metavar="ID", help="only this job")
    parser.add_argument("--worker", type=_non_negative, metavar="W",
                        help="only steps of packets from or to this worker")
    parser.add_argument("--slot", type=_non_negative, metavar="S", help="only this slot")
    parser.add_argument("--chunk", type=_non_negative, metavar="C", help="only this chunk")
    parser.add_argument("--switch", metavar="NAME", help="only what this switch saw")
    parser.add_argument("--summary", action="store_true", help="print counts only")
    parser.add_argument("--plots", nargs="?", const="", metavar="DIR",
                        help="write occupancy.png and link_bytes.png into DIR (default RUN_DIR)")


def run(args: argparse.Namespace) -> int:
    try:
        return _run(args)
    except TraceError as error:
        print(f"inaemu trace: error: {error}", file=sys.stderr)
        return 2
    except BrokenPipeError:          # `inaemu trace DIR | head`
        return 0


def _run(args: argparse.Namespace) -> int:
    run_dir: Path = args.run_dir
    trace = read_run(run_dir)
    if not trace.switches:
        raise TraceError(NO_CAPTURES.format(dir=run_dir))
    names = [files.name for files in trace.switches]
    if args.switch is not None and args.switch not in names:
        raise TraceError(f"--switch {args.switch}: no such switch in {run_dir} "
                         f"(found: {', '.join(names)})")
    logged = {files.name for files in trace.switches if files.log is not None}
    lifecycles = build(trace.events, logged)
    selection = Selection(job=args.job, worker=args.worker, slot=args.slot, switch=args.switch,
                          chunk=args.chunk)
    chosen = select(lifecycles, selection)
    origin = trace.events[0].time if trace.events else 0.0
    out = sys.stdout
    sources = ", ".join(f"{f.name} ({'log' if f.log else 'no log'}, {len(f.pcaps)} pcaps)"
                        for f in trace.switches)
    out.write(f"trace of {run_dir}: {sources}; {len(trace.events)} events; "
              f"time 0 = {origin:.6f}\n")
    if not args.summary:
        for life in chosen:
            out.write("\n" + "\n".join(format_lifecycle(life, origin, trace.iface)) + "\n")
        out.write("\n")
    out.write("\n".join(format_counts(counts(chosen))) + "\n")
    if args.plots is not None:
        from inaemu.trace.plots import write_plots
        target = Path(args.plots) if args.plots else run_dir
        try:
            paths = write_plots(trace, chosen, target)
        except OSError as error:
            raise TraceError(f"--plots {target}: cannot write: {error.strerror}") from None
        out.write("".join(f"wrote {path}\n" for path in paths))
    return 0
