"""`inaemu run`: all-reduce of float32 gradients in the switches (INA) and with a host ring, on a
star, a leaf-spine or a fat-tree (INA jobs aggregating along trees over every tier, or at one
switch), on Mininet (root) or the simulator; a table and files, and with --trace what
`inaemu trace` reads.

Exit status: 0 when every result is correct, 1 when any is not (or the run could not be set
up), 2 for a bad argument or a missing privilege (one line on stderr, nothing started).
"""

from __future__ import annotations

import argparse
import math
import os
import signal
import sys
import time
from pathlib import Path

from inaemu.experiment.arguments import add_ina_arguments, add_shape_arguments
from inaemu.experiment.config import (ALL_ALGOS, COMPILERS, MAX_MININET_WORKERS, MAX_WORKERS,
                                      TARGETS, ConfigError, RunConfig)

MIB = 1024 * 1024


class _OneLineParser(argparse.ArgumentParser):
    """Argument errors as one line (`inaemu run: error: ...`), exit status 2."""

    def error(self, message: str):
        self.exit(2, f"inaemu run: error: {message}\n")


def _kill_spec(text: str) -> tuple[int, float]:
    worker, sep, at = text.partition("@")
    try:
        if not sep:
            raise ValueError
        return int(worker), float(at)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected WORKER@SECONDS (e.g. 1@0.5), got {text!r}") \
            from None


# The default link speed: the fastest at which INA stays link-bound on this 2-core machine, so
# the INA/ring comparison measures the protocol, not the emulator's CPU (the regime in-network
# aggregation is designed for). At 60 Mbit/s INA takes 1.02-1.03x its link-bound time and the
# ring 1.15x, as at 40 (2026-11-27, k = 364, a quiet machine; 40 until then, 20 before
# 2026-11-25): docs/experiments.md. `--bw 0` unshapes the links.
DEFAULT_BW_MBPS = 60.0

