#!/usr/bin/env python3
"""Switch throughput: inaemu's switch and real BMv2 (both builds) measured in the same run.

Programs:
  exact     L2 forwarding by one exact-match table (benchmarks/programs; 256 entries, to port 2);
  register  32 int32 register read-add-writes per packet, then multicast to 4 ports;
  ina64, ina256   p4src/ina.p4 with INA_K = 64 / 256: CONTRIB packets of one job of 4 workers
            in protocol order (scripts/bench_ina_switch.py), every cell completed and its result
            multicast to the 4 workers' ports; the figure is contributions per second.
Switches: inaemu on inaemu's JSON (`own`) and on p4c's JSON (`p4c`; the small programs ship a
JSON in p4c's shape); simple_switch (default build, /opt/p4ref) and the optimized build
(/opt/p4ref-fast) on p4c's JSON, when installed; else the table says BMv2 was not measured.
Paths:
  inproc    inaemu only: `Switch.receive_batch` in this process, batches of 64 (the pipeline);
  veth      (root) every switch as one process pinned to one core, on veth pairs into a network
            namespace; a sender pinned to the other core offers a fixed rate into port 5 (port 1
            for exact/register) with sendmmsg, and the kernel's rx counter of port 2's far end
            counts the output (no CPU spent on counting). Each row tries a few offered rates
            (`--steps`, see search_rate): 1.3x the in-process rate (BMv2: a probe), then lower,
            then bisecting between a rate it kept up with (>= 97 % out) and one it did not; the
            best rate kept up with is shown, else the best delivered with `*`. Each run also
            reads the switch process's CPU time (/proc, user + system, all threads) per input
            packet: on a shared machine that moves far less than the rates do.
With `--baseline DIR` (another copy of p4switch/runtime) the inaemu rows run on it too, as
`before/...`: before/after from one command. With `--tree-baseline DIR` (a whole tree, e.g.
`git archive REV | tar -x -C DIR`) the veth rows also run a switch process that imports all of
p4switch (runtime, ports, driver) from DIR, as `tree-before/...`, interleaved with this tree's.
`--fixed-rate exact=150 ina64=50 ...` offers one rate (kpps) per program instead of searching:
the switch's CPU per input compared at the same load (it grows as the rate falls, the switch
sleeping and waking more often per frame). Ratios use the figures of this run only.

    sudo .venv/bin/python scripts/bench_switch.py            # a few minutes
    sudo .venv/bin/python scripts/bench_switch.py --quick    # shorter runs
"""

from __future__ import annotations

import argparse
import json
import os
import signal
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path

PROJECT_ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(PROJECT_ROOT))
sys.path.insert(0, str(PROJECT_ROOT / "scripts"))

import bench_ina_switch as ina_bench  # noqa: E402
from veth_bench import bench_veth, bmv2_starter, pin_to_cpu  # noqa: E402

PROGRAM_DIR = PROJECT_ROOT / "benchmarks" / "programs"
ETH_P_ALL = 0x0003
MAX_OFFERED_PPS = 400_000
DELIVERED_ENOUGH = 0.97
MAC_ENTRIES = 256
SLOTS = 1024
AGG_ETHER_TYPE = 0x88B6
INA_WORKERS = 4
INA_CELLS = 256            # cells in the sender's loop: a multiple of 2 x the pool (64 slots)


@dataclass
class Program:
    key: str
    title: str
    in_port: int
    out_ports: tuple[int, ...]
    units_per_output: int       # input units (packets, contributions) per frame on port 2
    unit: str
    json_own: object = None     # inaemu's JSON (dict) for the runtime
    json_p4c: object = None     # p4c's JSON (path) when the toolchain is there
    ops: list = field(default_factory=list)
    frames: list = field(default_factory=list)


def _mac(index: int) -> int:
    return 0x0200_0000_1000 + index


def small_program(key: str) -> Program:
    from p4switch.runtime import ExactKey
    src = bytes.fromhex("020000000001")
    if key == "exact":
        prog = Program("exact", "l2 exact table", 1, (2,), 1, "pkt/s")
        prog.ops = [("table", "dmac", [ExactKey(_mac(i))], "forward", (2,))
                    for i in range(MAC_ENTRIES)]
        prog.frames = [_mac(i % MAC_ENTRIES).to_bytes(6, "big") + src + b"\x08\x00" + bytes(46)
                       for i in range(MAC_ENTRIES)]
        stem = "exact_forward"
    else:
        prog = Program("register", "32 reg adds + mcast x4", 1, (2, 3, 4, 5), 1, "pkt/s")
        prog.ops = [("mcast", 1, [(port, 0) for port in prog.out_ports])]
        prog.frames = []
        for i in range(256):
            values = b"".join(((i * 32 + v) & 0xFFFF).to_bytes(4, "big") for v in range(32))
            prog.frames.append(b"\xff" * 6 + src + AGG_ETHER_TYPE.to_bytes(2, "big")
                               + (i % SLOTS).to_bytes(4, "big") + values)
        stem = "register_multicast"
    prog.json_own = json.loads((PROGRAM_DIR / f"{stem}.json").read_text())
    prog.json_p4c = PROGRAM_DIR / f"{stem}.p4"      # compiled by p4c when there is one
    return prog


