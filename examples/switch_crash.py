"""A leaf switch crashes under an INA job and restarts: its hosts are cut off until it is
back, the job's tree is placed again on the restarted switch, and the sums are right.

    python examples/switch_crash.py [--size 1MiB] [--out DIR]
"""

import argparse

from inaemu.scenario import Experiment

parser = argparse.ArgumentParser()
parser.add_argument("--size", default="1MiB")
parser.add_argument("--out", default=None)
args = parser.parse_args()

exp = Experiment.leaf_spine(leaves=2, spines=2, hosts_per_leaf=2, bw_mbps=1000)
exp.set_options(switch_pps=1e6, elems_k=256)
# leaf l1 (hosts h1, h2) crashes: the job waits for it, then is placed again
exp.add_job("train", algo="ina", workers=["h1", "h2", "h3", "h4"], size=args.size,
            iterations=4, compute="2ms")
exp.switch_crash("l1", at="3ms")
exp.switch_restart("l1", at="30ms")
result = exp.run(net="sim", out=args.out, progress=print)
for event in result.events:
    print(event.description, "->", "; ".join(event.actions), event.recovery_s)
print(f"correct: {result.correct}")
raise SystemExit(0 if result.correct else 1)