def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.__class__ = _OneLineParser     # the CLI builds the parser; errors stay one line
    parser.add_argument("--algo", choices=(*ALL_ALGOS, "both", "all"), default="both",
                        help="which all-reduce to run: ina, a host algorithm (ring, ps, hring, "
                             "dbtree, rhd, torus: docs/algorithms.md), both (ina and ring) or "
                             "all (default: both, INA first)")
    add_shape_arguments(parser)
    parser.add_argument("--oversubscription", type=float, default=1.0, metavar="RATIO",
                        help="leaf-spine: a leaf's host bandwidth over its uplink bandwidth "
                             "(default 1: non-blocking; matters with --bw)")
    parser.add_argument("--workers", type=int, default=None, metavar="N",
                        help=f"worker hosts per job, 2..{MAX_WORKERS} on a tree, 2..64 aggregated "
                             f"at one switch, {MAX_MININET_WORKERS} in all on Mininet (default: "
                             "4 on a star; on multi-tier, all hosts split evenly over the jobs)")
    parser.add_argument("--jobs", type=int, default=1, metavar="J",
                        help="jobs side by side, each with its own N hosts (on multi-tier the "
                             "jobs take the spread-out worker hosts interleaved) (default 1)")
    parser.add_argument("--size-mib", type=float, default=16.0, metavar="S",
                        help="float32 vector per worker, in MiB (default 16)")
    parser.add_argument("--loss", type=float, default=0.0, metavar="P",
                        help="packet loss in percent on every link, both directions (default 0)")
    parser.add_argument("--bw", type=float, default=DEFAULT_BW_MBPS, metavar="MBPS",
                        help=f"link bandwidth in Mbit/s, 0 for unshaped links (default "
                             f"{DEFAULT_BW_MBPS:g}: slow enough that the links, not the Python "
                             f"software switch, are the bottleneck, as with a hardware switch "
                             f"that aggregates at line rate)")
    add_ina_arguments(parser)
    parser.add_argument("--fallback", type=int, default=None, metavar="SLOTS", dest="fallback",
                        help="INA: each job holds SLOTS of its --pool slots in the switch; the "
                             "rest go to a host aggregator on its first worker's host "
                             "(docs/fallback.md; single-switch jobs only)")
    parser.add_argument("--sharing", choices=("static", "hashed"), default="static",
                        help="INA: how jobs share a switch's aggregators: static slices of "
                             "--pool slots (default), or hashed: every job's chunks hash into "
                             "one shared pool of --shared-pairs pairs, those that find theirs "
                             "taken go to the job's host aggregator (docs/protocol.md §3.3; "
                             "single-switch jobs only)")
    parser.add_argument("--shared-pairs", type=int, default=None, metavar="PAIRS",
                        help="--sharing hashed: the shared pool's pairs of cells, rounded down "
                             "to a prime (default: --pool)")
    parser.add_argument("--seed", type=int, default=1, help="gradients and loss (default 1)")
    parser.add_argument("--out", type=Path, default=None, metavar="DIR",
                        help="result directory (default out/run-<UTC timestamp>)")
    parser.add_argument("--net", choices=("mininet", "sim"), default="mininet",
                        help="Mininet (root) or the in-process simulator (default mininet)")
    parser.add_argument("--sim-core", choices=("auto", "python", "native"), default="auto",
                        help="--net sim: the pure-Python core or the native one (C parts, the "
                             "same results; docs/sim.md); auto (default): native where it "
                             "builds, else python")
    parser.add_argument("--target", choices=TARGETS, default="inaemu",
                        help="Mininet switches: inaemu switch, or the real simple_switch_grpc "
                             "(on PATH or in /opt/p4ref/bin; no --loss, no --trace) "
                             "(default inaemu)")
    parser.add_argument("--compiler", choices=COMPILERS, default="inaemu",
                        help="who compiles p4src/ina.p4: inaemu compile, or the real p4c-bm2-ss "
                             "(Mininet only) (default inaemu)")
    parser.add_argument("--timeout", type=float, default=120.0, metavar="SECONDS",
                        help="per algorithm: workers still running after it fail (default 120)")
    parser.add_argument("--tag", default="", metavar="PREFIX",
                        help="prefix (up to 3 letters or digits) for host and switch names, to "
                             "run beside other networks")
    parser.add_argument("--grpc-base", type=int, default=20000, metavar="PORT",
                        help="switch i serves P4Runtime on PORT+i (default 20000)")
    parser.add_argument("--cleanup", action="store_true",
                        help="Mininet: remove what a killed run of this shape (--topo and its "
                             "sizes, --workers, --jobs, --tag, --grpc-base; with --out also its "
                             "agents) left behind, then exit")
    parser.add_argument("--pcap", action="store_true",
                        help="Mininet: capture every switch port into DIR/net/<switch>-pcap/")
    parser.add_argument("--trace", action="store_true",
                        help="keep every switch's per-packet log and pcaps in DIR (DIR/net on "
                             "Mininet, DIR/trace on the simulator) for `inaemu trace DIR`; "
                             "about 7x slower: use small sizes")
    parser.add_argument("--servers", type=lambda text: tuple(s for s in text.split(",") if s),
                        default=(), metavar="HOST,HOST,...",
                        help="Mininet over these servers (localhost = this one; others as root "
                             "over SSH), placed by pod/leaf (docs/cluster.md)")
    parser.add_argument("--ssh-config", default=None, metavar="FILE",
                        help="ssh -F FILE to reach --servers (default: ~/.ssh/config)")
    from inaemu.experiment.tls import add_tls_arguments
    add_tls_arguments(parser)
    parser.add_argument("--kill-worker", type=_kill_spec, action="append", default=[],
                        metavar="W@SECONDS",
                        help="fault injection: kill worker W (counted over all jobs) that many "
                             "seconds after the start")


