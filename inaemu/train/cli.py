"""`inaemu train`: train a small MLP on scikit-learn's digits with N data-parallel workers whose
gradients cross the emulated network (INA through the switch, or a host algorithm), on Mininet
(a PyTorch process per host, DDP with the inaemu comm hook) or in the simulator (simulated
workers, network time from the virtual clock). Ends with a table; writes CSVs and a plot.

Exit status: 0 when every algorithm trained and each curve stays within --tolerance of the
ring's; 1 otherwise (or a set-up failure); 2 for a bad argument, no root for Mininet or no
torch; 130 when interrupted.
"""

from __future__ import annotations

import argparse
import os
import signal
import sys
import time
from pathlib import Path

from inaemu.experiment.arguments import add_ina_arguments, add_shape_arguments
from inaemu.experiment.config import ALL_ALGOS, ConfigError

DEFAULT_TOLERANCE = 0.01


class _OneLineParser(argparse.ArgumentParser):
    def error(self, message: str):
        self.exit(2, f"inaemu train: error: {message}\n")


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.__class__ = _OneLineParser
    parser.add_argument("--net", choices=("mininet", "sim"), default="mininet",
                        help="Mininet (root; a PyTorch process per host) or the simulator "
                             "(default mininet)")
    parser.add_argument("--algo", choices=(*ALL_ALGOS, "both", "all"), default="both",
                        help="how gradients are all-reduced: ina (in the switch), a host "
                             "algorithm, both (ina and ring) or all (default both)")
    parser.add_argument("--workers", type=int, default=4, metavar="N",
                        help="data-parallel workers, one per host (default 4; on multi-tier "
                             "spread evenly over the hosts)")
    add_shape_arguments(parser)
    parser.add_argument("--iterations", type=int, default=100, help="SGD steps (default 100)")
    parser.add_argument("--batch", type=int, default=32,
                        help="samples per worker per iteration (default 32)")
    parser.add_argument("--hidden", type=int, default=64,
                        help="units of each of the MLP's two hidden layers (default 64)")
    parser.add_argument("--lr", type=float, default=0.05, help="SGD learning rate (0.05)")
    parser.add_argument("--momentum", type=float, default=0.9, help="SGD momentum (0.9)")
    parser.add_argument("--eval-every", type=int, default=10, metavar="I",
                        help="rank 0 evaluates on the train and test sets every I iterations "
                             "(default 10)")
    parser.add_argument("--seed", type=int, default=1,
                        help="weights, data split and minibatches (default 1)")
    add_ina_arguments(parser)
    parser.add_argument("--bw", type=float, default=20.0, metavar="MBPS",
                        help="link bandwidth in Mbit/s, 0 for unshaped (default 20, as "
                             "inaemu run)")
    parser.add_argument("--loss", type=float, default=0.0, metavar="P",
                        help="packet loss in percent on every link (default 0)")
    parser.add_argument("--timeout", type=float, default=30.0, metavar="SECONDS",
                        help="one all-reduce call's deadline (virtual seconds in the "
                             "simulator) (default 30)")
    parser.add_argument("--tolerance", type=float, default=DEFAULT_TOLERANCE, metavar="LOSS",
                        help="largest accepted gap between an algorithm's minibatch loss and "
                             f"the ring's at any iteration (default {DEFAULT_TOLERANCE:g})")
    parser.add_argument("--out", type=Path, default=None, metavar="DIR",
                        help="result directory (default out/train-<UTC timestamp>)")
    parser.add_argument("--tag", default="", metavar="PREFIX",
                        help="Mininet: prefix for host and switch names")
    parser.add_argument("--grpc-base", type=int, default=20000, metavar="PORT",
                        help="Mininet: switch i serves P4Runtime on PORT+i (default 20000)")
    from inaemu.experiment.tls import add_tls_arguments
    add_tls_arguments(parser)


