#!/usr/bin/env python3
"""The switch pipeline's cost per packet, by kind of packet, against a baseline runtime.

    .venv/bin/python scripts/bench_pipeline.py [--baseline /tmp/old/p4switch/runtime]

Kinds: p4src/ina.p4 (INA_K=32, one job of 4 workers) contributions the switch absorbs,
completing contributions (a 4-way result multicast), plain routed UDP through ina.p4's
forwarding (its LPM table), and p4src/l3_forward.p4's routed packet (LPM, TTL, checksums,
counters). Every packet goes through `Switch.receive` and is timed alone (the timer's own cost,
measured, taken off); each round alternates the runtimes, and for each kind the median packet
of a round, best over the rounds, counts (a burst of other work on a shared machine spoils a
packet or a round, not a result). A baseline
is another version of the `p4switch/runtime` package (`git archive <rev> p4switch/runtime |
tar -x -C /tmp/old`). Numbers, not assertions (docs/sim-native.md, "The switch pipeline per
packet").
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "scripts"))

import bench_ina_switch as ina_bench  # noqa: E402
import bench_switch as switch_bench  # noqa: E402
import p4switch.runtime as current_runtime  # noqa: E402
from p4switch.compiler import compile_file  # noqa: E402
from tests.ina.packets import Endpoint, eth_ipv4_udp, ip  # noqa: E402

K, WORKERS = 32, 4     # lanes per packet (`--k`), workers of the job
KINDS = ("contribution", "result multicast", "ina routed", "l3_forward routed")
L3_ROUTES = ((0x0A000100, 24, 0x080000000111, 1), (0x0A000200, 24, 0x080000000222, 2),
             (0x0A000280, 25, 0x080000000333, 3), (0x0A000000, 8, 0x080000000444, 4))
ROUTER_MAC = 0x000000000100


def ina_switch(runtime, program: dict):
    saved = ina_bench.Switch, ina_bench.ExactKey, ina_bench.LpmKey
    ina_bench.Switch, ina_bench.ExactKey, ina_bench.LpmKey = (
        runtime.Switch, runtime.ExactKey, runtime.LpmKey)
    try:
        return ina_bench.configured_switch(K, WORKERS, program)
    finally:
        ina_bench.Switch, ina_bench.ExactKey, ina_bench.LpmKey = saved


def l3_switch(runtime, program: dict):
    sw = runtime.Switch(program)
    for prefix, length, mac, port in L3_ROUTES:
        sw.table_add("ipv4_lpm", [runtime.LpmKey(prefix, length)], "ipv4_forward", (mac, port))
    return sw


def l3_packets(count: int) -> list[tuple[int, bytes]]:
    """UDP from 10.0.1.1 to addresses that match the /8, /24 and /25 routes."""
    source = Endpoint(0x000000000011, ip("10.0.1.1"))
    targets = [ip("10.0.2.2"), ip("10.0.2.200"), ip("10.5.5.5"), ip("10.0.1.9")]
    frames = [eth_ipv4_udp(source, Endpoint(ROUTER_MAC, t), bytes(64), sport=4000 + i,
                           dport=5000) for i, t in enumerate(targets)]
    return [(1, frames[i % len(frames)]) for i in range(count)]


def timer_cost() -> float:
    clock = time.perf_counter
    best = 1.0
    for _ in range(5):
        start = clock()
        for _ in range(10000):
            clock()
            clock()
        best = min(best, (clock() - start) / 10000)
    return best / 2   # one clock() call's share of a start/stop pair


def one_round(runtime, programs: dict, packets: dict) -> dict[str, float]:
    """The median microseconds per packet of each kind, on fresh switches (a median: a packet
    that other work on the machine preempted does not move it)."""
    clock = time.perf_counter
    took: dict[str, list[float]] = {kind: [] for kind in KINDS}
    sw = ina_switch(runtime, programs["ina"])
    receive = sw.receive
    for port, data in packets["ina"]:
        start = clock()
        out = receive(port, data)
        spent = clock() - start
        took["contribution" if not out else "result multicast"].append(spent)
    for name, kind, switch in (("routed", "ina routed", sw),
                               ("l3", "l3_forward routed",
                                l3_switch(runtime, programs["l3"]))):
        receive = switch.receive
        for port, data in packets[name]:
            start = clock()
            out = receive(port, data)
            took[kind].append(clock() - start)
            if len(out) != 1:
                raise SystemExit(f"{kind}: expected one copy out, got {len(out)}")
    return {kind: statistics.median(took[kind]) * 1e6 for kind in KINDS}


def main(argv: list[str] | None = None) -> int:
    global K
    parser = argparse.ArgumentParser(prog="python scripts/bench_pipeline.py")
    parser.add_argument("--baseline", help="directory of another p4switch/runtime package")
    parser.add_argument("--rounds", type=int, default=7)
    parser.add_argument("--cells", type=int, default=500, help="INA cells per round")
    parser.add_argument("--k", type=int, default=32,
                        help="lanes per INA packet (the simulator's runs use 364)")
    args = parser.parse_args(argv)
    K = args.k
    runtimes = [("current", current_runtime)]
    if args.baseline:
        runtimes.insert(0, ("baseline", switch_bench.load_baseline(args.baseline)))
    programs = {"ina": ina_bench.ina_bmv2_json(K),
                "l3": compile_file(str(ROOT / "p4src" / "l3_forward.p4")).bmv2}
    plain = eth_ipv4_udp(ina_bench.host(0), Endpoint(ina_bench.SWITCH_MAC,
                                                     ina_bench.host(1).addr),
                         bytes(16 + 4 * K), sport=5000, dport=5000)
    packets = {"ina": ina_bench.contributions(K, WORKERS, args.cells),
               "routed": [(1, plain)] * args.cells * 2, "l3": l3_packets(args.cells * 2)}
    overhead = timer_cost() * 1e6
    best = {label: {kind: float("inf") for kind in KINDS} for label, _ in runtimes}
    for _ in range(args.rounds):
        for label, runtime in runtimes:
            for kind, us in one_round(runtime, programs, packets).items():
                best[label][kind] = min(best[label][kind], us - overhead)
    print(f"us per packet through Switch.receive, the median packet, best of {args.rounds} "
          f"rounds (timer's {overhead:.2f} us taken off)")
    print(f"{'kind':<20}" + "".join(f"{label:>10}" for label, _ in runtimes) +
          ("   ratio" if args.baseline else ""))
    for kind in KINDS:
        row = f"{kind:<20}" + "".join(f"{best[label][kind]:>10.2f}" for label, _ in runtimes)
        if args.baseline:
            row += f"{best['baseline'][kind] / best['current'][kind]:>8.2f}x"
        print(row)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
