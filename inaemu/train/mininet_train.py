"""`inaemu train --net mininet`: one PyTorch worker process per Mininet host. Needs root.

The network is `inaemu run --net mininet`'s, built by its own functions (inaemu/experiment/
mininet_run.py): ina.p4 compiled into DIR, the topology (a star of N hosts around one `inaemu
switch`, or a leaf-spine or fat-tree with the job along a tree), the program, routes and the
INA job pushed over P4Runtime, each host's static neighbour entry for its aggregator. Then,
per algorithm, `python -m inaemu.train.worker` starts in every host
(gloo's store on rank 0's address, a port per algorithm) and trains; its gradients go through
the DDP hook's `Allreducer` (the same `AllreduceConfig` `inaemu run`'s agents get). Workers
still running past the deadline are killed; everything stops also on an error or Ctrl-C.
"""

from __future__ import annotations

import json
import subprocess
import sys
import time
from pathlib import Path
from typing import Callable

from inaemu.experiment.agents import agent_config
from inaemu.experiment.config import PROJECT_ROOT
from inaemu.experiment.output import counted
from inaemu.train.config import JOB, TrainConfig
from inaemu.train.results import TrainResult

Progress = Callable[[str], None]
GLOO_PORT = 29500                 # rank 0's gloo store: GLOO_PORT + the algorithm's index
AGENT_ONLY = ("algo", "seed", "length", "calls", "output", "rank")   # agent keys, not config
POLL_S = 0.2
PROGRESS_EVERY_S = 10.0


def deadline_s(cfg: TrainConfig) -> float:
    """How long one algorithm's workers may run: start-up (torch import, gloo) and 3 s per
    iteration; an all-reduce that fails ends its worker long before (its own timeout)."""
    return 120.0 + 3.0 * cfg.iterations


def train_mininet(cfg: TrainConfig, out_dir: Path, progress: Progress) -> list[TrainResult]:
    """One TrainResult per algorithm; raises for a set-up that fails."""
    from controller.fabric import Fabric
    from inaemu.experiment.mininet_run import _Jobs, _learn_aggregators, compile_ina
    from topologies.mininet_net import MininetNetwork   # imports Mininet: root paths only

    run = cfg.run_config()
    topology = run.topology()
    hosts = run.job_hosts(topology)[JOB]
    p4info, program = compile_ina(cfg.elems_k, out_dir)
    results = []
    started = time.monotonic()
    tls = run.tls                      # P4Runtime over TLS: the files were checked already
    with MininetNetwork(topology, run_dir=str(out_dir / "net"), seed=cfg.seed,
                        tls=tls.switch() if tls is not None else None) as net:
        over = f" (P4Runtime over {tls.describe()})" if tls is not None else ""
        progress(f"train: mininet: {topology.name} up ({len(topology.hosts)} hosts, "
                 f"{counted(len(topology.switches), 'switch', 'switches')}{over}, "
                 f"{len(hosts)} workers, bw "
                 f"{cfg.bw_mbps or 'unlimited'}, loss {cfg.loss:g}%) in "
                 f"{time.monotonic() - started:.1f} s")
        with Fabric(topology, progress=lambda line: None,
                    tls=tls.client() if tls is not None else None) as fabric:
            fabric.push_pipeline(p4info, program)
            routes = fabric.install_routes(aggregate=True)    # as inaemu run
            targets = None
            if "ina" in cfg.algos:
                targets = _Jobs(run, topology, fabric.clients, progress).install({JOB: hosts})
                _learn_aggregators(net, targets)
            progress(f"train: controller: pipeline pushed, {routes} routes"
                     + (", INA job installed" if targets else ""))
            for index, algo in enumerate(cfg.algos):
                results.append(_train(net, cfg, algo, hosts, targets[JOB] if targets else None,
                                      GLOO_PORT + index, out_dir, progress))
        progress("train: mininet: stopping the network")
    return results


def worker_config(cfg: TrainConfig, algo: str, rank: int, host_ips: list[str], ifname: str,
                  target, gloo_port: int, output: Path) -> dict:
    """What `python -m inaemu.train.worker` reads: the task, the rank, where gloo meets, and
    the `AllreduceConfig` an `inaemu run` agent would get for this algorithm."""
    agent = agent_config(algo=algo, job=JOB, worker=rank, workers=cfg.workers,
                         host_ips=host_ips, length=0, seed=cfg.seed, timeout=cfg.timeout,
                         record=output, k=cfg.elems_k, pool_size=cfg.pool_size,
                         window=cfg.window, rto=cfg.rto, lane_format=cfg.lane_format,
                         scaling=cfg.scaling, divisor=cfg.divisor,
                         aggregator=target.address if target else None,
                         wire_id=target.wire_id if target else None)
    allreduce = {key: value for key, value in agent.items() if key not in AGENT_ONLY}
    return {"rank": rank, "world": cfg.workers, "algo": algo,
            "master": f"{host_ips[0]}:{gloo_port}", "ifname": ifname,
            "iterations": cfg.iterations, "eval_points": cfg.eval_points(),
            "task": cfg.task.__dict__, "allreduce": allreduce, "output": str(output)}