def config_from(args: argparse.Namespace):
    from inaemu.experiment.tls import RunTLSError, tls_from_args
    from inaemu.train.config import TrainConfig
    from inaemu.train.task import TaskConfig
    algos = {"both": ("ina", "ring"), "all": ALL_ALGOS}.get(args.algo, (args.algo,))
    try:
        task = TaskConfig(seed=args.seed, hidden=args.hidden, batch=args.batch, lr=args.lr,
                          momentum=args.momentum)
        tls = tls_from_args(args, net=args.net)
    except (ValueError, RunTLSError) as error:
        raise ConfigError(str(error)) from None
    return TrainConfig(algos=algos, workers=args.workers, iterations=args.iterations,
                       eval_every=args.eval_every, task=task, net=args.net,
                       elems_k=args.elems, pool_size=args.pool, window=args.window,
                       rto=args.rto, lane_format=args.lane_format, scaling=args.scaling,
                       divisor=args.divisor,
                       bw_mbps=args.bw or None, loss=args.loss,
                       timeout=args.timeout, tag=args.tag, grpc_base=args.grpc_base,
                       topo=args.topo, fat_k=args.fat_k, spines=args.spines,
                       leaves=args.leaves, hosts_per_leaf=args.hosts_per_leaf,
                       aggregation=args.aggregation, tls=tls)


def _interrupt(signum, frame):
    for stop in (signal.SIGINT, signal.SIGTERM):
        signal.signal(stop, signal.SIG_IGN)
    raise KeyboardInterrupt


def run(args: argparse.Namespace) -> int:
    try:
        import torch  # noqa: F401
        import sklearn  # noqa: F401
    except ImportError as error:
        print(f"inaemu train: error: needs the torch extra (pip install -e '.[torch]'): "
              f"{error}", file=sys.stderr)
        return 2
    try:
        cfg = config_from(args)
    except ConfigError as error:
        print(f"inaemu train: error: {error}", file=sys.stderr)
        return 2
    if not args.tolerance >= 0:
        print("inaemu train: error: tolerance: expected a loss gap >= 0", file=sys.stderr)
        return 2
    if cfg.net == "mininet" and os.geteuid() != 0:
        print("inaemu train: Mininet needs root; try --net sim", file=sys.stderr)
        return 2
    out_dir = (args.out or Path("out") / time.strftime("train-%Y%m%d-%H%M%S",
                                                        time.gmtime())).resolve()
    try:
        out_dir.mkdir(parents=True, exist_ok=True)
    except OSError as error:
        print(f"inaemu train: error: --out {out_dir}: {error.strerror}", file=sys.stderr)
        return 2

    def progress(line: str) -> None:
        print(line, flush=True)

    previous = {stop: signal.signal(stop, _interrupt) for stop in (signal.SIGINT,
                                                                    signal.SIGTERM)}
    try:
        results = train(cfg, out_dir, progress)
    except KeyboardInterrupt:
        print("inaemu train: interrupted; network and workers stopped", file=sys.stderr)
        return 130
    except Exception as error:
        if os.environ.get("INAEMU_DEBUG"):
            raise
        print(f"inaemu train: error: {type(error).__name__}: {error}", file=sys.stderr)
        return 1
    finally:
        for stop, handler in previous.items():
            signal.signal(stop, handler)
    return finish(results, out_dir, args.tolerance)


def train(cfg, out_dir: Path, progress) -> list:
    """Every algorithm's TrainResult, on the chosen network."""
    if cfg.net == "sim":
        from inaemu.train.sim_train import train_sim
        results = []
        for algo in cfg.algos:
            started = time.perf_counter()
            try:
                results.append(train_sim(cfg, algo, progress))
            except Exception as error:       # a failed all-reduce: the others still run
                from inaemu.train.results import TrainResult
                results.append(TrainResult(algo=algo, net="sim", workers=cfg.workers,
                                           error=f"{type(error).__name__}: {error}",
                                           wall_s=time.perf_counter() - started))
        return results
    from inaemu.train.mininet_train import train_mininet
    return train_mininet(cfg, out_dir, progress)


def finish(results: list, out_dir: Path, tolerance: float) -> int:
    """The table, the closeness verdict, the files; the exit status."""
    from inaemu.train.report import summaries, table, write_files
    rows = summaries(results)
    files = write_files(out_dir, results, rows)
    print()
    print(table(rows))
    status = 0 if all(r.ok for r in results) else 1
    for row in rows:
        gap = row["max_batch_loss_gap"]
        if gap is None:
            continue
        within = gap <= tolerance
        status = status if within else 1
        accuracy = row["test_accuracy_gap"]
        print(f"{row['algo']} vs ring: largest minibatch-loss gap {gap:.2e} over "
              f"{row['iterations']} iterations (tolerance {tolerance:g}): "
              f"{'within' if within else 'NOT within'}"
              + ("" if accuracy is None else
                 f"; final test accuracy {accuracy:+.4f} against the ring's"))
    print()
    print(f"results in {out_dir}: " + ", ".join(p.name for p in files))
    return status
