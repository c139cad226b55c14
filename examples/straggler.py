"""One of 16 workers computes twice as slowly: per-iteration times of INA and the ring both
show it (the iteration waits for the slowest worker's compute).

    python examples/straggler.py [--size 1MiB] [--iterations 3] [--out DIR]
"""

import argparse

from inaemu.scenario import Experiment

parser = argparse.ArgumentParser()
parser.add_argument("--size", default="1MiB")
parser.add_argument("--iterations", type=int, default=3)
parser.add_argument("--compute", default="10ms")
parser.add_argument("--out", default=None)
args = parser.parse_args()

exp = Experiment.star(hosts=32, bw_mbps=1000)
exp.set_options(switch_pps=1e6, elems_k=256)
exp.add_job("ina", algo="ina", workers=exp.hosts[:16], size=args.size,
            iterations=args.iterations, compute=args.compute)
exp.add_job("ring", algo="ring", workers=exp.hosts[16:], size=args.size,
            iterations=args.iterations, compute=args.compute, after="ina")
exp.slow_worker("h3", at=0, compute_factor=2.0)
exp.slow_worker("h19", at=0, compute_factor=2.0)
result = exp.run(net="sim", out=args.out, progress=print)
for it in result.iterations:
    print(f"{it.job:5} iteration {it.iteration}: {(it.ended_s - it.started_s) * 1e3:8.3f} ms "
          f"(compute until {(it.compute_done_s - it.started_s) * 1e3:.3f} ms, "
          f"all-reduce {it.allreduce_s * 1e3:.3f} ms)")
raise SystemExit(0 if result.correct else 1)