def ina_program(k: int) -> Program:
    n = INA_WORKERS
    prog = Program(f"ina{k}", f"ina.p4 k={k}, {n} workers", n + 1,
                   tuple(range(1, n + 1)), n, "contrib/s")
    prog.ops = ina_bench.control_plane(n)
    prog.frames = [data for _, data in ina_bench.contributions(k, n, INA_CELLS)]
    prog.json_own = ina_bench.ina_bmv2_json(k)
    prog.json_p4c = (PROJECT_ROOT / "p4src" / "ina.p4", {"INA_K": str(k)})
    return prog


def p4c_json(prog: Program, toolchain) -> Path | None:
    """p4c's JSON of the program (cached by p4switch.reference), or None without p4c."""
    if toolchain is None:
        return None
    from p4switch.reference import compile_p4
    source, defines = prog.json_p4c if isinstance(prog.json_p4c, tuple) else (prog.json_p4c, {})
    result = compile_p4(toolchain, source, defines=defines, p4runtime=False)
    if not result.ok:
        raise SystemExit(f"bench: p4c failed on {source}:\n{result.stderr}")
    return result.json_path


# -- inaemu in-process ------------------------------------------------------------------------
def load_switch(prog: Program, program_json, runtime=None, native: bool = False):
    """A switch of `runtime` (this p4switch.runtime, or a baseline copy of it) for `prog`;
    `native`: its controls in C (INAEMU_NATIVE=1 while it loads)."""
    if runtime is None:
        import p4switch.runtime as runtime
    saved = os.environ.get("INAEMU_NATIVE")
    os.environ["INAEMU_NATIVE"] = "1" if native else "0"
    try:
        switch = runtime.Switch(program_json, trace=None)
    finally:
        if saved is None:
            del os.environ["INAEMU_NATIVE"]
        else:
            os.environ["INAEMU_NATIVE"] = saved
    if native and not getattr(switch.program.untraced, "native_in_use", ()):
        raise SystemExit("bench: INAEMU_NATIVE: the controls did not build as C")
    for op in prog.ops:       # keys rebuilt as the runtime's own classes
        if op[0] == "table":
            keys = [getattr(runtime, type(k).__name__)(*vars(k).values()) for k in op[2]]
            switch.table_add(op[1], keys, op[3], op[4])
        else:
            switch.mc_group_set(op[1], op[2])
    return switch


def load_baseline(directory: str):
    """Another version of the p4switch/runtime package (e.g. `git archive <rev>
    p4switch/runtime | tar -x -C /tmp/old`), imported as `baseline_runtime`."""
    import importlib.util
    init = Path(directory) / "__init__.py"
    if not init.is_file():
        raise SystemExit(f"bench: {directory} holds no package (__init__.py missing)")
    spec = importlib.util.spec_from_file_location("baseline_runtime", init,
                                                  submodule_search_locations=[directory])
    module = importlib.util.module_from_spec(spec)
    sys.modules["baseline_runtime"] = module
    spec.loader.exec_module(module)
    return module


def bench_inproc(prog: Program, program_json, seconds: float, batch: int = 64,
                 runtime=None, native: bool = False) -> float:
    """Input units per second through `receive_batch` (outputs built, not sent)."""
    switch = load_switch(prog, program_json, runtime, native)
    frames = prog.frames
    batches = [[(prog.in_port, frames[(i + j) % len(frames)]) for j in range(batch)]
               for i in range(0, len(frames), batch)]
    done = outputs = 0
    start = time.perf_counter()
    deadline = start + seconds
    while True:
        for items in batches:
            with switch.lock:
                outputs += sum(1 for port, _ in switch.receive_batch(items) if port == 2)
            done += len(items)
        if time.perf_counter() >= deadline:
            break
    elapsed = time.perf_counter() - start
    if outputs * prog.units_per_output != done:
        raise SystemExit(f"bench: {prog.key}: {outputs} outputs on port 2 for {done} inputs: "
                         "the program or the runtime misbehaves")
    return done / elapsed


