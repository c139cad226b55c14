"""`inaemu workload`: training iterations of a real model, or a Chakra trace, over the network.

The workload (a built-in model's DDP iteration, or per-rank Chakra ET files) runs as one job of
the scenario engine for each algorithm asked, on the simulator or Mininet; prints per
algorithm the iteration time, compute, exposed communication and bytes on the wire beside the
α-β-γ model with overlap, and INA's speedup; writes summary.json, workload.csv, each
algorithm's iteration timeline, and with --export-chakra what the INA run did as Chakra ET.
Exit status 0 when every run was correct, 1 otherwise, 2 for a bad argument or file.
"""

from __future__ import annotations

import argparse
import csv
import json
import sys
import time
from pathlib import Path

from inaemu.experiment.arguments import add_shape_arguments


def add_arguments(parser: argparse.ArgumentParser) -> None:
    source = parser.add_mutually_exclusive_group(required=True)
    source.add_argument("--model", help="a built-in model (inaemu/workload/models.py): "
                                        "resnet50, bert-base, ...")
    source.add_argument("--chakra", metavar="PREFIX",
                        help="per-rank Chakra ET files PREFIX.<rank>.et")
    parser.add_argument("--iterations", type=int, default=1, help="model iterations (1)")
    parser.add_argument("--bucket-cap-mb", type=float, default=25.0,
                        help="DDP's bucket cap in MiB (25)")
    parser.add_argument("--compute-speedup", type=float, default=1.0,
                        help="divide the measured CPU compute by this (a GPU is faster)")
    parser.add_argument("--algo", default="both",
                        help="ina, ring, a baseline (ps, hring, dbtree, rhd, torus), both "
                             "(ina and ring) or all (default both)")
    parser.add_argument("--net", choices=("sim", "mininet"), default="sim")
    add_shape_arguments(parser)
    parser.add_argument("--workers", type=int, default=None,
                        help="ranks (default: every host; a Chakra trace: its rank count)")
    parser.add_argument("--bw", type=float, default=1000.0, metavar="MBPS",
                        help="every link's rate in Mbit/s (1000)")
    parser.add_argument("--elems", type=int, default=256, metavar="K",
                        help="values per INA packet (256)")
    parser.add_argument("--switch-pps", type=float, default=None,
                        help="simulator: each switch's packets per second")
    parser.add_argument("--sim-core", choices=("auto", "python", "native"), default="auto",
                        help="--net sim: the simulator's core (docs/sim.md, \"Cores\"); auto "
                             "(default): native where it builds, else python")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--out", metavar="DIR", help="results directory")
    parser.add_argument("--export-chakra", metavar="PREFIX",
                        help="write what the first algorithm's run did as Chakra ET")
    parser.add_argument("--quiet", action="store_true")


def _algos(text: str) -> list[str]:
    from inaemu.sim.driver import ALGOS
    if text == "both":
        return ["ina", "ring"]
    if text == "all":
        return list(ALGOS)
    chosen = [a.strip() for a in text.split(",") if a.strip()]
    bad = [a for a in chosen if a not in ALGOS]
    if bad or not chosen:
        named = ", ".join(bad) if bad else repr(text)
        raise ValueError(f"--algo: unknown {named} (known: {', '.join(ALGOS)}, both, all)")
    return chosen


def _network(args):
    from inaemu.scenario import model as m
    if args.topo == "fat-tree":
        return m.Network("fat-tree", k=args.fat_k, bw_mbps=args.bw)
    if args.topo == "leaf-spine":
        return m.Network("leaf-spine", leaves=args.leaves, spines=args.spines,
                         hosts_per_leaf=args.hosts_per_leaf, bw_mbps=args.bw)
    return m.Network("star", hosts=args.workers or 16, bw_mbps=args.bw)


def load_workload(args, workers: int):
    if args.chakra:
        from inaemu.workload.chakra import read_chakra
        return read_chakra(args.chakra)
    from inaemu.workload.models import model_workload
    return model_workload(args.model, workers,
                          bucket_cap_bytes=int(args.bucket_cap_mb * 1024 * 1024),
                          compute_speedup=args.compute_speedup, iterations=args.iterations)


