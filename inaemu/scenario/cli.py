"""`inaemu scenario FILE`: one network through a timeline of jobs and events (docs/scenarios.md).

Reads and checks the file (a bad one is refused with its line before anything starts), runs
it on the simulator or Mininet, writes summary.json, the CSVs and timeline.png to --out, and
prints a short summary. Exit status: 0 when every job finished with correct sums, 1 when one
did not, 2 for a bad file or argument.
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("file", help="the scenario (YAML or JSON; docs/scenarios.md)")
    parser.add_argument("--net", choices=("sim", "mininet"), default="sim",
                        help="the simulator (default) or Mininet (root)")
    parser.add_argument("--out", metavar="DIR",
                        help="where results go (default results/scenario-<name>-<time>)")
    parser.add_argument("--seed", type=int, default=None,
                        help="overrides the file's options.seed")
    parser.add_argument("--quiet", action="store_true", help="no progress lines")
    from inaemu.experiment.tls import add_tls_arguments
    add_tls_arguments(parser)


def run(args) -> int:
    from inaemu.experiment.tls import RunTLSError, tls_from_args
    from inaemu.scenario import ScenarioError, load_scenario, run_scenario
    from inaemu.scenario.report import summary_lines
    try:                             # the files, before the scenario's network is built
        tls = tls_from_args(args, net=args.net)
    except RunTLSError as error:
        print(f"inaemu scenario: error: {error}", file=sys.stderr)
        return 2
    try:
        scenario = load_scenario(args.file)
    except (ScenarioError, OSError) as error:
        print(f"inaemu scenario: {args.file}: {error}", file=sys.stderr)
        return 2
    if args.seed is not None and args.seed < 0:
        print("inaemu scenario: --seed must be >= 0", file=sys.stderr)
        return 2
    out = Path(args.out) if args.out else Path("results") / (
        f"scenario-{scenario.name}-{time.strftime('%Y%m%d-%H%M%S')}")

    def say(line: str) -> None:
        if not args.quiet:
            print(line, file=sys.stderr, flush=True)

    try:
        result = run_scenario(scenario, net=args.net, out=out, seed=args.seed, progress=say,
                              tls=tls)
    except ScenarioError as error:
        print(f"inaemu scenario: {args.file}: {error}", file=sys.stderr)
        return 2
    for line in summary_lines(result):
        print(line)
    print(f"results: {out}/ (summary.json, jobs.csv, iterations.csv, events.csv, flows.csv, "
          f"timeline.png)")
    return 0 if result.correct else 1