# -- veth (the harness: veth_bench.py) --------------------------------------------------------
def import_p4switch_from(tree: str) -> None:
    """Forget this process's p4switch modules and import the package from `tree` instead
    (a forked switch process of another tree's runtime, ports and driver)."""
    for name in [m for m in sys.modules if m == "p4switch" or m.startswith("p4switch.")]:
        del sys.modules[name]
    sys.path.insert(0, str(tree))
    import p4switch
    if not Path(p4switch.__file__).resolve().is_relative_to(Path(tree).resolve()):
        raise SystemExit(f"bench: p4switch did not come from {tree}")


def _inaemu_process(prog: Program, program_json, interfaces: dict[int, str], ready,
                    runtime=None, batched: bool = True, tree: str | None = None,
                    native: bool = False) -> None:
    """Child: the same data path as `inaemu switch`, on the bench's veth ends (batched=False:
    ports make one system call per frame, as before recvmmsg/sendmmsg; tree: all of p4switch
    imported from that directory instead)."""
    pin_to_cpu(1)
    if tree is not None:
        import_p4switch_from(tree)
    from p4switch.driver import PacketDriver
    from p4switch.ports.forwarding import Forwarder
    from p4switch.ports.rawsock import RawSocketPort
    switch = load_switch(prog, program_json, runtime, native)
    ports = [RawSocketPort(n, name, batched=batched) for n, name in interfaces.items()]
    driver = PacketDriver(Forwarder(switch, interfaces), ports)
    signal.signal(signal.SIGTERM, lambda *_: driver.stop())
    ready.set()
    driver.run()
    for port in ports:
        port.close()


def inaemu_starter(prog: Program, program_json, runtime=None, batched: bool = True,
                   tree: str | None = None, native: bool = False):
    def start(context, interfaces):
        ready = context.Event()
        child = context.Process(target=_inaemu_process,
                                args=(prog, program_json, interfaces, ready, runtime, batched,
                                      tree, native))
        child.start()
        if not ready.wait(120):
            raise SystemExit("bench: the inaemu switch process did not start")

        def stop():
            if child.is_alive():
                os.kill(child.pid, signal.SIGTERM)
                child.join(10)
                if child.is_alive():
                    child.kill()
        return stop, child.pid
    return start


def search_rate(label: str, prog: Program, start_switch, first_rate: float, args) -> tuple:
    """(rate, offered pps of that run, reached 97 %?, switch CPU us per input: the lowest of the
    runs that kept up, else that run's) from a few runs: the first offers
    `first_rate`; while no run kept up, the next offers 0.9x the best delivered so far; once
    one did, the next offers the geometric middle between the highest rate kept up with and
    the lowest one not (an overloaded ina.p4 switch completes few cells: what comes out then
    says little about what it can take). The figure is the best run that kept up, else the
    best delivered rate."""
    fixed = args.fixed_rate.get(prog.key)
    if fixed is not None:
        print(f"[bench] {prog.key} {label}: veth, offering {fixed:.1f} kpps (fixed) ...",
              flush=True)
        offered, delivered, cpu = bench_veth(prog, start_switch, args.seconds, 1000 * fixed,
                                             args.warmup)
        fraction = delivered / offered if offered else 0.0
        print(f"[bench]   {delivered / 1000:.2f} k{prog.unit} delivered of "
              f"{offered / 1000:.1f} kpps offered ({100 * fraction:.0f} %), "
              f"switch CPU {cpu:.2f} us per input", flush=True)
        return (min(delivered, offered), offered, fraction >= DELIVERED_ENOUGH, cpu)
    rate = min(first_rate, MAX_OFFERED_PPS)
    best = (0.0, 0.0, False, 0.0)
    cpu_kept_up = float("inf")
    kept_up, failed = 0.0, float("inf")
    for _ in range(args.steps):
        print(f"[bench] {prog.key} {label}: veth, offering {rate / 1000:.1f} kpps ...",
              flush=True)
        offered, delivered, cpu = bench_veth(prog, start_switch, args.seconds, rate,
                                             args.warmup)
        fraction = delivered / offered if offered else 0.0      # one unit per input
        print(f"[bench]   {delivered / 1000:.2f} k{prog.unit} delivered of "
              f"{offered / 1000:.1f} kpps offered ({100 * fraction:.0f} %), "
              f"switch CPU {cpu:.2f} us per input", flush=True)
        ok = fraction >= DELIVERED_ENOUGH
        got = min(delivered, offered)   # cells completed by earlier packets can add a little
        if ok:
            cpu_kept_up = min(cpu_kept_up, cpu)
        if (ok, got) > (best[2], best[0]):
            best = (got, offered, ok, cpu)
        if ok:
            kept_up = max(kept_up, rate)
        else:
            failed = min(failed, rate)
        if kept_up and failed < float("inf"):
            if failed / kept_up < 1.1:
                break                   # close enough
            rate = (kept_up * failed) ** 0.5
        elif kept_up:
            if rate >= MAX_OFFERED_PPS:
                break                   # kept up with all the sender offers
            rate = min(2 * rate, MAX_OFFERED_PPS)
        else:
            rate = max(0.9 * best[0], 100.0)
    if cpu_kept_up < float("inf"):
        best = best[:3] + (cpu_kept_up,)   # the least disturbed run that kept up
    return best


