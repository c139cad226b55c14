#!/usr/bin/env python3
"""Differential testing of inaemu against real p4c + simple_switch on random programs.

    .venv/bin/python scripts/difftest.py -n 200 --seed 0 [-j 2] [--out difftest-out]
                                         [--no-bmv2] [--minimize]

Runs N generated cases (seeds SEED..SEED+N-1) over 2 processes, prints a progress line, then a
table of disagreements by kind; each disagreeing case (program, STF, the four outcomes) is
written to OUT/seedK/ (with --minimize also a shrunk case.min.p4 / case.min.stf). Exit status 1
when any disagreement was found. Needs /opt/p4ref (see docs/difftest.md).
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from p4switch.difftest.batch import run_batch, summarize, write_case  # noqa: E402
from p4switch.reference import find_toolchain  # noqa: E402


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("-n", "--cases", type=int, default=100)
    ap.add_argument("--seed", type=int, default=0, help="first seed")
    ap.add_argument("-j", "--processes", type=int, default=2)
    ap.add_argument("--out", type=Path, default=Path("difftest-out"))
    ap.add_argument("--no-bmv2", action="store_true",
                    help="only inaemu's runtime (p4c JSON vs inaemu JSON)")
    ap.add_argument("--minimize", action="store_true", help="shrink each disagreeing case")
    args = ap.parse_args()
    if find_toolchain() is None:
        print("difftest: the reference toolchain (/opt/p4ref) is not installed", file=sys.stderr)
        return 2
    start = time.monotonic()
    reports = []
    seeds = range(args.seed, args.seed + args.cases)
    for report in run_batch(seeds, processes=args.processes, bmv2=not args.no_bmv2):
        reports.append(report)
        bad = sum(1 for r in reports if r.disagreeing)
        print(f"\r{len(reports)}/{args.cases} cases, {bad} disagreeing, "
              f"{time.monotonic() - start:.0f} s", end="", file=sys.stderr, flush=True)
        if report.disagreeing:
            folder = write_case(args.out, report)
            if args.minimize:
                _minimize(folder, report, not args.no_bmv2)
    print(file=sys.stderr)
    counts = summarize(reports)
    width = max(len(k) for k in counts)
    print(f"{'what':<{width}}  count")
    for key in sorted(counts, key=lambda k: (k.startswith("disagreement"), k)):
        print(f"{key:<{width}}  {counts[key]}")
    print(f"{args.cases} cases in {time.monotonic() - start:.0f} s"
          + (f"; disagreeing cases in {args.out}/" if any(r.disagreeing for r in reports)
             else ""))
    return 1 if any(r.disagreeing for r in reports) else 0


def _minimize(folder: Path, report, bmv2: bool) -> None:
    from p4switch.difftest.generator import generate_case
    from p4switch.difftest.minimize import minimize, still_disagrees
    from p4switch.difftest.outcome import UNSPECIFIED
    kind = next(k for k in report.kinds if k not in UNSPECIFIED)
    small = minimize(generate_case(report.seed), still_disagrees(kind, bmv2))
    (folder / "case.min.p4").write_text(small.source)
    (folder / "case.min.stf").write_text(small.stf)


if __name__ == "__main__":
    sys.exit(main())
