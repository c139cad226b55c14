"""The native core against the floor of a frame's cost, in the same run:
`python scripts/bench_frame_floor.py`.

Issue 30 asks for frame rates (20x the core it was filed against; a ResNet-50 iteration over
1,024 workers, ~234 M frames, in 5 minutes: ~780 k frames per wall second at that scale) that
the native core has not reached. How far could any implementation of the same frames go on
this machine? scripts/frame_floor.c simulates the same INA tree's frames in plain C with only
what every packet-level simulator of them must do (its comment lists what it leaves out), so
its rate is an upper bound for a simulator of these frames, and the native core's rate over it
is how much of the machine's ceiling the core reaches.

For each scale (`--scale K:WORKERS:MIB:WINDOW`, default fat-tree k = 8 with 64 workers at
1 MiB, and k = 16 with 1,024 workers at 0.25 MiB), alternating `--repeat` times: `inaemu run
--net sim --topo fat-tree --algo ina --sim-core native` with the same elements, pool, window,
bandwidth and delay, then the floor with those; prints each one's frames per wall second of
its loop and their ratio. Numbers, not assertions; both are timed in this run on this load.
"""

from __future__ import annotations

import argparse
import json
import math
import re
import shutil
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

FLOOR_SOURCE = Path(__file__).with_name("frame_floor.c")
DONE_LINE = re.compile(r"sim: done at [0-9.]+ s virtual, (\d+) events, (\d+) frames in "
                       r"([0-9.]+) s wall")
DEFAULT_SCALES = ("8:64:1:16", "16:1024:0.25:64")


def parse_scale(text: str) -> tuple[int, int, float, int]:
    """K:WORKERS:MIB:WINDOW, checked."""
    try:
        k, workers, mib, window = text.split(":")
        scale = int(k), int(workers), float(mib), int(window)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r}: expected K:WORKERS:MIB:WINDOW, "
                                         "e.g. 8:64:1:16") from None
    k, workers, mib, window = scale
    if k < 2 or k % 2 or not 2 <= workers <= k ** 3 // 4 or mib <= 0 or window < 1:
        raise argparse.ArgumentTypeError(f"{text!r}: k even and >= 2, 2 <= workers <= k^3/4, "
                                         "MIB > 0, WINDOW >= 1")
    return scale


def build_floor(workdir: Path) -> Path:
    """frame_floor.c built with the machine's C compiler, as fast as it builds (-O3, this CPU's
    instructions): a floor should not be raised by its build."""
    cc = shutil.which("cc") or shutil.which("gcc")
    if cc is None:
        sys.exit("bench_frame_floor: no C compiler (cc or gcc) on PATH")
    binary = workdir / "frame_floor"
    subprocess.run([cc, "-O3", "-march=native", "-o", str(binary), str(FLOOR_SOURCE)],
                   check=True)
    return binary


def run_native(k: int, workers: int, mib: float, window: int, args) -> tuple[int, float]:
    """(frames, loop wall seconds) of the native core, from `inaemu run`'s own summary line."""
    command = [sys.executable, "-m", "inaemu", "run", "--net", "sim", "--topo", "fat-tree",
               "--k", str(k), "--workers", str(workers), "--algo", "ina", "--size-mib",
               str(mib), "--elems", str(args.elems), "--pool", str(args.pool), "--window",
               str(window), "--bw", str(args.bw), "--sim-core", "native"]
    done = subprocess.run(command, capture_output=True, text=True)
    found = DONE_LINE.search(done.stdout + done.stderr)
    if done.returncode or found is None:
        sys.exit(f"bench_frame_floor: {' '.join(command)} failed:\n{done.stdout}{done.stderr}")
    return int(found.group(2)), float(found.group(3))


def run_floor(binary: Path, k: int, workers: int, mib: float, window: int, args) -> tuple[int, float]:
    """(frames, loop wall seconds) of the floor for the same chunks."""
    chunks = math.ceil(mib * 2 ** 20 / (args.elems * 4))
    done = subprocess.run([str(binary), str(k), str(workers), str(chunks), str(window),
                           str(args.pool), str(args.elems), str(args.bw), str(args.delay_us)],
                          capture_output=True, text=True)
    if done.returncode:
        sys.exit(f"bench_frame_floor: the floor failed ({done.returncode}): {done.stdout}"
                 f"{done.stderr}")
    out = json.loads(done.stdout)
    return out["frames"], out["seconds"]


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--scale", action="append", type=parse_scale, metavar="K:WORKERS:MIB:WINDOW",
                        help="a fat-tree's k, its workers, MiB each, INA window (repeatable; "
                             f"default {' and '.join(DEFAULT_SCALES)})")
    parser.add_argument("--repeat", type=int, default=3, help="alternating runs (default 3)")
    parser.add_argument("--elems", type=int, default=364, help="values a packet (default 364)")
    parser.add_argument("--pool", type=int, default=128, help="aggregator slots (default 128)")
    parser.add_argument("--bw", type=float, default=60.0, help="link Mbit/s (default 60)")
    parser.add_argument("--delay-us", type=float, default=0.0,
                        help="the floor's link delay in microseconds (default 0, as the fat-tree's)")
    args = parser.parse_args(argv)
    if args.repeat < 1:
        parser.error("--repeat must be at least 1")
    scales = args.scale or [parse_scale(s) for s in DEFAULT_SCALES]
    with tempfile.TemporaryDirectory() as tmp:
        binary = build_floor(Path(tmp))
        rows = []
        for k, workers, mib, window in scales:
            native, floor = [], []
            for i in range(args.repeat):
                frames, seconds = run_native(k, workers, mib, window, args)
                native.append(frames / seconds)
                floor_frames, floor_seconds = run_floor(binary, k, workers, mib, window, args)
                floor.append(floor_frames / floor_seconds)
                print(f"k={k} workers={workers} {mib} MiB window {window}, run {i + 1}/"
                      f"{args.repeat}: native {frames:,} frames at {native[-1] / 1e3:,.0f} k/s, "
                      f"floor {floor_frames:,} frames at {floor[-1] / 1e3:,.0f} k/s",
                      file=sys.stderr, flush=True)
            rows.append((k, workers, mib, window, statistics.median(native),
                         statistics.median(floor)))
    print(f"\n{'k':>3} {'workers':>7} {'MiB':>5} {'window':>6} {'native k/s':>11} "
          f"{'floor k/s':>10} {'native/floor':>12} {'ns a frame: native':>19} {'floor':>6}")
    for k, workers, mib, window, native, floor in rows:
        print(f"{k:>3} {workers:>7} {mib:>5g} {window:>6} {native / 1e3:>11,.0f} "
              f"{floor / 1e3:>10,.0f} {native / floor:>12.2f} {1e9 / native:>19,.0f} "
              f"{1e9 / floor:>6,.0f}")
    print("(medians; frames per wall second of each loop, this run)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