def config_from(args: argparse.Namespace) -> RunConfig:
    """RunConfig from parsed arguments; ConfigError names the setting that is wrong."""
    size = args.size_mib * MIB
    if not math.isfinite(size) or not size > 0:
        raise ConfigError(f"size-mib: expected a positive size, got {args.size_mib:g}")
    algos = {"both": ("ina", "ring"), "all": ALL_ALGOS}.get(args.algo, (args.algo,))
    shape = dict(topo=args.topo, fat_k=args.fat_k, spines=args.spines, leaves=args.leaves,
                 hosts_per_leaf=args.hosts_per_leaf, oversubscription=args.oversubscription,
                 aggregation=args.aggregation)
    workers = args.workers
    if workers is None and args.topo == "star":
        workers = 4
    elif workers is None:      # every host of the topology, split evenly over the jobs
        hosts = RunConfig(workers=2, net=args.net, **shape).host_count
        cap = MAX_WORKERS if args.net == "sim" else 32   # Mininet: a process per host
        workers = min(cap, hosts // max(1, args.jobs))
    return RunConfig(algos=algos, workers=workers, jobs=args.jobs, tls=run_tls(args),
                     size_bytes=max(4, int(size) // 4 * 4),
                     loss=args.loss, bw_mbps=args.bw or None, elems_k=args.elems,
                     pool_size=args.pool, window=args.window, rto=args.rto, seed=args.seed,
                     lane_format=args.lane_format, scaling=args.scaling, divisor=args.divisor,
                     fallback_slots=args.fallback, sharing=args.sharing,
                     shared_pairs=args.shared_pairs,
                     net=args.net, sim_core=args.sim_core, timeout=args.timeout,
                     tag=args.tag, grpc_base=args.grpc_base, kill=tuple(args.kill_worker),
                     pcap=args.pcap, trace=args.trace, target=args.target,
                     compiler=args.compiler, servers=args.servers,
                     ssh_config=args.ssh_config, **shape)


def run_tls(args: argparse.Namespace):
    """The run's TLS files (a `RunTLS`), None without TLS options; ConfigError if they do not
    fit together or one is unusable."""
    from inaemu.experiment.tls import RunTLSError, tls_from_args
    try:
        return tls_from_args(args)
    except RunTLSError as error:
        raise ConfigError(str(error)) from None


def _cleanup(cfg: RunConfig, args_out: Path | None) -> int:
    """Leftovers of a run whose process was killed: its switch processes, host shells and
    switch interfaces, found by exact name (topologies.mininet_net.cleanup), and with --out its
    agents (their config files are in DIR/agents)."""
    from inaemu.experiment.mininet_run import kill_agents
    from topologies.mininet_net import cleanup
    removed = kill_agents(args_out) if args_out else []
    removed += cleanup(cfg.topology())
    for item in removed:
        print(f"run: cleanup: removed {item}")
    print(f"run: cleanup: {len(removed)} leftovers of {cfg.topology().name} removed")
    return 0


def _missing_tool(cfg: RunConfig) -> str | None:
    """What the reference toolchain lacks for `--target bmv2` / `--compiler p4c`, or None."""
    from topologies.mininet_switch import missing_tool_message, reference_tool
    needed = {"--target bmv2": "simple_switch_grpc" if cfg.target == "bmv2" else None,
              "--compiler p4c": "p4c-bm2-ss" if cfg.compiler == "p4c" else None}
    for option, tool in needed.items():
        if tool and reference_tool(tool) is None:
            return f"{option}: {missing_tool_message(tool)}"
    return None


STOP_SIGNALS = (signal.SIGINT, signal.SIGTERM)


def _raise_interrupt(signum, frame):
    """The first SIGINT/SIGTERM unwinds the run through its clean-up; later ones are ignored so
    they cannot cut that clean-up short."""
    for stop in STOP_SIGNALS:
        signal.signal(stop, signal.SIG_IGN)
    raise KeyboardInterrupt


def run(args: argparse.Namespace) -> int:
    try:
        cfg = config_from(args)
    except ConfigError as error:
        print(f"inaemu run: error: {error}", file=sys.stderr)
        return 2
    missing = None if args.cleanup else _missing_tool(cfg)
    if missing:
        print(f"inaemu run: error: {missing}", file=sys.stderr)
        return 2
    if cfg.net == "mininet" and os.geteuid() != 0:
        print("inaemu run: Mininet needs root; try --net sim", file=sys.stderr)
        return 2
    if args.cleanup:
        return _cleanup(cfg, args.out)
    out_dir = args.out or Path("out") / time.strftime("run-%Y%m%d-%H%M%S", time.gmtime())
    try:
        out_dir.mkdir(parents=True, exist_ok=True)
    except OSError as error:
        print(f"inaemu run: error: --out {out_dir}: {error.strerror}", file=sys.stderr)
        return 2

    def progress(line: str) -> None:
        print(line, flush=True)

    if cfg.trace:
        progress(f"run: warning: --trace logs every packet at every switch: a traced run is "
                 f"about 7x slower; keep sizes small (now {cfg.size_bytes} bytes per worker)")

    from inaemu.experiment.runner import run_experiment
    previous = {stop: signal.signal(stop, _raise_interrupt) for stop in STOP_SIGNALS}
    try:
        outcome = run_experiment(cfg, out_dir, progress)
    except KeyboardInterrupt:
        print("inaemu run: interrupted; network and workers stopped", file=sys.stderr)
        return 130
    except Exception as error:   # a set-up failure: one line, the network is already down
        if os.environ.get("INAEMU_DEBUG"):
            raise
        print(f"inaemu run: error: {type(error).__name__}: {error}", file=sys.stderr)
        return 1
    finally:
        for stop, handler in previous.items():
            signal.signal(stop, handler)
    from inaemu.experiment.summary import all_correct, table
    print()
    print(table(outcome.summaries))
    print()
    print(f"results in {out_dir}: " + ", ".join(p.name for p in outcome.files))
    if not all_correct(outcome.summaries):
        print("inaemu run: not every result is correct", file=sys.stderr)
        return 1
    return 0
