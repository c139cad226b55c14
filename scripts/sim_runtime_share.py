#!/usr/bin/env python3
"""The switch runtime's share of a simulator run: `python scripts/sim_runtime_share.py`.

Runs issue 30's commands (fat-tree k=8, 64 workers, `--algo ina` and `--algo ring`, 0.25 MiB,
the native core) through `inaemu run`'s own code (scripts/bench_sim_cores.py's `run`) and
prints `SimResult.runtime_wall_s` (wall time inside the switch ports' calls into the runtime)
against the run's wall time, and per switch packet. Wall time: on a shared machine these move
with the load. Numbers, not assertions (docs/sim-native.md, "The switch pipeline per packet").
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
import bench_sim_cores  # noqa: E402


def share(algo: str, size_mib: str) -> None:
    real, got = bench_sim_cores.simulate, {}

    def capture(*args, **kwargs):
        got["result"] = real(*args, **kwargs, time_runtime=True)
        return got["result"]

    bench_sim_cores.simulate = capture
    try:
        bench_sim_cores.run(["--topo", "fat-tree", "--k", "8", "--workers", "64", "--algo", algo,
                             "--size-mib", size_mib, "--sim-core", "native"])
    finally:
        bench_sim_cores.simulate = real
    r = got["result"]
    print(f"{algo}: wall {r.wall_s:.2f} s, runtime {r.runtime_wall_s:.2f} s "
          f"({100 * r.runtime_wall_s / r.wall_s:.0f} %), {r.switch_packets} switch packets, "
          f"{1e6 * r.runtime_wall_s / r.switch_packets:.1f} us each", flush=True)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python scripts/sim_runtime_share.py")
    parser.add_argument("--size-mib", default="0.25")
    parser.add_argument("--repeat", type=int, default=2)
    args = parser.parse_args(argv)
    for algo in ("ina", "ring"):
        for _ in range(args.repeat):
            share(algo, args.size_mib)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
