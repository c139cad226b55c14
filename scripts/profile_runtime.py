#!/usr/bin/env python3
"""Compare the switch runtime against a baseline copy of it, interleaved, on busy machines.

    .venv/bin/python scripts/profile_runtime.py --baseline /tmp/old/p4switch/runtime
    .venv/bin/python scripts/profile_runtime.py --source 32 > ina32.py    # generated code
    .venv/bin/python scripts/profile_runtime.py --profile ina256           # cProfile one workload
    .venv/bin/python scripts/profile_runtime.py --stages --baseline DIR    # where the time goes

Workloads: `ina32`, `ina64`, `ina256` (p4src/ina.p4 contributions in protocol order, as
scripts/bench_ina_switch.py feeds them), `exact`, `register` (the programs of
scripts/bench_switch.py) and `lpm` (the shared ipv4_lpm fixture, when ../shared is there).
Each round runs every workload on every runtime, alternating chunk by chunk, so a load spike
from other work hits both; for every chunk of 100 packets the best time over the rounds counts
(a burst of other work spoils one chunk of one round, not a result).
A baseline is a directory holding another version of the `p4switch/runtime` package (e.g. made
with `git archive <rev> p4switch/runtime | tar -x -C /tmp/old`); it is imported under another
name, so both run in this process on the same BMv2 JSON. Nothing here is a test: it only prints.
"""

from __future__ import annotations

import argparse
import cProfile
import pstats
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

WORKLOADS = ("ina32", "ina64", "ina256", "exact", "register", "lpm")
LPM_FIXTURE = ROOT.parent / "shared" / "fixtures" / "ipv4_lpm"
LPM_PACKETS = [bytes.fromhex(h) for h in (
    "000000000099000000000011080045000018000100004011A719C0A800010A09090901020304",
    "000000000099000000000011080045000018000100004011A721C0A800010A01090901020304",
    "000000000099000000000011080045000018000100004011AF23C0A800010A01010701020304")]
INA_WORKERS = 4
CHUNK = 100  # packets timed at once: short enough to dodge other work's bursts


