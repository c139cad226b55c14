"""Hashed trees under loss (issue 31, last gap): static vs hashed tree aggregation on the
leaf-spine of tests/sim/test_hashed_sim.py, the same jobs, seeds and losses, in one run.

Two jobs aggregated as trees rooted at `sp1` of a 2-leaf, 2-spine leaf-spine (3 hosts a leaf):
job 1 on h1, h2 (leaf l1) and h4, h5 (l2), job 2 on h3 and h6; W = 16 slots per job. Static:
each job's slices in every tree switch. Hashed: each tree switch a shared pool of
`--shared-pairs` pairs (5: far fewer than the 32 (job, slot) keys, so most chunks go to the
tiers' host aggregators). Every link drops `loss` % of frames. Per (mode, loss) it prints how
many seeds finished with every worker correct, the virtual time of the slowest worker
(median and max over the finished seeds), the workers that gave up and why, and the ratio of
median times hashed / static measured in this run.

    .venv/bin/python scripts/bench_hashed_trees.py [--losses 0,5,7,10] [--seeds 1-8] [--loss-on host]
        [--without tier-timer,loopback,askers]

`--without` switches parts of issue 31's last step off, to see what each does: `tier-timer`
(a child tier's host aggregator re-asking its parent on its own timer, hosts/fallback_tier.py),
`loopback` (a host aggregator's reply to a member on its own host delivered locally, as the
kernel does, instead of crossing the host's link twice; hosts/fallback_node.py) and `askers`
(a hashed host aggregator sending a completed cell's RESULT also to each member that
retransmitted while it was pending, hosts/fallback.py). Run with
an older checkout's code (PYTHONPATH, a copy of this script outside the tree) for "before".
"""

from __future__ import annotations

import argparse
import dataclasses
import statistics
import sys
import time
from collections import Counter
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from inaemu.sim import driver  # noqa: E402
from inaemu.sim.driver import InaOptions, SimJob, simulate  # noqa: E402
from topologies.builders import leaf_spine  # noqa: E402
from topologies.model import Direction  # noqa: E402

JOBS = [SimJob(1, ("h1", "h2", "h4", "h5"), "sp1", hierarchical=True),
        SimJob(2, ("h3", "h6"), "sp1", hierarchical=True)]


def parse_seeds(text: str) -> list[int]:
    if "-" in text:
        low, high = text.split("-")
        return list(range(int(low), int(high) + 1))
    return [int(s) for s in text.split(",")]


def _reason(error: str) -> str:
    """A worker's error without its job and chunk: "no result for chunk 80 ..." -> "no result"."""
    text = error.split(": ", 1)[-1]
    return " ".join(text.split()[:2])


def topology(loss: float, links: str):
    """The leaf-spine, `loss` % on the links named: every link, the host links only or the
    switch-to-switch links only."""
    topo = leaf_spine(2, 2, 3)
    if links == "all" or not loss:
        return topo
    lossy = Direction(loss_percent=loss)
    chosen = [link for link in topo.links
              if (not topo.is_switch(link.a.node) or not topo.is_switch(link.b.node))
              == (links == "host")]
    return dataclasses.replace(topo, links=[
        dataclasses.replace(link, a_to_b=lossy, b_to_a=lossy) if link in chosen else link
        for link in topo.links])


def run_one(mode: str, loss: float, seed: int, args, setups: dict) -> dict:
    topo = topology(loss, args.loss_on)
    hashed = mode == "hashed"
    ina = InaOptions(pool_size=16, sharing="hashed" if hashed else "static",
                     shared_pairs=args.shared_pairs if hashed else None)
    if mode not in setups:
        setups[mode] = driver.prepare_setup(topo, JOBS, elems_k=32, pool_size=16,
                                            sharing=ina.sharing, shared_pairs=ina.shared_pairs)
    cpu = time.process_time()
    result = simulate(topo, JOBS, algo="ina", size_bytes=args.size_kib * 1024, seed=seed,
                      loss=(loss or None) if args.loss_on == "all" else None, ina=ina,
                      setup=setups[mode],
                      time_limit=args.time_limit_s)
    errors = Counter(_reason(r.error) for r in result.records if r.error)
    times = [r.time_s for r in result.records]
    done = result.correct and all(t is not None for t in times)
    return {"done": done, "time": max(times) if done else None, "errors": errors,
            "retx": sum(r.retransmissions for r in result.records),
            "cpu": time.process_time() - cpu}


def switch_off(parts: list[str]) -> None:
    """Default the named parts off in every host aggregator the simulator makes."""
    import functools

    from hosts import fallback, fallback_node, fallback_tier
    for part in parts:
        if part == "askers":
            cls, option = fallback.FallbackAggregator, "answer_askers"
        elif part == "tier-timer":
            cls, option = fallback_tier.TierAggregator, "timer"
        elif part == "loopback":
            cls, option = fallback_node.SimFallbackServer, "local_delivery"
        else:
            raise SystemExit(f"--without: no part {part!r} (tier-timer, loopback, askers)")
        init = cls.__init__
        cls.__init__ = functools.partialmethod(
            lambda self, *a, _init=init, _option=option, **kw: _init(self, *a,
                                                                     **{_option: False, **kw}))


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--losses", default="0,5,7,10", help="percent, on --loss-on's links")
    p.add_argument("--loss-on", choices=("all", "host", "switch"), default="all",
                   help="every link, the host links only, or the switch-to-switch links only")
    p.add_argument("--seeds", default="1-8")
    p.add_argument("--modes", default="static,hashed")
    p.add_argument("--shared-pairs", type=int, default=5)
    p.add_argument("--size-kib", type=int, default=32)
    p.add_argument("--time-limit-s", type=float, default=60.0)
    p.add_argument("--without", default="",
                   help="tier-timer,loopback,askers: switch these off")
    args = p.parse_args(argv)
    switch_off([part for part in args.without.split(",") if part])
    losses = [float(x) for x in args.losses.split(",")]
    seeds = parse_seeds(args.seeds)
    modes = args.modes.split(",")
    setups: dict = {}
    medians: dict = {}
    print("| loss % | mode | finished | slowest worker s, median (max) | gave up | "
          "retransmissions, mean | CPU s |")
    print("|---|---|---|---|---|---|---|")
    for loss in losses:
        for mode in modes:
            runs = [run_one(mode, loss, seed, args, setups) for seed in seeds]
            finished = [r["time"] for r in runs if r["done"]]
            errors = sum((r["errors"] for r in runs), Counter())
            med = statistics.median(finished) if finished else None
            medians[(loss, mode)] = med
            span = f"{med:.3f} ({max(finished):.3f})" if finished else "-"
            gave_up = ", ".join(f"{n} {e}" for e, n in errors.items()) or "-"
            retx = statistics.mean(r["retx"] for r in runs)
            cpu = sum(r["cpu"] for r in runs)
            print(f"| {loss:g} | {mode} | {len(finished)} of {len(runs)} | {span} | "
                  f"{gave_up} | {retx:.0f} | {cpu:.1f} |", flush=True)
    if "static" in modes and "hashed" in modes:
        print()
        for loss in losses:
            s, h = medians[(loss, "static")], medians[(loss, "hashed")]
            ratio = f"{h / s:.1f}" if s and h else "-"
            print(f"loss {loss:g} %: median slowest-worker time hashed / static = {ratio}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
