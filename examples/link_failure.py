"""A link of an INA job's tree fails mid-job and comes back: the controller re-routes,
re-plans the tree, and the job still ends with the right sums.

    python examples/link_failure.py [--size 8MiB] [--out DIR]
"""

import argparse

from inaemu.scenario import Experiment

parser = argparse.ArgumentParser()
parser.add_argument("--size", default="8MiB")
parser.add_argument("--out", default=None)
args = parser.parse_args()

exp = Experiment.fat_tree(k=4, bw_mbps=1000, delay_ms=0.005)
exp.set_options(switch_pps=1e6, elems_k=256, detection="1ms")
exp.add_job("train", algo="ina", workers=exp.hosts, size=args.size, iterations=3)
exp.link_down("a0_0", "c0", at="0.3ms")     # during the first iteration
exp.link_up("a0_0", "c0", at="5ms")
result = exp.run(net="sim", out=args.out, progress=print)

failure = result.events[0]
print(f"correct: {result.job('train').correct}; controller learnt it after "
      f"{(failure.detected_s - failure.at_s) * 1e3:.3f} ms; the job progressed again "
      f"{failure.recovery_s['train'] * 1e3:.3f} ms after the failure")
print("placements:", [p["switches"][0] for p in result.job("train").placements])
raise SystemExit(0 if result.correct else 1)
