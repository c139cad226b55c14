"""The contract with `python -m hosts.agent --config FILE.json`: what a worker is told, what it
writes back, and how a missing or broken record becomes an error record.

Kept in one module so that the Mininet runner does not know the agent's file formats.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path

from inaemu.experiment.summary import WORKER_FIELDS

RING_PORT = 47000          # TCP port each ring worker listens on (in its own namespace)


@dataclass(frozen=True)
class WorkerSpec:
    """One worker process of one algorithm."""

    algo: str
    job: int
    worker: int
    host: str
    config_path: Path
    record_path: Path
    log_path: Path


def agent_config(*, algo: str, job: int, worker: int, workers: int, host_ips: list[str],
                 length: int, seed: int, timeout: float, record: Path, start_at: float | None,
                 k: int, pool_size: int, aggregator: str | None) -> dict:
    """The JSON an agent reads (see docs/experiments.md, "Agents")."""
    config = {
        "algo": algo, "job": job, "worker": worker, "workers": workers, "length": length,
        "seed": seed, "timeout": timeout, "record": str(record), "start_at": start_at,
        "host": host_ips[worker],
    }
    if algo == "ina":
        config.update(aggregator=aggregator, k=k, pool_size=pool_size, window=pool_size)
    else:
        config.update(peers=list(host_ips), port=RING_PORT)
    return config


def write_config(spec: WorkerSpec, config: dict) -> None:
    spec.config_path.parent.mkdir(parents=True, exist_ok=True)
    spec.config_path.write_text(json.dumps(config, indent=2) + "\n")


def _last_line(path: Path) -> str | None:
    try:
        lines = [line.strip() for line in path.read_text(errors="replace").splitlines()]
    except OSError:
        return None
    lines = [line for line in lines if line]
    return lines[-1] if lines else None


def read_record(spec: WorkerSpec, *, exit_status: int | None, killed_by_us: str | None) -> dict:
    """The worker's record as a WORKER_FIELDS dict; an error record when it wrote none."""
    record = {name: None for name in WORKER_FIELDS}
    record.update(algo=spec.algo, job=spec.job, worker=spec.worker, host=spec.host,
                  correct=False)
    try:
        written = json.loads(spec.record_path.read_text())
        if not isinstance(written, dict):
            raise ValueError("not a JSON object")
    except FileNotFoundError:
        written = None
    except (OSError, ValueError) as e:
        record["error"] = f"unreadable record {spec.record_path.name}: {e}"
        return record
    if written is not None:
        for name in WORKER_FIELDS:
            if name in written and name not in ("algo", "job", "worker", "host"):
                record[name] = written[name]
        record["correct"] = bool(written.get("correct"))
    if killed_by_us:
        record["error"] = killed_by_us
    elif written is None or (exit_status not in (0, None) and not record["error"]):
        why = _last_line(spec.log_path) or "no output"
        record["error"] = (f"exited with status {exit_status}: {why}" if exit_status
                           else f"wrote no record: {why}")
    if record["error"]:
        record["correct"] = False
    return record
