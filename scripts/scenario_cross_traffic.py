"""INA and the ring with and without one bulk TCP flow on a shared link (docs/scenarios.md).

Leaf-spine, 2 leaves and 1 spine at --bw Mbit/s (non-blocking uplinks): each job has two
workers under each leaf, and the flow goes from another host into worker h4, so h4's access
link (leaf to h4) carries the job's traffic to h4 and the flow's data.
Prints per algorithm the mean all-reduce time alone and beside the flow, and the flow's
goodput while it shared the links (all from runs of this script, same seed).

    python scripts/scenario_cross_traffic.py [--size 1MiB] [--bw 1000] [--iterations 3]
"""

from __future__ import annotations

import argparse

from inaemu.scenario import Experiment


def one(algo: str, size: str, bw: float, iterations: int, flow: bool):
    exp = Experiment.leaf_spine(leaves=2, spines=1, hosts_per_leaf=3, bw_mbps=bw)
    exp.set_options(switch_pps=1e6, elems_k=256, pool_size=32)
    exp.add_job(algo, algo=algo, workers=["h1", "h2", "h4", "h5"], size=size,
                iterations=iterations)
    if flow:
        exp.tcp_flow("bulk", "h3", "h4", at=0)   # into worker h4: its access link is shared
    result = exp.run()
    assert result.correct, result.jobs[0].error
    times = [it.allreduce_s for it in result.iterations]
    goodput = result.flows[0].goodput_mbps if flow else None
    return sum(times) / len(times), goodput, result.duration_s


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--size", default="1MiB")
    parser.add_argument("--bw", type=float, default=1000.0)
    parser.add_argument("--iterations", type=int, default=3)
    args = parser.parse_args()
    print(f"| algorithm | all-reduce alone (ms) | beside bulk TCP (ms) | slowdown | "
          f"TCP goodput beside it (Mbit/s) | TCP share of {args.bw:g} Mbit/s |")
    print("|---|---|---|---|---|---|")
    for algo in ("ina", "ring"):
        alone, _, _ = one(algo, args.size, args.bw, args.iterations, False)
        shared, goodput, _ = one(algo, args.size, args.bw, args.iterations, True)
        print(f"| {algo} | {alone * 1e3:.2f} | {shared * 1e3:.2f} | {shared / alone:.2f}x | "
              f"{goodput:.0f} | {goodput / args.bw:.0%} |")


if __name__ == "__main__":
    main()
