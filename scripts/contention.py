"""Jobs contending for one switch's aggregator cells, with and without the fallback to a host
aggregator (docs/fallback.md): time, throughput and correctness per mode, as a table.

    .venv/bin/python scripts/contention.py --net sim
    flock /work/coord/mininet.lock .venv/bin/python scripts/contention.py --net mininet

A star: `--jobs` jobs of `--workers` workers (h1.. in job order) and one more host, `ps`'s
h<last>, which runs every job's host aggregator (job j on UDP port 48880 + j). ina.p4 is
compiled with `--cells` cells, fewer than the jobs' full windows need. Every job all-reduces
`--size-kib` of float32 per worker, all jobs at once. Modes:

  refuse    each job asks for its whole window W of slots; the jobs that do not fit are refused
            (the controller's reason is printed) and do not run: today's behaviour
  shrink    each job gets an equal share P of the cells and its workers' window shrinks to P
  fallback  each job gets the same P in the switch, its workers keep W; slots P..W-1 are
            aggregated by the job's host aggregator, and the workers know which slots are the
            host's (their loss detection compares chunks of one path only)
  fallback-mc     as fallback, but the host aggregator sends each completed sum once to the
            switch, which multicasts it (one packet through the switch instead of n)
  fallback-plain  as fallback, with workers that do not know (one path, as before)

Correct = every worker's result within the protocol's error bound of the float64 sum (§5).
On Mininet the script runs as root; wrap it in the machine's Mininet lock. With `inaemu run`'s
--grpc-cacert/--grpc-server-cert/--grpc-server-key (and --grpc-cert/--grpc-key) the switch
serves P4Runtime over TLS (mutual TLS) and the controller connects with them (Mininet only).
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from controller.ina_control import InaJobs  # noqa: E402
from controller.ina_jobs import FallbackServer, JobRefused, aggregator_address  # noqa: E402
from hosts.agent import gradient  # noqa: E402
from hosts.fallback import fallback_port  # noqa: E402
from inaemu.experiment.tls import RunTLSError, add_tls_arguments, tls_from_args  # noqa: E402
from topologies.builders import star  # noqa: E402

MODES = ("refuse", "shrink", "fallback", "fallback-mc", "fallback-plain")


@dataclass
class JobOutcome:
    job: int
    switch_slots: int = 0            # P: slots in the switch (0: refused)
    window: int = 0                  # W the workers used
    paths: bool = True               # the workers are told P (per-path loss detection)
    via_switch: bool = False         # the host's sums are multicast by the switch
    refused: str | None = None
    times: list = field(default_factory=list)     # per worker, seconds (None: no result)
    correct: list = field(default_factory=list)
    max_err: float = 0.0
    host_chunks: int = 0             # chunks the host aggregator completed
    queries: int = 0                 # workers' early recovery packets (QUERYs)
    timer_retx: int = 0

    @property
    def time(self) -> float | None:
        return None if not self.times or None in self.times else max(self.times)


def job_hosts(jobs: int, workers: int) -> dict[int, list[str]]:
    return {j: [f"h{(j - 1) * workers + w + 1}" for w in range(workers)]
            for j in range(1, jobs + 1)}


def plan_modes(args) -> dict[str, dict[int, tuple[int, int, bool]]]:
    """mode -> job -> (switch slots asked, workers' window, with fallback)."""
    share = (args.cells // args.jobs - 2) // 2
    if share < 1:
        raise SystemExit(f"contention: {args.cells} cells leave no slot per job")
    if share >= args.window:
        raise SystemExit(f"contention: {args.cells} cells hold every job's window "
                         f"{args.window}: no contention")
    jobs = range(1, args.jobs + 1)
    return {"refuse": {j: (args.window, args.window, False) for j in jobs},
            "shrink": {j: (share, share, False) for j in jobs},
            "fallback": {j: (share, args.window, True) for j in jobs},
            "fallback-mc": {j: (share, args.window, True) for j in jobs},
            "fallback-plain": {j: (share, args.window, True) for j in jobs}}


def install(jobs: InaJobs, topology, hosts, plan, k: int, mode: str) -> dict[int, JobOutcome]:
    ps = topology.hosts[-1].ip
    outcomes = {}
    for job, (slots, window, fallback) in plan.items():
        outcome = outcomes[job] = JobOutcome(job, window=window)
        server = FallbackServer(ps, fallback_port(job)) if fallback else None
        try:
            placed = jobs.install(job, hosts[job], "s1", k=k, pool_size=window,
                                  fallback=server, switch_slots=slots)
        except JobRefused as refusal:
            outcome.refused = refusal.reason
            continue
        outcome.switch_slots = placed.job.pool_size
        outcome.paths = mode != "fallback-plain"
        outcome.via_switch = mode == "fallback-mc"
    return outcomes


def reference(seed: int, job: int, n: int, length: int) -> np.ndarray:
    return np.sum([gradient(seed, w, length, job=job).astype(np.float64) for w in range(n)],
                  axis=0)


# --- the simulator ------------------------------------------------------------------------------

def run_sim(args, mode: str, plan) -> dict[int, JobOutcome]:
    from controller.fabric import Fabric
    from hosts.fallback import FallbackAggregator
    from hosts.fallback_node import SimFallbackServer
    from hosts.ina_session import InaSession
    from inaemu.sim import control
    from inaemu.sim.frames import ip_bytes
    from inaemu.sim.ina_worker import InaWorker
    from inaemu.sim.network import SimNetwork
    from inaemu.sim.switch_node import SwitchCost

    topology = star(args.jobs * args.workers + 1, delay_ms=args.delay_ms)
    hosts = job_hosts(args.jobs, args.workers)
    program = control.compile_program(str(control.INA_PROGRAM), (
        ("INA_K", str(args.k)), ("INA_CELLS", str(args.cells))))
    # the switch's service time per packet (and per copy, in the same proportion as inaemu's)
    cost = SwitchCost(per_packet_s=args.switch_us * 1e-6,
                      per_copy_s=args.switch_us * 1e-6 * SwitchCost().per_copy_s /
                      SwitchCost().per_packet_s)
    net = SimNetwork(topology, seed=args.seed, switch_cost=cost)
    control_topology = net.start_servers()
    try:
        with Fabric(control_topology, timeout=10.0) as fabric:
            for client in fabric.clients.values():
                client.set_pipeline(program.p4info, program.config)
            fabric.install_routes(control.L3_FORWARD, aggregate=True)
            outcomes = install(InaJobs(control_topology, fabric.clients), control_topology,
                               hosts, plan, args.k, mode)
    finally:
        net.stop_servers()
    length = args.size_kib * 256
    agg_ip = ip_bytes(aggregator_address(topology, "s1"))
    ps_node = net.hosts[topology.hosts[-1].name]
    workers, servers, running = [], {}, [0]

    def ended(_worker) -> None:
        running[0] -= 1
        if not running[0]:
            net.loop.stop()

    for job, outcome in outcomes.items():
        if outcome.refused:
            continue
        n = len(hosts[job])
        ips = [ip_bytes(topology.host(h).ip) for h in hosts[job]]
        if outcome.switch_slots < outcome.window:
            servers[job] = SimFallbackServer(
                ps_node, FallbackAggregator(job=job, n=n, k=args.k,
                                            first_slot=outcome.switch_slots,
                                            pool_size=outcome.window,
                                            via_switch=outcome.via_switch),
                ips, port=fallback_port(job), switch_ip=agg_ip)
        for w, host in enumerate(hosts[job]):
            session = InaSession(job=job, worker=w, n=n, k=args.k, pool_size=outcome.window,
                                 window=outcome.window, rto=0.02, rto_max=0.5, max_retx=20,
                                 switch_slots=outcome.switch_slots if outcome.paths else None)
            worker = InaWorker(net.hosts[host], session, agg_ip,
                               gradient(args.seed, w, length, job=job), ended)
            workers.append((job, worker))
    running[0] = len(workers)
    for _, worker in workers:
        worker.start()
    net.loop.run(until=args.time_limit)
    return _judge(args, outcomes, workers, servers, length)


def _judge(args, outcomes, workers, servers, length) -> dict[int, JobOutcome]:
    exact = {job: reference(args.seed, job, args.workers, length)
             for job, o in outcomes.items() if not o.refused}
    for job, worker in workers:
        outcome, result = outcomes[job], worker.outcome
        done = result.finished and result.error is None
        outcome.times.append(result.finished_at - worker.started_at if done else None)
        counters = worker.session.counters
        outcome.queries += counters.fast_retransmissions
        outcome.timer_retx += counters.timer_retransmissions
        if done:
            error = np.abs(result.result.astype(np.float64) - exact[job])
            outcome.max_err = max(outcome.max_err, float(error.max()))
            outcome.correct.append(bool(np.all(error <= result.extra["err_bound"])))
        else:
            outcome.correct.append(False)
    for job, server in servers.items():
        outcomes[job].host_chunks = server.aggregator.counters.results_multicast
    return outcomes


# --- Mininet ------------------------------------------------------------------------------------

def run_mininet(args, mode: str, plan, out_dir: Path) -> dict[int, JobOutcome]:
    import subprocess

    from controller.fabric import Fabric
    from controller.ina_jobs import aggregator_mac
    from inaemu.experiment.agents import CALLS, agent_config
    from topologies.mininet_net import MininetNetwork

    topology = star(args.jobs * args.workers + 1, delay_ms=args.delay_ms)
    hosts = job_hosts(args.jobs, args.workers)
    run_dir = out_dir / mode
    run_dir.mkdir(parents=True, exist_ok=True)
    p4info, config = _compile_mininet(args, run_dir)
    length = args.size_kib * 256
    tls = args.tls                     # P4Runtime over TLS (checked in main), or None
    with MininetNetwork(topology, run_dir=str(run_dir / "net"), seed=args.seed,
                        tls=tls.switch() if tls is not None else None) as net:
        with Fabric(topology, tls=tls.client() if tls is not None else None) as fabric:
            fabric.push_pipeline(p4info, config)
            fabric.install_routes(aggregate=True)
            outcomes = install(InaJobs(topology, fabric.clients), topology, hosts, plan, args.k,
                               mode)
            agg = aggregator_address(topology, "s1")
            servers, agents = {}, []
            ps = net.host(topology.hosts[-1].name)
            ps.cmd(f"ip neigh replace {agg} lladdr {aggregator_mac(agg)} dev "
                   f"{ps.defaultIntf().name} nud permanent")      # fallback-mc sends to it
            try:
                for job, outcome in outcomes.items():
                    if outcome.refused:
                        continue
                    ips = [topology.host(h).ip for h in hosts[job]]
                    if outcome.switch_slots < outcome.window:
                        stats = run_dir / f"fallback-j{job}.json"
                        servers[job] = (ps.popen(
                            [sys.executable, "-m", "hosts.fallback_udp", "--job", str(job),
                             "--k", str(args.k), "--first-slot", str(outcome.switch_slots),
                             "--pool", str(outcome.window), "--workers", ",".join(ips),
                             "--port", str(fallback_port(job)), "--stats", str(stats)]
                            + (["--via-switch", agg] if outcome.via_switch else []),
                            cwd=str(ROOT), stdout=subprocess.DEVNULL,
                            stderr=subprocess.DEVNULL), stats)
                    for w, host in enumerate(hosts[job]):
                        node = net.host(host)
                        node.cmd(f"ip neigh replace {agg} lladdr {aggregator_mac(agg)} dev "
                                 f"{node.defaultIntf().name} nud permanent")
                        record = run_dir / f"j{job}-w{w}.record.json"
                        cfg = agent_config(
                            algo="ina", job=job, worker=w, workers=len(ips), host_ips=ips,
                            length=length, seed=args.seed, timeout=args.time_limit, record=record,
                            k=args.k, pool_size=outcome.window, window=outcome.window, rto=0.02,
                            aggregator=agg)
                        if outcome.paths:
                            cfg["switch_slots"] = outcome.switch_slots
                        path = run_dir / f"j{job}-w{w}.json"
                        path.write_text(json.dumps(cfg))
                        agents.append((job, w, record, node.popen(
                            [sys.executable, "-m", "hosts.agent", "--config", str(path)],
                            cwd=str(ROOT), stdout=subprocess.DEVNULL,
                            stderr=subprocess.DEVNULL)))
                time.sleep(0.5)   # the host aggregators bind before the first chunk arrives
                deadline = time.monotonic() + 2 * args.time_limit + 10
                for *_, process in agents:
                    try:
                        process.wait(timeout=max(1.0, deadline - time.monotonic()))
                    except subprocess.TimeoutExpired:
                        process.kill()
                        process.wait()
            finally:
                for *_, process in agents:
                    if process.poll() is None:
                        process.kill()
                for process, _ in servers.values():
                    process.terminate()
                for process, _ in servers.values():
                    try:
                        process.wait(timeout=5)
                    except subprocess.TimeoutExpired:
                        process.kill()
    for job, w, record_path, _ in agents:
        outcome = outcomes[job]
        try:
            record = json.loads(record_path.read_text())
        except (OSError, ValueError):
            record = {"ok": False}
        ok = bool(record.get("ok"))
        outcome.times.append(record["seconds"][-1] if ok else None)
        outcome.correct.append(bool(record.get("correct")) if ok else False)
        outcome.max_err = max(outcome.max_err, record.get("max_abs_error") or 0.0)
        outcome.queries += record.get("fast_retransmissions") or 0
        outcome.timer_retx += record.get("timer_retransmissions") or 0
    for job, (_, stats) in servers.items():
        try:
            done = json.loads(stats.read_text())["results_multicast"]
            outcomes[job].host_chunks = done // CALLS      # the warm-up call's and the timed one's
        except (OSError, ValueError, KeyError):
            pass
    return outcomes


def _compile_mininet(args, run_dir: Path) -> tuple[Path, Path]:
    """ina.p4 with INA_K and INA_CELLS, written into the run directory (the Mininet run's
    compile_ina sets only INA_K)."""
    from inaemu.compile_cache import compile_cached
    from inaemu.experiment.config import INA_P4
    build = compile_cached(INA_P4, {"INA_K": str(args.k), "INA_CELLS": str(args.cells)})
    json_path, p4info_path = run_dir / "ina.json", run_dir / "ina.p4info.txtpb"
    json_path.write_bytes(build.bmv2_json)
    p4info_path.write_text(build.p4info_text)
    return p4info_path, json_path


# --- the table ----------------------------------------------------------------------------------

def summary(mode: str, outcomes: dict[int, JobOutcome], size_bytes: int, k: int) -> dict:
    ran = [o for o in outcomes.values() if not o.refused]
    finished = [o for o in ran if o.time is not None]
    chunks = -(-(size_bytes // 4) // k)       # per job and call
    return {
        "mode": mode,
        "jobs_run": len(ran), "refused": [f"job {o.job}: {o.refused}" for o in outcomes.values()
                                          if o.refused],
        "slots": "/".join(f"{o.switch_slots}of{o.window}" for o in ran) or "-",
        "mean_job_s": float(np.mean([o.time for o in finished])) if finished else None,
        "makespan_s": max((o.time for o in finished), default=None),
        # the sum over jobs of size / job time: what the switch delivered to all of them
        "algbw_mb_s": sum(size_bytes / o.time / 1e6 for o in finished),
        "correct": f"{sum(sum(o.correct) for o in ran)}/{sum(len(o.correct) for o in ran)}",
        "host_chunk_share": sum(o.host_chunks for o in ran) / max(1, chunks * len(ran)),
        "queries": sum(o.queries for o in ran),
        "timer_retx": sum(o.timer_retx for o in ran),
        "max_err": max((o.max_err for o in ran), default=0.0),
    }


def print_table(net: str, rows: list[dict]) -> None:
    print(f"\ncontention on {net}:")
    head = ("mode", "jobs", "P of W per job", "mean job s", "makespan s", "sum algbw MB/s",
            "correct", "via host", "QUERYs", "timer retx")
    print(" | ".join(head))
    print(" | ".join("-" * len(h) for h in head))
    for r in rows:
        print(" | ".join([
            r["mode"], str(r["jobs_run"]), r["slots"],
            "-" if r["mean_job_s"] is None else f"{r['mean_job_s']:.3f}",
            "-" if r["makespan_s"] is None else f"{r['makespan_s']:.3f}",
            f"{r['algbw_mb_s']:.2f}", r["correct"], f"{100 * r['host_chunk_share']:.0f} %",
            str(r["queries"]), str(r["timer_retx"])]))
    for r in rows:
        for line in r["refused"]:
            print(f"  {r['mode']}: refused: {line}")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--net", choices=("sim", "mininet"), default="sim")
    parser.add_argument("--jobs", type=int, default=4)
    parser.add_argument("--workers", type=int, default=4, help="per job")
    parser.add_argument("--k", type=int, default=64, help="values per packet (INA_K)")
    parser.add_argument("--window", type=int, default=32, help="W: the slots each job wants")
    parser.add_argument("--cells", type=int, default=72,
                        help="INA_CELLS (default 72: an equal share is 8 slots)")
    parser.add_argument("--size-kib", type=int, default=256, help="per worker")
    parser.add_argument("--delay-ms", type=float, default=1.0, help="every link, one way")
    parser.add_argument("--switch-us", type=float, default=17.0,
                        help="sim: the switch's microseconds per packet (default 17, what "
                             "`inaemu switch` costs; a hardware switch is line rate)")
    parser.add_argument("--modes", default=",".join(MODES))
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--time-limit", type=float, default=60.0, help="seconds per mode")
    parser.add_argument("--out", type=Path, default=ROOT / "out" / "contention")
    add_tls_arguments(parser)
    args = parser.parse_args(argv)
    try:                      # the files, before any network is built
        args.tls = tls_from_args(args, net=args.net)
    except RunTLSError as error:
        parser.error(str(error))
    modes = [m for m in args.modes.split(",") if m]
    if any(m not in MODES for m in modes):
        parser.error(f"--modes: choose from {', '.join(MODES)}")
    plans = plan_modes(args)
    args.out.mkdir(parents=True, exist_ok=True)
    rows = []
    for mode in modes:
        started = time.monotonic()
        if args.net == "sim":
            outcomes = run_sim(args, mode, plans[mode])
        else:
            outcomes = run_mininet(args, mode, plans[mode], args.out)
        rows.append(summary(mode, outcomes, args.size_kib * 1024, args.k))
        print(f"contention: {args.net} {mode}: {time.monotonic() - started:.1f} s wall",
              flush=True)
    print_table(f"{args.net} ({args.jobs} jobs x {args.workers} workers, k={args.k}, "
                f"INA_CELLS={args.cells}, W={args.window}, {args.size_kib} KiB each, "
                f"links {args.delay_ms:g} ms" + (f", switch {args.switch_us:g} us/packet"
                                                 if args.net == "sim" else "") + ")", rows)
    (args.out / f"contention-{args.net}.json").write_text(json.dumps(rows, indent=2) + "\n")
    return 0 if all(r["correct"].split("/")[0] == r["correct"].split("/")[1] for r in rows) \
        else 1


if __name__ == "__main__":
    raise SystemExit(main())
