"""A straggler against the α-β-γ model (docs/scenarios.md): 16 workers, one computing 2× longer.

Runs INA and the ring on a star at --bw Mbit/s with --compute per iteration, without and with
the straggler, in the simulator, and prints each iteration time beside the model's: the
slowest worker's compute plus the model's all-reduce time (inaemu.model.predict with the
simulated switch's per-packet cost), and measured/model.

    python scripts/scenario_straggler.py [--size 1MiB] [--compute 10ms] [--bw 1000]
"""

from __future__ import annotations

import argparse

from inaemu.model import predict
from inaemu.model.network import SwitchCosts
from inaemu.scenario import Experiment
from inaemu.scenario.units import duration_s, size_bytes

WORKERS = 16
PPS = 1e6
K = 256
POOL = 64


def measured(algo: str, size: str, compute: str, bw: float, factor: float) -> list[float]:
    exp = Experiment.star(hosts=WORKERS, bw_mbps=bw)
    exp.set_options(switch_pps=PPS, elems_k=K, pool_size=POOL)
    exp.add_job(algo, algo=algo, workers=exp.hosts, size=size, iterations=3, compute=compute)
    if factor != 1:
        exp.slow_worker("h3", compute_factor=factor)
    result = exp.run()
    assert result.correct, result.jobs[0].error
    return [it.ended_s - it.started_s for it in result.iterations]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--size", default="1MiB")
    parser.add_argument("--compute", default="10ms")
    parser.add_argument("--bw", type=float, default=1000.0)
    args = parser.parse_args()
    compute = duration_s(args.compute, "--compute")
    size = size_bytes(args.size, "--size")
    exp = Experiment.star(hosts=WORKERS, bw_mbps=args.bw)
    topology = exp.network.topology()
    switch = SwitchCosts(per_packet_s=1 / PPS, per_copy_s=0.0)
    print(f"| algorithm | straggler | iteration measured (ms) | model (ms) | measured/model |")
    print("|---|---|---|---|---|")
    for algo in ("ina", "ring"):
        model_ar = predict(algo, topology, exp.hosts, size, bw_mbps=args.bw, switch=switch,
                           elems_k=K, window=POOL).time_s
        for factor in (1.0, 2.0):
            times = measured(algo, args.size, args.compute, args.bw, factor)
            mean = sum(times) / len(times)
            model = compute * factor + model_ar
            print(f"| {algo} | {'2x compute' if factor != 1 else 'none'} | {mean * 1e3:.2f} | "
                  f"{model * 1e3:.2f} | {mean / model:.3f} |")


if __name__ == "__main__":
    main()