def run(args) -> int:
    from inaemu.scenario import ScenarioError
    from inaemu.scenario import model as m
    from inaemu.workload.graph import WorkloadError

    def say(line: str) -> None:
        if not args.quiet:
            print(line, file=sys.stderr, flush=True)

    try:
        algos = _algos(args.algo)
        for name in ("iterations", "bucket_cap_mb", "compute_speedup", "bw", "elems"):
            if not getattr(args, name) > 0:
                raise ValueError(f"--{name.replace('_', '-')} must be positive")
        network = _network(args)
        hosts = [h.name for h in network.topology().hosts]
        workers = args.workers or (len(hosts) if not args.chakra else None)
        workload = load_workload(args, workers or 0)
        workers = workload.n
        if workers > len(hosts):
            raise ValueError(f"the workload has {workers} ranks, the {network.kind} "
                             f"{len(hosts)} hosts")
        options = m.Options(seed=args.seed, elems_k=args.elems, switch_pps=args.switch_pps,
                            time_limit_s=3600.0, sim_core=args.sim_core)
    except (ValueError, ScenarioError, WorkloadError, OSError) as error:
        print(f"inaemu workload: error: {error}", file=sys.stderr)
        return 2
    out = Path(args.out) if args.out else Path("results") / (
        f"workload-{workload.name}-{time.strftime('%Y%m%d-%H%M%S')}")
    out.mkdir(parents=True, exist_ok=True)
    say(f"workload {workload.name}: {workers} ranks, {len(workload.allreduce_bytes())} "
        f"all-reduces of {sum(workload.allreduce_bytes()) / 2**20:.1f} MiB in all, compute "
        f"{workload.total_compute_s() * 1e3:.1f} ms per rank ({workload.source})")
    rows, first_result = [], None
    from inaemu.scenario.api import run_scenario
    for algo in algos:
        scenario = m.Scenario(network, (m.Job(workload.name, algo, tuple(hosts[:workers]),
                                              workload),), (), options, workload.name)
        say(f"workload: {algo} on {args.net} ...")
        result = run_scenario(scenario, net=args.net, progress=None if args.quiet else say)
        job = result.jobs[0]
        summary = job.workload or {}
        model = _model_time(algo, network, hosts[:workers], workload, options)
        rows.append({"algo": algo, "correct": job.correct, "error": job.error,
                     "time_s": summary.get("time_s"), "compute_s": summary.get("compute_s"),
                     "exposed_comm_s": summary.get("exposed_comm_s"),
                     "bytes_on_wire": summary.get("bytes_on_wire"),
                     "retransmissions": job.retransmissions, "model_time_s": model})
        from inaemu.workload.plot import plot_iteration
        if summary.get("timeline"):
            plot_iteration(summary["timeline"], out / f"timeline-{algo}.png",
                           title=f"{workload.name}, {algo}, {workers} ranks ({args.net})")
        if first_result is None:
            first_result = (algo, job)
    _print_table(rows, workload.name)
    with (out / "workload.csv").open("w", newline="") as f:
        writer = csv.DictWriter(f, fieldnames=list(rows[0]))
        writer.writeheader()
        writer.writerows(rows)
    (out / "summary.json").write_text(json.dumps(
        {"workload": workload.name, "source": workload.source, "ranks": workers,
         "net": args.net, "network": network.__dict__, "rows": rows}, indent=2, default=str))
    if args.export_chakra and first_result is not None:
        from inaemu.workload.chakra import write_chakra
        write_chakra(workload, args.export_chakra,
                     durations=_measured_durations(workload, first_result[1]))
        say(f"workload: the {first_result[0]} run written as Chakra ET {args.export_chakra}.*.et")
    print(f"results: {out}/ (summary.json, workload.csv, timeline-<algo>.png)")
    return 0 if all(r["correct"] for r in rows) else 1


def _model_time(algo, network, hosts, workload, options) -> float | None:
    """The α-β-γ prediction with overlap for this algorithm (None where it has none)."""
    from inaemu.model import predict
    from inaemu.model.network import SwitchCosts
    from inaemu.model.overlap import predict_workload
    topology = network.topology()
    switch = SwitchCosts() if options.switch_pps is None else \
        SwitchCosts(per_packet_s=1 / options.switch_pps, per_copy_s=0.0)
    root = None
    if algo == "ina" and network.kind != "star":
        from controller.trees import choose_root
        root = choose_root(topology, tuple(hosts), 1)
    try:
        return predict_workload(workload, lambda size: predict(
            algo, topology, hosts, size, bw_mbps=network.bw_mbps, switch=switch,
            elems_k=options.elems_k, window=options.pool_size, root=root).time_s)["time_s"]
    except (ValueError, KeyError):
        return None


def _measured_durations(workload, job) -> dict:
    """(rank, node id) -> what the run measured: compute as run, each collective its call."""
    timeline = (job.workload or {}).get("timeline", {})
    durations = {}
    for graph in workload.ranks:
        spans = {}
        for kind, name, start, end in timeline.get(graph.rank, ()):
            spans.setdefault((kind, name), []).append(end - start)
        calls = graph.collectives()
        for index, node in enumerate(calls):
            measured = spans.get(("all_reduce", f"bucket {index}"))
            if measured:
                durations[(graph.rank, node.id)] = measured[0]
    return durations


def _print_table(rows: list[dict], name: str) -> None:
    def ms(value):
        return "-" if value is None else f"{value * 1e3:.2f}"

    ina = next((r for r in rows if r["algo"] == "ina" and r["time_s"]), None)
    print(f"{name}: per run (ms)")
    print(f"  {'algo':6} {'time':>10} {'compute':>10} {'exposed':>10} {'model':>10} "
          f"{'meas/model':>10} {'INA speedup':>11}  correct")
    for r in rows:
        ratio = (f"{r['time_s'] / r['model_time_s']:.3f}"
                 if r["time_s"] and r["model_time_s"] else "-")
        speedup = (f"{r['time_s'] / ina['time_s']:.2f}x"
                   if ina and r["time_s"] and r["algo"] != "ina" else "-")
        print(f"  {r['algo']:6} {ms(r['time_s']):>10} {ms(r['compute_s']):>10} "
              f"{ms(r['exposed_comm_s']):>10} {ms(r['model_time_s']):>10} {ratio:>10} "
              f"{speedup:>11}  {'yes' if r['correct'] else 'NO: ' + str(r['error'])}")
