"""Cost of the lane formats in the switch runtime: ina.p4's contributions per second, in-process.

    .venv/bin/python scripts/bench_formats.py [--k 64 256] [--rounds 1000] [--baseline REV]

int32 packets take `ina_add` (one 32-bit add per lane, plus the exponent max and the overflow
flag merge of issue 15); int16/int8 packets take `ina_add_packed` (a SWAR add and an overflow
test per lane, 2 or 4 values each). `--baseline REV` also runs p4src/ina.p4 as it was at git
revision REV (default 5650331, before issue 15's switch changes) on int32 packets. Packets are
bench_ina_switch.py's (one job of 4 workers, protocol order, every cell completed and
multicast) with the format bits set. Prints the best of --repeat runs; ratios are from this run.
"""

from __future__ import annotations

import argparse
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "scripts"))

import bench_ina_switch as ina_bench  # noqa: E402
from p4switch.compiler import compile_file  # noqa: E402
from p4switch.runtime import Switch  # noqa: E402

FLAGS_OFFSET = 14 + 20 + 8 + 1      # Ethernet, IPv4, UDP, then the aggregation header's kind
FORMATS = {"int32": 0, "int16": 1, "int8": 2}


def with_format(packets: list[tuple[int, bytes]], code: int) -> list[tuple[int, bytes]]:
    return [(port, data[:FLAGS_OFFSET] + bytes([data[FLAGS_OFFSET] | code << 2])
             + data[FLAGS_OFFSET + 1:]) for port, data in packets]


def program_at(revision: str, k: int) -> dict:
    """ina.p4 and its includes as of `revision`, compiled with INA_K=k."""
    with tempfile.TemporaryDirectory() as folder:
        names = subprocess.run(["git", "ls-tree", "--name-only", revision, "p4src/"], cwd=ROOT,
                               check=True, capture_output=True, text=True).stdout.split()
        for name in (Path(path).name for path in names
                     if path.endswith((".p4", ".p4inc"))):
            text = subprocess.run(["git", "show", f"{revision}:p4src/{name}"], cwd=ROOT,
                                  check=True, capture_output=True, text=True).stdout
            (Path(folder) / name).write_text(text)
        return compile_file(str(Path(folder) / "ina.p4"), defines={"INA_K": str(k)}).bmv2


def best_rate(program: dict, packets, n: int, rounds: int, repeat: int) -> float:
    best = 0.0
    for _ in range(repeat):
        sw = Switch(program)
        ina_bench.apply_control_plane(sw, ina_bench.control_plane(n))
        ina_bench.rate(sw, packets[:200])                      # warm up
        sw = Switch(program)
        ina_bench.apply_control_plane(sw, ina_bench.control_plane(n))
        pps, out = ina_bench.rate(sw, packets)
        if out != rounds * n:
            raise SystemExit(f"expected {rounds * n} results, got {out}")
        best = max(best, pps)
    return best


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--k", type=int, nargs="+", default=[64, 256])
    parser.add_argument("--rounds", type=int, default=1000)
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--baseline", default="5650331")
    args = parser.parse_args(argv)
    n = 4
    print(f"{'k':>4} {'program':>10} {'format':>6} {'contrib/s':>10} {'us/pkt':>7} "
          f"{'values/s':>11} {'vs int32':>8}")
    for k in args.k:
        base = ina_bench.contributions(k, n, args.rounds)
        now = ina_bench.ina_bmv2_json(k)
        rows = []
        if args.baseline:
            rows.append((f"@{args.baseline[:7]}", "int32", program_at(args.baseline, k), base))
        for fmt, code in FORMATS.items():
            rows.append(("now", fmt, now, with_format(base, code)))
        reference = None
        for label, fmt, program, packets in rows:
            pps = best_rate(program, packets, n, args.rounds, args.repeat)
            if label == "now" and fmt == "int32":
                reference = pps
            values = pps * k * 32 // {"int32": 32, "int16": 16, "int8": 8}[fmt]
            ratio = f"{pps / reference:.2f}" if reference else "-"
            print(f"{k:>4} {label:>10} {fmt:>6} {pps:>10,.0f} {1e6 / pps:>7.1f} "
                  f"{values:>11,.0f} {ratio:>8}", flush=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