def _train(net, cfg: TrainConfig, algo: str, hosts: tuple[str, ...], targets, gloo_port: int,
           out_dir: Path, progress: Progress) -> TrainResult:
    workers_dir = out_dir / "workers"
    workers_dir.mkdir(parents=True, exist_ok=True)
    from inaemu.experiment.mininet_run import tcp_retransmissions
    ips = [net.topology.host(h).ip for h in hosts]
    tcp_before = [tcp_retransmissions(net.host(h)) for h in hosts]
    records, logs, processes = [], [], []
    launched = time.monotonic()
    try:
        for rank, host in enumerate(hosts):
            node = net.host(host)
            name = f"{algo}-w{rank}"
            record = workers_dir / f"{name}.record.json"
            record.unlink(missing_ok=True)
            config = worker_config(cfg, algo, rank, ips, node.defaultIntf().name,
                                   targets[rank] if targets else None, gloo_port, record)
            path = workers_dir / f"{name}.json"
            path.write_text(json.dumps(config, indent=2) + "\n")
            records.append(record)
            logs.append(workers_dir / f"{name}.log")
            with logs[-1].open("wb") as log:
                processes.append(node.popen(
                    [sys.executable, "-m", "inaemu.train.worker", "--config", str(path)],
                    stdout=log, stderr=subprocess.STDOUT, cwd=str(PROJECT_ROOT)))
        progress(f"train: mininet: {algo}: {len(hosts)} workers started, {cfg.iterations} "
                 f"iterations")
        killed = _wait(processes, launched + deadline_s(cfg), algo, progress)
    finally:
        for process in processes:
            if process.poll() is None:
                process.kill()
            process.wait()
    result = merge(algo, [_read(r, l, killed) for r, l in zip(records, logs)])
    if algo != "ina":     # the kernel's TCP repairs the host algorithms' losses (gloo's too)
        after = [tcp_retransmissions(net.host(h)) for h in hosts]
        result.kernel_retransmissions = sum(a - b for a, b in zip(after, tcp_before)
                                            if a is not None and b is not None)
    result.wall_s = time.monotonic() - launched
    progress(f"train: mininet: {algo}: " + (f"failed: {result.error}" if result.error else
             f"done in {result.wall_s:.1f} s"))
    return result


def _wait(processes: list[subprocess.Popen], deadline: float, algo: str,
          progress: Progress) -> bool:
    """Until every worker exits; past the deadline, kill them (returns whether it did)."""
    next_report = time.monotonic() + PROGRESS_EVERY_S
    while any(p.poll() is None for p in processes):
        now = time.monotonic()
        if now >= deadline:
            for process in processes:
                if process.poll() is None:
                    process.kill()
            progress(f"train: mininet: {algo}: deadline passed; workers killed")
            return True
        if now >= next_report:
            done = sum(p.poll() is not None for p in processes)
            progress(f"train: mininet: {algo}: {done}/{len(processes)} workers done")
            next_report += PROGRESS_EVERY_S
        time.sleep(POLL_S)
    return False


def _read(record: Path, log: Path, killed: bool) -> dict:
    """A worker's record, or an error record naming why there is none."""
    try:
        data = json.loads(record.read_text())
        if isinstance(data, dict):
            return data
    except (OSError, ValueError):
        pass
    try:
        lines = [line for line in log.read_text(errors="replace").splitlines() if line.strip()]
    except OSError:
        lines = []
    why = "killed at the deadline" if killed else (lines[-1] if lines else "no output")
    return {"ok": False, "error": f"{record.name}: no record: {why}"}


def merge(algo: str, records: list[dict]) -> TrainResult:
    """The workers' records as one run: per iteration the mean loss, the slowest worker's
    compute (what the all-reduce waits for) and the rest of the iteration as communication."""
    result = TrainResult(algo=algo, net="mininet", workers=len(records))
    failed = [r["error"] for r in records if not r.get("ok")]
    if failed:
        result.error = failed[0]
        return result
    result.parameters = records[0]["parameters"]
    for iteration, rows in enumerate(zip(*(r["rows"] for r in records))):
        iteration_s = max(row["iteration_s"] for row in rows)
        compute_s = max(row["iteration_s"] - row["comm_s"] for row in rows)
        result.rows.append({
            "algo": algo, "net": "mininet", "iteration": iteration,
            "loss": sum(row["loss"] for row in rows) / len(rows), "iteration_s": iteration_s,
            "compute_s": compute_s, "comm_s": iteration_s - compute_s,
            "bytes_sent": sum(row["bytes_sent"] for row in rows) / len(rows),
            "retransmissions": sum(row["retransmissions"] for row in rows)})
    result.evals = [{"algo": algo, "net": "mininet", **point}
                    for point in records[0]["evals"]]
    result.add_times()
    return result
