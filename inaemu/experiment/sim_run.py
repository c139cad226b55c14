"""`inaemu run --net sim`: the same topology, program, controller and host protocol cores in the
in-process discrete-event network (`inaemu.sim`, docs/sim.md). Times are virtual seconds.

The simulator sets itself up over P4Runtime exactly as the Mininet path does; this module only
maps a `RunConfig` onto `simulate(...)` (jobs, their roots, tree or single-switch aggregation,
capture) and its worker records onto the run's record fields.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Callable

from inaemu.experiment.agents import max_retx, rto_max
from inaemu.experiment.config import RunConfig
from inaemu.experiment.summary import WORKER_FIELDS

Progress = Callable[[str], None]


class SimUnavailable(RuntimeError):
    """The simulator is not importable in this installation."""


def run_sim(cfg: RunConfig, out_dir: Path, progress: Progress) -> list[dict]:
    try:
        from inaemu.sim.driver import InaOptions, SimJob, max_passes_ahead
    except ImportError as error:
        raise SimUnavailable(f"the simulator is not available: {error}") from None
    from controller.trees import choose_roots
    topology = cfg.topology()
    job_hosts = cfg.job_hosts(topology)
    roots = choose_roots(topology, list(job_hosts.items()))
    jobs = [SimJob(job=job, workers=hosts, switch=root, hierarchical=cfg.tree)
            for (job, hosts), root in zip(job_hosts.items(), roots)]
    everyone = [host for hosts in job_hosts.values() for host in hosts]
    deaths = {everyone[worker]: at for worker, at in cfg.kill}
    from inaemu.sim.cores import chosen_core
    core, why_not_native = chosen_core(cfg.sim_core)
    progress(f"run: sim: the {core} core" + (
        f" (the native one is not available here: {why_not_native})" if why_not_native else ""))
    ina = InaOptions(pool_size=cfg.pool_size, window=cfg.window, rto=cfg.rto,
                     rto_max=rto_max(cfg.rto), max_retx=max_retx(cfg.rto, cfg.timeout),
                     fmt=cfg.lane_format, scaling=cfg.scaling, divisor=cfg.divisor,
                     fallback_slots=cfg.fallback_slots, sharing=cfg.sharing,
                     shared_pairs=cfg.shared_pairs or cfg.pool_size)
    # the INA workers' max passes start now, on the core the switches' set-up leaves idle
    with max_passes_ahead(jobs, algos=cfg.algos, size_bytes=cfg.size_bytes, seed=cfg.seed,
                          ina=ina):
        return _run_algos(cfg, out_dir, progress, topology, jobs, roots, deaths, core, ina)


def _run_algos(cfg: RunConfig, out_dir: Path, progress: Progress, topology, jobs, roots,
               deaths, core: str, ina) -> list[dict]:
    """Every algorithm of the run on one set-up of the switches: the workers' records."""
    from inaemu.sim.driver import SimTimeLimit, prepare_setup, simulate
    records: list[dict] = []
    # the switches are configured once for every algorithm of the run (docs/sim.md)
    setup = prepare_setup(topology, jobs, elems_k=cfg.elems_k, pool_size=cfg.pool_size,
                          ina="ina" in cfg.algos, progress=progress,
                          fallback_slots=cfg.fallback_slots, sharing=cfg.sharing,
                          shared_pairs=cfg.shared_pairs or cfg.pool_size, core=core)
    report = {"core": core, "setup": {"wall_s": setup.wall_s, "routes": setup.routes, **{
        f"{name}_s": seconds for name, seconds in setup.phases.items()}}}
    for algo in cfg.algos:
        progress(f"run: sim: {algo}: {cfg.jobs} job(s) of {cfg.workers} workers on "
                 f"{topology.name}, {cfg.size_bytes} bytes each" + (
                     f", {'tree' if cfg.tree else 'single-switch'} aggregation rooted at "
                     f"{', '.join(roots)}" if algo == "ina" else ""))
        try:
            result = simulate(topology, jobs, algo=algo, size_bytes=cfg.size_bytes,
                              elems_k=cfg.elems_k, seed=cfg.seed, time_limit=cfg.timeout,
                              ina=ina, deaths=deaths, capture_dir=capture_dir(cfg, algo, out_dir),
                              progress=progress, setup=setup, keep_results=False,
                              core=core)
        except SimTimeLimit as limit:
            progress(f"run: sim: {algo}: {limit}")
            result = limit.result
            # the list of unfinished workers is in that line, once; each record says only why
            unfinished = f"no result by the virtual time limit ({cfg.timeout:g} s)"
        else:
            unfinished = None
        for worker in result.records:
            record = {name: getattr(worker, name, None) for name in WORKER_FIELDS}
            if record["error"] is None and record["time_s"] is None:
                record["error"] = unfinished or f"no result (state {worker.state})"
                record["correct"] = False
            if worker.host in deaths:
                record["error"] = record["error"] or "killed on purpose (--kill-worker)"
                record["correct"] = False
            records.append(record)
        report[algo] = {"virtual_s": result.virtual_s, "wall_s": result.wall_s,
                        "events": result.events, "frames": result.frames,
                        "links": result.links, "switches": result.switches}
        if algo == "ina":     # per job: its tree's switches, or the one aggregating switch
            report[algo]["trees"] = result.trees or {job.job: {"root": job.switch}
                                                     for job in jobs}
    (out_dir / "sim_report.json").write_text(json.dumps(report, indent=2, default=str) + "\n")
    return records


def capture_dir(cfg: RunConfig, algo: str, out_dir: Path) -> Path | None:
    """Where a traced run's switches write (None: not traced). INA is what `inaemu trace DIR`
    reads, in DIR/trace; a ring run after it goes to DIR/trace-ring, so it overwrites nothing."""
    if not cfg.trace:
        return None
    return out_dir / ("trace" if algo == "ina" else f"trace-{algo}")
