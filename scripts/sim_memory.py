"""What a simulated run holds, at two vector sizes: `python scripts/sim_memory.py [--algo ring]`.

Runs the same all-reduce (fat-tree k = 4, 16 workers; INA with tree aggregation, or the ring)
at `--sizes` MiB per worker, with the records' result arrays kept (`keep_results=True`: every
worker's inputs, payload table or accumulator, RESULT lanes and sum are whole vectors) and
without (streamed: a block at a time, docs/sim.md), and prints tracemalloc's peak per run and
its growth per MiB of vector; `--top N`: the N source lines holding the most at the larger
size's peak (where the memory goes). Numbers, not assertions; tests/sim/test_streamed.py and
tests/sim/test_ring_streamed.py assert the streamed growth.
"""

from __future__ import annotations

import argparse
import tracemalloc

from inaemu.sim import SimJob, simulate
from topologies.builders import fat_tree

MIB = 1 << 20


def peak_mib(size_mib: float, keep_results: bool, k: int, algo: str = "ina",
             top: int = 0) -> tuple[float, bool]:
    topology = fat_tree(k)
    hosts = tuple(h.name for h in topology.hosts)
    job = SimJob(1, hosts, switch="c0", hierarchical=True) if algo == "ina" else SimJob(1, hosts)
    tracemalloc.start()
    try:
        result = simulate(topology, [job], algo=algo, size_bytes=int(size_mib * MIB), bw=1000,
                          keep_results=keep_results)
        correct = result.correct
        peak = tracemalloc.get_traced_memory()[1]
        if top:     # what is held at the end (the peak's large arrays are still there)
            for stat in tracemalloc.take_snapshot().statistics("lineno")[:top]:
                print(f"    {stat.size / MIB:8.1f} MiB  {stat.count:7d} blocks  "
                      f"{stat.traceback[0]}")
    finally:
        tracemalloc.stop()
    return peak / MIB, correct


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python scripts/sim_memory.py")
    parser.add_argument("--sizes", type=float, nargs=2, default=(1.0, 4.0), metavar="MIB")
    parser.add_argument("--k", type=int, default=4, help="fat-tree k (k^3/4 workers)")
    parser.add_argument("--algo", choices=("ina", "ring"), default="ina")
    parser.add_argument("--top", type=int, default=0, metavar="N",
                        help="print the N source lines holding the most memory at the end "
                             "of the larger run")
    args = parser.parse_args(argv)
    small, large = args.sizes
    workers = args.k ** 3 // 4
    for keep in (True, False):
        low, ok_low = peak_mib(small, keep, args.k, args.algo)
        high, ok_high = peak_mib(large, keep, args.k, args.algo, args.top)
        growth = (high - low) / (large - small) / workers
        print(f"{args.algo} {'kept results' if keep else 'streamed':<13} {workers} workers: peak "
              f"{low:7.1f} MiB at {small:g} MiB, {high:7.1f} MiB at {large:g} MiB: "
              f"{growth:5.2f} MiB per MiB of each worker's vector "
              f"(correct: {ok_low and ok_high})")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
