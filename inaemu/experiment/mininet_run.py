"""`inaemu run --net mininet`: the topology on Mininet, ina.p4 pushed over P4Runtime, one agent
process per worker host, INA then the ring on the same network. Needs root.

Order, and why:
1. compile p4src/ina.p4 with -D INA_K=k into the run directory (the files are part of the
   evidence of the run), by inaemu or by the real p4c-bm2-ss (`--compiler p4c`);
2. start the network (`MininetNetwork`: one `inaemu switch` per switch, or the real
   `simple_switch_grpc` with `--target bmv2`, with no program), then
   push the program, the host routes and the jobs with the controller — switches are configured
   only over P4Runtime, as real ones would be. A job aggregates along a tree over every tier
   (`controller.trees.TreeJobs`; each worker sends to its own switch as its member id there)
   or at one switch (`controller.ina_control.InaJobs`); each worker host learns its
   aggregator's MAC by a static neighbour entry;
3. per algorithm, start every worker's `python -m hosts.agent` inside its host (`host.popen`),
   each doing a warm-up call then the timed one, and wait with a deadline (`--timeout`); a
   worker still running past it is killed and reported, never waited for forever;
4. read the jobs' switch counters, and stop everything: agent processes first, then the
   network — also on an error or Ctrl-C (the caller turns SIGTERM into KeyboardInterrupt).
   With --trace the switches log every packet and capture every port into DIR/net, flushed
   when they stop, for `inaemu trace DIR`.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Callable

from controller.fabric import Fabric
from controller.ina_control import InaJobs
from controller.ina_jobs import FallbackServer
from controller.trees import FallbackNearTiers, TreeJob, TreeJobs, choose_roots
from hosts.fallback import fallback_port
from inaemu.experiment.agents import (CALLS, WorkerSpec, agent_config, read_record,
                                      write_config)
from inaemu.experiment.config import INA_P4, PROJECT_ROOT, RunConfig
from inaemu.experiment.host_aggregators import (AggregatorNotListening, flat_aggregator,
                                                learn_aggregator, start_aggregator,
                                                stop_aggregators, tier_aggregators,
                                                wait_until_listening)
from inaemu.experiment.output import counted

Progress = Callable[[str], None]
GRACE_S = 5.0            # past the agents' own timeout, before we kill them
POLL_S = 0.1
PROGRESS_EVERY_S = 5.0


def compile_ina(k: int, out_dir: Path, compiler: str = "inaemu") -> tuple[Path, Path]:
    """ina.p4 for k values per packet, written as out_dir/ina.json + ina.p4info.txtpb, by
    inaemu's compiler or by the real p4c-bm2-ss (same command line as the tutorials')."""
    json_path, p4info_path = out_dir / "ina.json", out_dir / "ina.p4info.txtpb"
    if compiler == "p4c":
        from topologies.mininet_switch import missing_tool_message, reference_tool
        p4c = reference_tool("p4c-bm2-ss")
        if p4c is None:
            raise RuntimeError(missing_tool_message("p4c-bm2-ss"))
        done = subprocess.run([str(p4c), "--p4v", "16", "-D", f"INA_K={k}", "--p4runtime-files",
                               str(p4info_path), "-o", str(json_path), str(INA_P4)],
                              capture_output=True, text=True)
        if done.returncode != 0:
            tail = "; ".join(done.stderr.strip().splitlines()[-3:])
            raise RuntimeError(f"p4c-bm2-ss failed on {INA_P4.name} ({done.returncode}): {tail}")
        return p4info_path, json_path
    from inaemu.compile_cache import compile_cached   # the orchestrator compiles, not the controller
    build = compile_cached(INA_P4, {"INA_K": str(k)})
    json_path.write_bytes(build.bmv2_json)
    p4info_path.write_text(build.p4info_text)
    return p4info_path, json_path


def run_mininet(cfg: RunConfig, out_dir: Path, progress: Progress) -> list[dict]:
    """Every worker record of every algorithm; raises for a set-up that fails."""
    from topologies.networks import mininet_network
    # one fabric over several servers (docs/cluster.md) when servers are given
    network = {"servers": cfg.servers, "ssh_config": cfg.ssh_config} if cfg.servers else {}
    if cfg.tls is not None:
        network["tls"] = cfg.tls.switch()

    topology = cfg.topology()
    job_hosts = cfg.job_hosts(topology)
    p4info, config = compile_ina(cfg.elems_k, out_dir, cfg.compiler)
    compiler = "p4c-bm2-ss" if cfg.compiler == "p4c" else "inaemu compile"
    progress(f"run: compiled {INA_P4.name} with INA_K={cfg.elems_k} by {compiler} into {out_dir}")
    started = time.monotonic()
    switch = "simple_switch_grpc" if cfg.target == "bmv2" else "inaemu switch"
    with mininet_network(topology, run_dir=str(out_dir / "net"), seed=cfg.seed,
                         trace=cfg.trace, pcap=cfg.pcap or cfg.trace, target=cfg.target,
                         **network) as net:
        over = f", P4Runtime over {cfg.tls.describe()}" if cfg.tls is not None else ""
        progress(f"run: mininet: {topology.name} up ({len(topology.hosts)} hosts, "
                 f"{counted(len(topology.switches), 'switch', 'switches')} ({switch}{over}), "
                 f"loss {cfg.loss:g}%, "
                 f"bw {cfg.bw_mbps or 'unlimited'}) in {time.monotonic() - started:.1f} s")
        with Fabric(topology, progress=lambda line: None, addresses=net.p4runtime_addresses(),
                    tls=cfg.tls.client() if cfg.tls is not None else None) as fabric:
            fabric.push_pipeline(p4info, config)
            routes = fabric.install_routes(aggregate=True)    # prefixes, docs/controller.md
            progress(f"run: controller: pipeline pushed, {routes} routes installed")
            jobs = _Jobs(cfg, topology, fabric.clients, progress)
            targets: dict[int, tuple[InaTarget, ...] | None] = {job: None for job in job_hosts}
            if "ina" in cfg.algos:
                targets = jobs.install(job_hosts)
                _learn_aggregators(net, targets)
                (out_dir / "trees.json").write_text(json.dumps(jobs.describe(), indent=2))
            records: list[dict] = []
            for algo in cfg.algos:
                aggregators = _start_host_aggregators(
                    net, cfg, targets, out_dir, progress,
                    trees=jobs.describe() if cfg.tree else None) if algo == "ina" else []
                try:
                    records += _run_agents(net, cfg, algo, job_hosts, targets, out_dir,
                                           progress)
                finally:
                    _stop_host_aggregators(aggregators, progress)
                if algo == "ina":
                    counters = {job: jobs.counters(job) for job in job_hosts}
                    (out_dir / "switch_counters.json").write_text(
                        json.dumps(counters, indent=2))
                    for job, switches in counters.items():
                        for switch, values in switches.items():
                            progress(f"run: ina: job {job} {switch} counters: " + ", ".join(
                                f"{name.removeprefix('ina_')} {value}"
                                for name, value in values.items() if value))
        progress("run: mininet: stopping the network")
    return records


@dataclass(frozen=True)
class InaTarget:
    """Where one INA worker sends (its aggregator's address) and the id it sends as."""

    host: str
    address: str
    wire_id: int


class _Jobs:
    """The run's INA jobs, as trees (`TreeJobs`) or at one switch each (`InaJobs`), behind one
    face: install them all, read their counters as switch -> counter -> packets."""

    def __init__(self, cfg: RunConfig, topology, clients, progress: Progress):
        def say(line: str) -> None:
            progress(f"run: {line}")

        self.cfg = cfg
        self.topology = topology
        self.trees = TreeJobs(topology, clients, progress=say) if cfg.tree else None
        self.single = None if cfg.tree else InaJobs(topology, clients, progress=say)
        self.roots: dict[int, str] = {}
        self.plans: dict[int, dict] = {}      # tree job -> TreePlan.summary()

    def install(self, job_hosts: dict[int, tuple[str, ...]]) -> dict[int, tuple[InaTarget, ...]]:
        """Every job, in id order; no root is given to a tree, so `TreeJobs` spreads the jobs
        over the equally near roots; single-switch jobs go to `choose_roots`' switches."""
        targets = {}
        if self.trees is not None:
            hashed = self.cfg.sharing == "hashed"
            for job, hosts in job_hosts.items():
                # hashed: a host aggregator per tree switch, on the job's worker host nearest it
                plan = self.trees.install(
                    TreeJob(job, hosts, self.cfg.elems_k, self.cfg.pool_size,
                            sharing=self.cfg.sharing,
                            fallback=FallbackNearTiers(fallback_port(job)) if hashed else None),
                    shared_pairs=(self.cfg.shared_pairs or self.cfg.pool_size) if hashed
                    else None)
                self.plans[job] = plan.summary()
                targets[job] = tuple(InaTarget(e.host, e.address, e.worker_id)
                                       for e in plan.endpoints)
            return targets
        roots = choose_roots(self.topology, list(job_hosts.items()))
        for (job, hosts), root in zip(job_hosts.items(), roots):
            hashed = self.cfg.sharing == "hashed"
            server = None if self.cfg.fallback_slots is None and not hashed else \
                FallbackServer(self.topology.host(hosts[0]).ip, fallback_port(job))
            plan = self.single.install(job, hosts, root, k=self.cfg.elems_k,
                                       pool_size=self.cfg.pool_size, fallback=server,
                                       switch_slots=self.cfg.fallback_slots,
                                       sharing=self.cfg.sharing,
                                       shared_pairs=(self.cfg.shared_pairs or self.cfg.pool_size)
                                       if hashed else None)
            self.roots[job] = root
            targets[job] = tuple(InaTarget(host, plan.job.aggregator_ip, rank)
                                   for rank, host in enumerate(hosts))
        return targets

    def describe(self) -> dict:
        """Per job its tree (per switch: cells, group, parent, members) or its one switch."""
        if self.trees is not None:
            return self.plans
        return {job: {"root": root} for job, root in self.roots.items()}

    def counters(self, job: int) -> dict[str, dict[str, int]]:
        if self.trees is not None:
            return self.trees.counters(job)
        return {self.roots[job]: self.single.counters(job)}


def _start_host_aggregators(net, cfg: RunConfig, targets: dict[int, tuple[InaTarget, ...]],
                            out_dir: Path, progress: Progress,
                            trees: dict | None = None) -> list[subprocess.Popen]:
    """With --fallback, each job's host aggregator (`python -m hosts.fallback_udp`) on its
    first worker's host, for the slots the switch does not hold; its completed sums go to the
    job's aggregator address, which multicasts them (docs/fallback.md). A hashed tree
    (`trees`: job -> TreePlan.summary()) has one per tree switch, where the plan puts it;
    their counters land in DIR/fallback-j<job>[-<switch>].json."""
    hashed = cfg.sharing == "hashed"
    if cfg.fallback_slots is None and not hashed:
        return []
    first_slot = 0 if hashed else cfg.fallback_slots
    specs = []
    for job, job_targets in targets.items():
        if trees is not None:
            specs += tier_aggregators(net.topology, job, trees[job], k=cfg.elems_k,
                                      pool_size=cfg.pool_size,
                                      stats_prefix=out_dir / f"fallback-j{job}")
            continue
        hosts = [t.host for t in job_targets]
        specs.append(flat_aggregator(
            job=job, host=hosts[0], k=cfg.elems_k, first_slot=first_slot,
            pool_size=cfg.pool_size, worker_ips=[net.topology.host(h).ip for h in hosts],
            port=fallback_port(job), via_switch=job_targets[0].address, hashed=hashed,
            stats=out_dir / f"fallback-j{job}.json"))
    logs = [spec.stats.with_suffix(".log") for spec in specs]
    started = [start_aggregator(net, spec, log) for spec, log in zip(specs, logs)]
    try:
        waited = wait_until_listening(started, logs)
    except AggregatorNotListening:
        stop_aggregators(started)
        raise
    progress(f"run: host aggregators listening after {waited:.1f} s")
    if trees is not None:
        progress(f"run: {len(started)} host aggregator(s), one per tree switch of each job "
                 "(hashed sharing: the chunks whose cell is taken)")
    else:
        progress(f"run: {len(started)} host aggregator(s) for slots {first_slot}.."
                 f"{cfg.pool_size - 1} (docs/fallback.md" +
                 (", hashed sharing: the chunks whose cell is taken)" if hashed else ")"))
    return started


def _stop_host_aggregators(processes: list[subprocess.Popen], progress: Progress) -> None:
    stop_aggregators(processes, lambda line: progress(f"run: {line}"))


def _learn_aggregators(net, targets: dict[int, tuple[InaTarget, ...]]) -> None:
    """Each worker host learns its aggregator's MAC by a permanent neighbour entry (the
    aggregator address answers no ARP)."""
    for job_targets in targets.values():
        for e in job_targets:
            learn_aggregator(net.host(e.host), e.address)


def _run_agents(net, cfg: RunConfig, algo: str, job_hosts: dict[int, tuple[str, ...]],
                targets: dict[int, tuple[InaTarget, ...] | None], out_dir: Path,
                progress: Progress) -> list[dict]:
    """All workers of all jobs at once; worker i of the run is `specs[i]` (job-major order)."""
    agents_dir = out_dir / "agents"
    specs = []
    for job, hosts in job_hosts.items():
        ips = [net.topology.host(h).ip for h in hosts]
        blocks: dict[str, list[int]] = {}
        for r, host in enumerate(hosts):
            blocks.setdefault(net.topology.host_link(host).node, []).append(r)
        for w, host in enumerate(hosts):
            target = targets[job][w] if algo == "ina" else None
            name = f"{algo}-j{job}-w{w}" if cfg.jobs > 1 else f"{algo}-w{w}"
            spec = WorkerSpec(algo=algo, job=job, worker=w, host=host,
                              config_path=agents_dir / f"{name}.json",
                              record_path=agents_dir / f"{name}.record.json",
                              log_path=agents_dir / f"{name}.log")
            spec.record_path.unlink(missing_ok=True)
            write_config(spec, agent_config(
                algo=algo, job=job, worker=w, workers=len(hosts), host_ips=ips,
                length=cfg.length, seed=cfg.seed, timeout=cfg.timeout / CALLS,
                record=spec.record_path, k=cfg.elems_k, pool_size=cfg.pool_size,
                window=cfg.window, rto=cfg.rto, lane_format=cfg.lane_format,
                scaling=cfg.scaling, divisor=cfg.divisor,
                aggregator=target.address if target else None,
                wire_id=target.wire_id if target else None,
                switch_blocks=list(blocks.values()), switch_slots=cfg.fallback_slots,
                sharing=cfg.sharing))
            specs.append(spec)
    tcp_before = [tcp_retransmissions(net.host(spec.host)) for spec in specs]
    running: dict[int, subprocess.Popen] = {}
    status: dict[int, int | None] = {}
    killed: dict[int, str] = {}
    launched = time.monotonic()
    try:
        for i, spec in enumerate(specs):
            log = spec.log_path.open("wb")
            try:
                running[i] = net.host(spec.host).popen(
                    [sys.executable, "-m", "hosts.agent", "--config", str(spec.config_path)],
                    stdout=log, stderr=subprocess.STDOUT, cwd=str(PROJECT_ROOT))
            finally:
                log.close()
        progress(f"run: {algo}: {len(specs)} workers started, {cfg.size_bytes} bytes each, "
                 f"timeout {cfg.timeout:g} s")
        _wait(cfg, algo, running, status, killed, launched, progress)
    finally:
        for i, process in running.items():
            if process.poll() is None:
                process.kill()
                killed.setdefault(i, "stopped when the run was interrupted")
            status[i] = process.wait()
    records = [read_record(spec, exit_status=status.get(i), killed_by_us=killed.get(i))
               for i, spec in enumerate(specs)]
    if algo != "ina":    # the kernel's TCP repairs losses; its counter is the host algo's retx
        for spec, record, before in zip(specs, records, tcp_before):
            after = tcp_retransmissions(net.host(spec.host))
            if after is not None and before is not None:
                record["retransmissions"] = after - before
    done = sum(1 for r in records if r["error"] is None and r["time_s"] is not None)
    progress(f"run: {algo}: {done}/{len(specs)} workers finished in "
             f"{time.monotonic() - launched:.1f} s")
    return records


def running_processes():
    """(pid, argv) of every process on the machine (/proc); ones that exit meanwhile are skipped."""
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            argv = (entry / "cmdline").read_bytes().decode(errors="replace").split("\0")
        except OSError:
            continue
        yield int(entry.name), argv


def kill_agents(out_dir: Path) -> list[str]:
    """SIGKILL every agent whose config lies in `out_dir/agents` (a killed run's workers)."""
    agents_dir = str((out_dir / "agents").resolve())
    removed = []
    for pid, argv in running_processes():
        if "hosts.agent" in argv and "--config" in argv:
            config = argv[argv.index("--config") + 1] if argv[-1] != "--config" else ""
            if str(Path(config).resolve().parent) == agents_dir:
                try:
                    os.kill(pid, signal.SIGKILL)
                    removed.append(f"agent process {pid} ({Path(config).name})")
                except ProcessLookupError:
                    pass
    return removed


def tcp_retransmissions(node) -> int | None:
    """TCP segments retransmitted in the host's network namespace so far (/proc/net/snmp)."""
    lines = [line.split() for line in node.cmd("cat /proc/net/snmp").splitlines()
             if line.startswith("Tcp:")]
    if len(lines) != 2 or "RetransSegs" not in lines[0]:
        return None
    return int(lines[1][lines[0].index("RetransSegs")])


def _wait(cfg: RunConfig, algo: str, running: dict[int, subprocess.Popen],
          status: dict[int, int | None], killed: dict[int, str], launched: float,
          progress: Progress) -> None:
    """Until every agent exited, injecting the configured kills; past the deadline, kill."""
    deadline = launched + cfg.timeout + GRACE_S
    pending_kills = sorted((at, worker) for worker, at in cfg.kill)
    next_report = launched + PROGRESS_EVERY_S
    while True:
        now = time.monotonic()
        for worker, process in running.items():
            if worker not in status and process.poll() is not None:
                status[worker] = process.returncode
                outcome = "done" if process.returncode == 0 else f"failed ({process.returncode})"
                progress(f"run: {algo}: worker {worker} {outcome} after {now - launched:.1f} s")
        if len(status) == len(running):
            return
        while pending_kills and now - launched >= pending_kills[0][0]:
            _, worker = pending_kills.pop(0)
            if running[worker].poll() is None:
                running[worker].kill()   # SIGKILL; on a remote host, over there
                killed[worker] = f"killed on purpose after {now - launched:.1f} s (--kill-worker)"
                progress(f"run: {algo}: killed worker {worker} (fault injection)")
        if now >= deadline:
            for worker, process in running.items():
                if process.poll() is None:
                    process.kill()
                    killed[worker] = (f"still running {cfg.timeout:g} s + {GRACE_S:g} s after "
                                      "the start; killed")
            progress(f"run: {algo}: deadline passed; killed the workers still running")
            return
        if now >= next_report:
            progress(f"run: {algo}: {len(status)}/{len(running)} workers done after "
                     f"{now - launched:.0f} s")
            next_report += PROGRESS_EVERY_S
        time.sleep(POLL_S)
