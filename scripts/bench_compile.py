#!/usr/bin/env python3
"""Compile-speed benchmark for `inaemu compile`: programs per second, per program and overall.

Compiles each program (default: the shared fixtures, tests/p4 and the compiler's own test
programs) several times in-process and prints the rate. A performance report, not a test: it
asserts nothing, it prints numbers to compare across changes.
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))


def default_programs() -> list[Path]:
    dirs = [ROOT.parent / "shared" / "fixtures", ROOT / "tests" / "p4", ROOT / "tests" / "compiler" / "programs"]
    found = []
    for d in dirs:
        if d.is_dir():
            found += sorted(d.rglob("*.p4"))
    return found


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("programs", nargs="*", type=Path, help="P4 programs (default: the corpus)")
    parser.add_argument("--repeat", type=int, default=5, help="compilations per program")
    args = parser.parse_args(argv)
    from p4switch.compiler import CompileError, compile_file

    programs = args.programs or default_programs()
    total_time, total_runs = 0.0, 0
    print(f"{'program':40s} {'ms/compile':>11s} {'programs/s':>11s}")
    for program in programs:
        try:
            compile_file(program)  # warm-up (imports, caches)
        except CompileError as exc:
            print(f"{program.name:40s} does not compile: {exc.diagnostics[0][3]}")
            continue
        started = time.perf_counter()
        for _ in range(args.repeat):
            compile_file(program)
        elapsed = time.perf_counter() - started
        total_time += elapsed
        total_runs += args.repeat
        per = elapsed / args.repeat
        print(f"{program.name:40s} {per * 1000:11.1f} {1 / per:11.1f}")
    if total_runs:
        print(f"{'overall':40s} {total_time / total_runs * 1000:11.1f} {total_runs / total_time:11.1f}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
