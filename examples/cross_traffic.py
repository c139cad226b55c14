"""INA and the ring under one bulk TCP flow on a shared link: what each job gets, and what
the flow gets.

    python examples/cross_traffic.py [--size 1MiB] [--out DIR]
"""

import argparse

from inaemu.scenario import Experiment

parser = argparse.ArgumentParser()
parser.add_argument("--size", default="1MiB")
parser.add_argument("--iterations", type=int, default=3)
parser.add_argument("--out", default=None)
args = parser.parse_args()

# two leaves, one spine; the flow goes into worker h6 of both jobs
exp = Experiment.leaf_spine(leaves=2, spines=1, hosts_per_leaf=5, bw_mbps=1000)
exp.set_options(switch_pps=1e6, elems_k=256)
exp.add_job("ina", algo="ina", workers=["h1", "h2", "h6", "h7"], size=args.size,
            iterations=args.iterations)
exp.add_job("ring", algo="ring", workers=["h3", "h4", "h8", "h9"], size=args.size,
            iterations=args.iterations, after="ina")
exp.tcp_flow("bulk", "h5", "h6", at=0)    # into worker h6: its access link is shared
result = exp.run(net="sim", out=args.out, progress=print)
for job in result.jobs:
    times = [it.allreduce_s for it in result.iterations_of(job.name)]
    mean = sum(times) / len(times) if times else float("nan")
    print(f"{job.name:5}: mean all-reduce {mean * 1e3:.3f} ms, correct {job.correct}")
for flow in result.flows:
    print(f"flow {flow.name}: {flow.goodput_mbps:.1f} Mbit/s")
raise SystemExit(0 if result.correct else 1)
