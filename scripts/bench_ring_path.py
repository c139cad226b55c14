"""The ring's per-segment path in C against the Python it replaces, on the native core:
`python scripts/bench_ring_path.py [--size-mib S] [--loss L] [--repeat N]`.

Runs the ring of issue 30's command (fat-tree k=8, 64 workers) through `simulate` on the
native core, alternately with `ring_worker.NATIVE_PATH` off (every segment, ACK and NIC-queue
departure in ring_worker.py / reliable.py) and on (native/ringpath.c), in this process, and
prints the CPU seconds of each (the switches' set-up done once before), best of `--repeat`, and their ratio; the two runs' records
must agree. Numbers, not assertions (docs/sim-native.md, "The ring's per-segment path in C").
"""

from __future__ import annotations

import argparse
import time

from inaemu.sim import SimJob, ring_worker, simulate
from inaemu.sim.driver import prepare_setup
from topologies.builders import fat_tree


def main() -> None:
    parser = argparse.ArgumentParser(prog="python scripts/bench_ring_path.py")
    parser.add_argument("--size-mib", type=float, default=0.25)
    parser.add_argument("--loss", type=float, default=0.0, help="percent, every link")
    parser.add_argument("--k", type=int, default=8)
    parser.add_argument("--workers", type=int, default=64)
    parser.add_argument("--repeat", type=int, default=3)
    args = parser.parse_args()
    topology = fat_tree(args.k)
    hosts = tuple(h.name for h in topology.hosts)[:args.workers]
    jobs = [SimJob(1, hosts)]
    setup = prepare_setup(topology, jobs, ina=False)     # set-up once, outside the timing
    best: dict[bool, float] = {}
    records: dict[bool, list] = {}
    frames = 0
    for _ in range(args.repeat):
        for on in (False, True):
            ring_worker.NATIVE_PATH = on
            started = time.process_time()
            result = simulate(topology, jobs, algo="ring",
                              size_bytes=int(args.size_mib * (1 << 20)), seed=0,
                              loss=args.loss or None, core="native", keep_results=False,
                              setup=setup)
            spent = time.process_time() - started
            best[on] = min(best.get(on, spent), spent)
            records[on] = [r.as_dict() for r in result.records]
            frames = result.frames
    ring_worker.NATIVE_PATH = True
    same = "yes" if records[True] == records[False] else "NO"
    print(f"ring, fat-tree k={args.k}, {args.workers} workers, {args.size_mib:g} MiB, "
          f"{args.loss:g} % loss, native core, CPU s inside simulate (best of {args.repeat}), "
          f"{frames:,} frames")
    print(f"Python per-segment path {best[False]:.2f} s ({frames / best[False]:,.0f} frames/s), "
          f"C {best[True]:.2f} s ({frames / best[True]:,.0f} frames/s): "
          f"{best[False] / best[True]:.2f}x, same records: {same}")


if __name__ == "__main__":
    main()
