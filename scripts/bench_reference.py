"""What the reference oracle costs per STF test, next to inaemu's own runtime, in one run.

    .venv/bin/python scripts/bench_reference.py [-k NAME] [--repeat 3]

For every program of tests/p4 with an STF test: real p4c's compile time (uncached), the wall time
of the whole STF test on real simple_switch (process start, CLI, every command and packet, stop)
and of the same test on inaemu's runtime with the same JSON, then the totals, the per-test
overhead of simple_switch and the ratio bmv2/inaemu. Also the time of one packet on a running
simple_switch (the cost of the log-driven completion wait). Nothing is asserted.
"""

from __future__ import annotations

import argparse
import statistics
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from p4switch.reference import compile_p4, find_toolchain, run_stf_bmv2, run_stf_inaemu  # noqa
from p4switch.reference.bmv2 import SimpleSwitch  # noqa: E402


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("-k", dest="pattern", default="")
    parser.add_argument("--repeat", type=int, default=3, help="runs per test (median kept)")
    args = parser.parse_args()
    toolchain = find_toolchain()
    if toolchain is None:
        print("the reference toolchain is not installed (/opt/p4ref)")
        return 2
    cache = Path(tempfile.mkdtemp(prefix="bench-reference-"))
    rows = []
    for program in sorted((ROOT / "tests" / "p4").glob("*.p4")):
        if args.pattern not in program.stem:
            continue
        stf = program.with_suffix(".stf")
        if not stf.is_file():
            continue
        built = compile_p4(toolchain, program, cache_dir=cache, p4runtime=False)
        if not built.ok:
            continue
        real = [run_stf_bmv2(built.json_path, stf, toolchain=toolchain)
                for _ in range(args.repeat)]
        mine = [run_stf_inaemu(built.json_path, stf) for _ in range(args.repeat)]
        rows.append((program.stem, built.seconds, statistics.median(o.seconds for o in real),
                     statistics.median(o.seconds for o in mine), real[0].passed))
        print(f"{program.stem:22s} p4c {built.seconds:6.2f} s   simple_switch "
              f"{rows[-1][2] * 1000:6.0f} ms   inaemu {rows[-1][3] * 1000:6.0f} ms   "
              f"{'pass' if real[0].passed else 'FAIL'}", flush=True)
    if not rows:
        print("no program matched")
        return 2
    p4c, bmv2, mine = (sum(r[i] for r in rows) for i in (1, 2, 3))
    n = len(rows)
    print(f"\n{n} tests: p4c {p4c:.1f} s ({p4c / n:.2f} s each), simple_switch {bmv2:.2f} s "
          f"({bmv2 / n * 1000:.0f} ms each), inaemu {mine:.2f} s ({mine / n * 1000:.0f} ms each); "
          f"simple_switch/inaemu = {bmv2 / mine:.1f}")
    program = ROOT / "tests" / "p4" / "basic.p4"
    built = compile_p4(toolchain, program, cache_dir=cache)
    frame = bytes.fromhex("00000000FF00 080000000101 0800 4500002012340000401151970A0001010A000202"
                          " 00350035000C0000CAFE0001")
    with SimpleSwitch(toolchain, built.json_path) as switch:
        start = time.monotonic()
        for _ in range(200):
            switch.send(1, frame)
        per_packet = (time.monotonic() - start) / 200
    print(f"one packet on a running simple_switch (send, wait for the log, read): "
          f"{per_packet * 1e6:.0f} us")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