class Workload:
    """A configured switch of one runtime and the packets to feed it."""

    def __init__(self, name: str, runtime, packets_per_round: int):
        self.name = name
        self.runtime = runtime
        if name == "lpm":  # the shared ipv4_lpm fixture: LPM + TTL + IPv4 checksum
            self.switch = runtime.Switch.from_json_file(str(LPM_FIXTURE / "ipv4_lpm.json"))
            for prefix, length, mac, port in ((0x0A000000, 8, 0xAAAA, 1),
                                              (0x0A010000, 16, 0xBBBB, 2),
                                              (0x0A010100, 24, 0xCCCC, 3)):
                self.switch.table_add("routes", [runtime.LpmKey(prefix, length)], "route",
                                      (mac, port))
            self.packets = [(0, LPM_PACKETS[i % 3]) for i in range(packets_per_round)]
        elif name.startswith("ina"):
            k = int(name[3:])
            self.switch = self._ina_switch(runtime, k)
            cells = max(1, packets_per_round // INA_WORKERS)
            self.packets = ina_bench.contributions(k, INA_WORKERS, cells)
        else:
            program = switch_bench.small_program(name)
            self.switch = runtime.Switch(program.json_own)
            for op in program.ops:      # the keys are this runtime's own classes
                if op[0] == "table":
                    keys = [runtime.ExactKey(k.value) for k in op[2]]
                    self.switch.table_add(op[1], keys, op[3], op[4])
                else:
                    self.switch.mc_group_set(op[1], op[2])
            self.packets = [(1, program.frames[i % len(program.frames)])
                            for i in range(packets_per_round)]

    @staticmethod
    def _ina_switch(runtime, k: int):
        saved = ina_bench.Switch, ina_bench.ExactKey, ina_bench.LpmKey
        ina_bench.Switch, ina_bench.ExactKey, ina_bench.LpmKey = (
            runtime.Switch, runtime.ExactKey, runtime.LpmKey)
        try:
            return ina_bench.configured_switch(k, INA_WORKERS)
        finally:
            ina_bench.Switch, ina_bench.ExactKey, ina_bench.LpmKey = saved

    def run(self) -> tuple[float, int]:
        """(packets per second, packets out) for one pass over the packets."""
        elapsed, out = 0.0, 0
        for chunk in range(0, len(self.packets), CHUNK):
            took, got = self.run_chunk(chunk)
            elapsed += took
            out += got
        return len(self.packets) / elapsed, out

    def run_chunk(self, first: int) -> tuple[float, int]:
        """(seconds, packets out) for packets[first:first + CHUNK]."""
        receive = self.switch.receive
        out = 0
        start = time.perf_counter()
        for port, data in self.packets[first:first + CHUNK]:
            out += len(receive(port, data))
        return time.perf_counter() - start, out


def compare(baseline_dir: str | None, names: list[str], rounds: int, packets: int) -> None:
    """Best time per chunk of packets and runtime over `rounds`, alternating at every chunk."""
    runtimes = [("current", current_runtime)]
    if baseline_dir:
        runtimes.insert(0, ("baseline", switch_bench.load_baseline(baseline_dir)))
    rates: dict[tuple[str, str], float] = {}
    outputs: dict[tuple[str, str], int] = {}
    for name in names:
        loads = [(label, Workload(name, rt, packets)) for label, rt in runtimes]
        for _, load in loads:
            load.run()  # warm up: every slot used once
        best: dict[tuple[str, int], float] = {}
        for _ in range(rounds):
            for chunk in range(0, len(loads[0][1].packets), CHUNK):
                for label, load in loads:
                    took, out = load.run_chunk(chunk)
                    best[label, chunk] = min(best.get((label, chunk), took), took)
                    outputs[label, name] = outputs.get((label, name), 0) + out
        for label, load in loads:
            total = sum(t for (lab, _), t in best.items() if lab == label)
            rates[label, name] = len(load.packets) / total
    header = f"{'workload':<10}" + "".join(f"{label + ' pkt/s':>18}" for label, _ in runtimes)
    print(header + (f"{'ratio':>8}" if baseline_dir else ""))
    for name in names:
        row = f"{name:<10}" + "".join(f"{rates[label, name]:>18,.0f}" for label, _ in runtimes)
        if baseline_dir:
            row += f"{rates['current', name] / rates['baseline', name]:>8.2f}"
            if outputs["current", name] != outputs["baseline", name]:
                row += "  (outputs differ!)"
        print(row)


def stages(baseline_dir: str | None, names: list[str], rounds: int, packets: int) -> None:
    """Microseconds per packet: parsing (with the PHV copy), the ingress control, and the rest
    (egress, deparser, replication, the engine's common flow), best of `rounds`."""
    runtimes = [("current", current_runtime)]
    if baseline_dir:
        runtimes.insert(0, ("baseline", switch_bench.load_baseline(baseline_dir)))
    print(f"{'workload':<10}{'runtime':<10}{'parse':>8}{'ingress':>9}{'rest':>8}{'total':>8}"
          "   (us per packet)")
    for name in names:
        for label, runtime in runtimes:
            best = {"parse": 1e9, "ingress": 1e9, "total": 1e9}
            for _ in range(rounds):
                staged = Workload(name, runtime, packets)       # fresh state per round
                engine = staged.switch._engine
                parse, ingress = engine.code.parse, engine.code.ingress
                init_f, init_v, port_slot = engine.init_fields, engine.init_valid, \
                    engine.ingress_port
                took = {"parse": 0.0, "ingress": 0.0}
                clock = time.perf_counter
                for port, data in staged.packets:
                    t0 = clock()
                    f, v = init_f[:], init_v[:]
                    f[port_slot] = port
                    parse(f, v, data)
                    t1 = clock()
                    ingress(f, v)
                    took["parse"] += t1 - t0
                    took["ingress"] += clock() - t1
                whole = Workload(name, runtime, packets)
                start = clock()
                for port, data in whole.packets:
                    whole.switch.receive(port, data)
                took["total"] = clock() - start
                for key, value in took.items():
                    best[key] = min(best[key], value / len(staged.packets) * 1e6)
            rest = best["total"] - best["parse"] - best["ingress"]
            print(f"{name:<10}{label:<10}{best['parse']:>8.2f}{best['ingress']:>9.2f}"
                  f"{rest:>8.2f}{best['total']:>8.2f}")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--baseline", help="directory of another p4switch/runtime package")
    parser.add_argument("--workloads", nargs="+", choices=WORKLOADS,
                        default=[w for w in WORKLOADS if w != "lpm" or LPM_FIXTURE.is_dir()])
    parser.add_argument("--rounds", type=int, default=7)
    parser.add_argument("--packets", type=int, default=2000, help="packets per round")
    parser.add_argument("--source", type=int, metavar="K",
                        help="print the generated code of ina.p4 with INA_K=K and stop")
    parser.add_argument("--profile", choices=WORKLOADS, help="cProfile one workload and stop")
    parser.add_argument("--stages", action="store_true",
                        help="microseconds per packet in parse / ingress / the rest")
    args = parser.parse_args(argv)
    if args.source is not None:
        build = compile_file(str(ROOT / "p4src" / "ina.p4"), defines={"INA_K": str(args.source)})
        print(current_runtime.Switch(build.bmv2).program.untraced.source)
        return 0
    if args.profile:
        load = Workload(args.profile, current_runtime, args.packets)
        load.run()
        profiler = cProfile.Profile()
        profiler.runcall(load.run)
        pstats.Stats(profiler).sort_stats("tottime").print_stats(15)
        return 0
    if args.stages:
        stages(args.baseline, args.workloads, args.rounds, args.packets)
        return 0
    compare(args.baseline, args.workloads, args.rounds, args.packets)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
