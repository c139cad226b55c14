"""One experiment from a `RunConfig` to its files: run on the chosen network, summarize, write.

This is the library form of `inaemu run` (scripts call it too). Progress goes to a callback.
"""

from __future__ import annotations

import json
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Callable

from inaemu.experiment.config import RunConfig
from inaemu.experiment.output import write_results
from inaemu.experiment.summary import RunSetting, summarize

Progress = Callable[[str], None]


@dataclass
class Outcome:
    summaries: list[dict]
    records: list[dict]
    files: list[Path]


def run_records(cfg: RunConfig, out_dir: Path, progress: Progress) -> list[dict]:
    """Per-worker records of every algorithm, on Mininet or the simulator."""
    if cfg.net == "sim":
        from inaemu.experiment.sim_run import run_sim
        return run_sim(cfg, out_dir, progress)
    from inaemu.experiment.mininet_run import run_mininet
    return run_mininet(cfg, out_dir, progress)


def setting_of(cfg: RunConfig) -> RunSetting:
    return RunSetting(net=cfg.net, topo=cfg.topology().name, jobs=cfg.jobs,
                      size_bytes=cfg.size_bytes,
                      elems_k=cfg.elems_k, loss=cfg.loss, bw_mbps=cfg.bw_mbps, seed=cfg.seed,
                      aggregation="tree" if cfg.tree else "single", target=cfg.target,
                      compiler=cfg.compiler, lane_format=cfg.lane_format, scaling=cfg.scaling)


def packet_code_note(cfg: RunConfig) -> str | None:
    """One line when the run's inaemu switches run their packet code as Python rather than the
    default C (docs/runtime.md): a traced run, native code turned off, or no compiler or
    headers on this machine; None when they run C (or the switches are real BMv2)."""
    if cfg.target != "inaemu":
        return None
    if cfg.trace:
        return "run: packet code: Python (a traced run's switches run the traced Python code)"
    from p4switch.runtime.cgen.nativebuild import enabled, toolchain_problem
    if not enabled():
        return "run: packet code: Python (INAEMU_NATIVE=0)"
    problem = toolchain_problem()
    if problem is None:
        return None
    return (f"run: packet code: Python, not C ({problem}; ./bootstrap.sh setup installs gcc and "
            f"python3-dev)")


def run_experiment(cfg: RunConfig, out_dir: Path, progress: Progress) -> Outcome:
    out_dir = out_dir.resolve()    # agents run in another working directory
    out_dir.mkdir(parents=True, exist_ok=True)
    config = asdict(cfg)
    (out_dir / "config.json").write_text(json.dumps(config, indent=2, default=list) + "\n")
    note = packet_code_note(cfg)
    if note:
        progress(note)
    records = run_records(cfg, out_dir, progress)
    expected = {(algo, job): cfg.workers for algo in cfg.algos for job in range(1, cfg.jobs + 1)}
    summaries = summarize(records, setting_of(cfg), expected=expected)
    from inaemu.model.for_run import add_model      # the predicted time beside each one
    summaries = add_model(summaries, cfg)
    files = write_results(out_dir, summaries, records)
    return Outcome(summaries, records, files)
