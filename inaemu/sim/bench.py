"""How fast the simulator runs: `python -m inaemu.sim.bench [--workers N] [--size-kib S]`.

Prints, per algorithm, the frames moved and the packets the switch processed per second of wall
time, and the share of the wall time spent inside the switch runtime (the rest is the event
loop, the links and the host sessions). Numbers, not assertions: they depend on the machine.
"""

from __future__ import annotations

import argparse

from inaemu.sim.driver import SimJob, simulate
from topologies.builders import star


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m inaemu.sim.bench")
    parser.add_argument("--workers", type=int, default=8)
    parser.add_argument("--size-kib", type=int, default=256)
    parser.add_argument("--elems", type=int, default=32)
    parser.add_argument("--loss", type=float, default=0.0)
    args = parser.parse_args(argv)
    topology = star(args.workers)
    job = [SimJob(1, tuple(h.name for h in topology.hosts))]
    for algo in ("ina", "ring"):
        result = simulate(topology, job, algo=algo, size_bytes=args.size_kib * 1024,
                          elems_k=args.elems, loss=args.loss, bw=1000, time_runtime=True)
        virtual = max(r.time_s or 0.0 for r in result.records)
        print(f"{algo}: {args.workers} workers x {args.size_kib} KiB, loss {args.loss}%: "
              f"{virtual:.4f} s virtual in {result.wall_s:.2f} s wall; "
              f"{result.frames / result.wall_s:,.0f} frames/s, "
              f"{result.switch_packets / result.wall_s:,.0f} switch packets/s, "
              f"{100 * result.runtime_wall_s / result.wall_s:.0f}% of wall in the runtime; "
              f"correct={result.correct}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