# -- report -----------------------------------------------------------------------------------
def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--quick", action="store_true", help="short runs")
    parser.add_argument("--programs", nargs="+", default=["exact", "register", "ina64", "ina256"],
                        choices=["exact", "register", "ina64", "ina256"])
    parser.add_argument("--paths", nargs="+", choices=["inproc", "veth"],
                        default=["inproc", "veth"])
    parser.add_argument("--switches", nargs="+", default=["own", "p4c", "bmv2", "bmv2-O"],
                        choices=["own", "p4c", "bmv2", "bmv2-O"],
                        help="inaemu on its own / p4c's JSON, BMv2 default / optimized")
    parser.add_argument("--seconds", type=float, help="measurement time per veth run")
    parser.add_argument("--steps", type=int, default=5, help="offered rates tried per row")
    parser.add_argument("--json", metavar="FILE", help="also write the figures as JSON")
    parser.add_argument("--passes", type=int, default=1,
                        help="run every row N times, interleaved, and keep the best")
    parser.add_argument("--baseline", metavar="DIR",
                        help="also run another copy of p4switch/runtime (rows 'before/...')")
    parser.add_argument("--unbatched", action="store_true",
                        help="also run veth rows with one socket call per frame "
                             "(rows 'unbatched/...': the port layer before recvmmsg/sendmmsg)")
    parser.add_argument("--tree-baseline", metavar="DIR",
                        help="also run veth rows with all of p4switch from another tree "
                             "(rows 'tree-before/...')")
    parser.add_argument("--native", action="store_true",
                        help="also run this runtime with its controls in C (rows "
                             "'native/...': INAEMU_NATIVE=1)")
    parser.add_argument("--fixed-rate", nargs="+", default=[], metavar="PROGRAM=KPPS",
                        help="offer this rate to a program's veth rows instead of searching")
    args = parser.parse_args(argv)
    try:
        args.fixed_rate = {k: float(v) for k, v in
                           (item.split("=", 1) for item in args.fixed_rate)}
    except ValueError:
        parser.error("--fixed-rate takes PROGRAM=KPPS, e.g. exact=150 ina64=50")
    runtimes = [("inaemu", None)]
    if args.baseline:
        runtimes.insert(0, ("before", load_baseline(args.baseline)))
    if args.unbatched:
        runtimes.insert(0, ("unbatched", None))
    if args.native:
        runtimes.append(("native", None))
    args.seconds = args.seconds or (1.0 if args.quick else 3.0)
    args.warmup = 0.5 if args.quick else 1.0
    inproc_seconds = 1.0 if args.quick else 3.0
    is_root = os.geteuid() == 0

    from p4switch.reference import find_toolchain
    toolchain = find_toolchain()
    builds = {}
    if toolchain is not None:
        builds["bmv2"] = toolchain.simple_switch
        if toolchain.fast_simple_switch is not None:
            builds["bmv2-O"] = toolchain.fast_simple_switch
    print(f"[bench] {os.cpu_count()} cores, load average {os.getloadavg()[0]:.2f} at start; "
          f"BMv2: {', '.join(f'{k} {v}' for k, v in builds.items()) or 'not installed'}",
          flush=True)
    results: dict[tuple[str, str, str], tuple] = {}

    def keep(row: tuple, figure: tuple) -> None:
        """The best figure of a row over the passes (other work only ever slows a run): the
        highest rate, or at a fixed rate the least CPU per input of the runs that kept up."""
        if row[0] in args.fixed_rate and row[2] == "veth":
            better = (figure[2], -figure[3]) > (results[row][2], -results[row][3]) \
                if row in results else True
        else:
            better = row not in results or \
                (figure[2], figure[0]) > (results[row][2], results[row][0])
        if better:
            results[row] = figure
    for _ in range(args.passes):
        for key in args.programs:
            prog = small_program(key) if key in ("exact", "register") else \
                ina_program(int(key[3:]))
            p4c_path = p4c_json(prog, toolchain)
            jsons = {"own": prog.json_own}
            if p4c_path is not None:
                jsons["p4c"] = json.loads(p4c_path.read_text())
            for (name, runtime), label in ((r, j) for r in runtimes for j in ("own", "p4c")):
                if label not in args.switches or label not in jsons:
                    continue
                if label == "p4c" and key in ("exact", "register"):
                    continue               # their shipped JSON already is in p4c's shape
                switch = f"{name}/{label}"
                print(f"[bench] {prog.key} {switch}: in-process ...", flush=True)
                native = name == "native"
                pps = bench_inproc(prog, jsons[label], inproc_seconds, runtime=runtime,
                                   native=native)
                print(f"[bench]   {pps / 1000:.2f} k{prog.unit}", flush=True)
                if "inproc" in args.paths:
                    keep((key, switch, "inproc"), (pps, None, True, 1e6 / pps))
                if "veth" in args.paths and is_root:
                    if args.tree_baseline and name == "inaemu":
                        keep((key, f"tree-before/{label}", "veth"), search_rate(
                            f"tree-before/{label}", prog, inaemu_starter(
                                prog, jsons[label], tree=args.tree_baseline), 1.3 * pps, args))
                    keep((key, switch, "veth"), search_rate(
                        switch, prog, inaemu_starter(prog, jsons[label], runtime,
                                                     batched=name != "unbatched",
                                                     native=native),
                        1.3 * pps, args))
            if "veth" not in args.paths or not is_root:
                continue
            for label, binary in builds.items():
                if label not in args.switches:
                    continue
                start = bmv2_starter(prog, binary, toolchain, p4c_path)
                probe = 60_000.0 if key in ("exact", "register") else 20_000.0
                keep((key, label, "veth"), search_rate(label, prog, start, probe, args))
    report(args, results, builds, is_root)
    if args.json:
        Path(args.json).write_text(json.dumps(
            [{"program": k[0], "switch": k[1], "path": k[2], "rate": v[0], "offered": v[1],
              "sustained": v[2], "cpu_us_per_input": v[3]} for k, v in results.items()],
            indent=1))
    return 0


