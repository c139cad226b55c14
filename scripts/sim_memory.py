"""What a simulated INA run holds, at two vector sizes: `python scripts/sim_memory.py`.

Runs the same INA all-reduce (fat-tree k = 4, 16 workers, tree aggregation) at `--sizes`
MiB per worker, with the records' result arrays kept (`keep_results=True`: every worker's
inputs, payload table, RESULT lanes and sum are whole vectors) and without (streamed: a block
at a time, docs/sim.md), and prints tracemalloc's peak per run and its growth per MiB of
vector. Numbers, not assertions; tests/sim/test_streamed.py asserts the streamed growth.
"""

from __future__ import annotations

import argparse
import tracemalloc

from inaemu.sim import SimJob, simulate
from topologies.builders import fat_tree

MIB = 1 << 20


def peak_mib(size_mib: float, keep_results: bool, k: int) -> tuple[float, bool]:
    topology = fat_tree(k)
    hosts = tuple(h.name for h in topology.hosts)
    tracemalloc.start()
    try:
        result = simulate(topology, [SimJob(1, hosts, switch="c0", hierarchical=True)],
                          algo="ina", size_bytes=int(size_mib * MIB), bw=1000,
                          keep_results=keep_results)
        correct = result.correct
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    return peak / MIB, correct


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python scripts/sim_memory.py")
    parser.add_argument("--sizes", type=float, nargs=2, default=(1.0, 4.0), metavar="MIB")
    parser.add_argument("--k", type=int, default=4, help="fat-tree k (k^3/4 workers)")
    args = parser.parse_args(argv)
    small, large = args.sizes
    workers = args.k ** 3 // 4
    for keep in (True, False):
        low, ok_low = peak_mib(small, keep, args.k)
        high, ok_high = peak_mib(large, keep, args.k)
        growth = (high - low) / (large - small) / workers
        print(f"{'kept results' if keep else 'streamed':<13} {workers} workers: peak "
              f"{low:7.1f} MiB at {small:g} MiB, {high:7.1f} MiB at {large:g} MiB: "
              f"{growth:5.2f} MiB per MiB of each worker's vector "
              f"(correct: {ok_low and ok_high})")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
