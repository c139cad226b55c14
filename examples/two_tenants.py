"""Two tenants, one after the other on the same hosts, and a third beside them: jobs arrive
on a network that stays up, and each is placed by the controller when it arrives.

    python examples/two_tenants.py [--size 1MiB] [--out DIR]
"""

import argparse

from inaemu.scenario import Experiment

parser = argparse.ArgumentParser()
parser.add_argument("--size", default="1MiB")
parser.add_argument("--out", default=None)
args = parser.parse_args()

exp = Experiment.leaf_spine(leaves=4, spines=2, hosts_per_leaf=4, bw_mbps=1000)
exp.set_options(switch_pps=1e6, elems_k=256)
first = ["h1", "h5", "h9", "h13"]
exp.add_job("first", algo="ina", workers=first, size=args.size, iterations=2)
exp.add_job("second", algo="ina", workers=first, size=args.size, iterations=2, after="first")
exp.add_job("beside", algo="ring", workers=["h2", "h6", "h10", "h14"], size=args.size,
            iterations=2, start="1ms")
result = exp.run(net="sim", out=args.out, progress=print)
for job in result.jobs:
    print(f"{job.name:7} {job.algo:5} arrived {job.arrived_s * 1e3:8.3f} ms, ended "
          f"{job.ended_s * 1e3:8.3f} ms, correct {job.correct}")
raise SystemExit(0 if result.correct else 1)