def report(args, results: dict, builds: dict, is_root: bool) -> None:
    print()
    print(f"load average {os.getloadavg()[0]:.2f} at the end")
    print(f"{'program':<9} {'switch':<16} {'path':<7} {'rate (k/s)':>10}   "
          f"{'/BMv2':>7} {'/BMv2-O':>8} {'CPU us/in':>10}   unit")
    for (key, switch, path), (rate, offered, ok, cpu) in results.items():
        ratios = []
        for build in ("bmv2", "bmv2-O"):
            base = results.get((key, build, "veth"))
            if not switch.startswith("bmv2") and path == "veth" and base and base[0] > 0:
                ratios.append(f"{rate / base[0]:.1f}x")
            else:
                ratios.append("-")
        mark = "" if ok else " *"
        unit = "contrib/s" if key.startswith("ina") else "pkt/s"
        print(f"{key:<9} {switch:<16} {path:<7} {rate / 1000:>9.2f}{mark:2} "
              f"{ratios[0]:>7} {ratios[1]:>8} {cpu:>10.2f}   {unit}")
    if not builds:
        print("BMv2 was not measured: the reference toolchain (/opt/p4ref) is not installed.")
    elif not is_root:
        print("BMv2 was not measured: veth runs need root.")
    for switch in ("tree-before/own", "inaemu/own", "native/own"):
        exact = results.get(("exact", switch, "veth"))
        for key in ("ina64", "ina256"):
            got = results.get((key, switch, "veth"))
            if not (exact and got and exact[0] and got[3]):
                continue
            cpu = f"l2's CPU per input / {key}'s: {exact[3] / got[3]:.2f}"
            if args.fixed_rate:       # rates offered, not found: only the CPU compares
                print(f"{switch}: {cpu}")
            else:
                print(f"{switch}: {key} contributions/s / l2 forwarding pkt/s on veths: "
                      f"{got[0] / exact[0]:.2f} ({cpu})")
    print("* = never delivered 97 % of the offered rate; the best delivered rate is shown.")
    print("CPU us/in: the switch process's CPU time (user + system, all threads) per input "
          "packet on veths (in-process: wall time per input); unlike rates, it does not "
          "depend on how much of its core the switch got.")


if __name__ == "__main__":
    raise SystemExit(main())
