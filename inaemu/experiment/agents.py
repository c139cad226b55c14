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
CALLS = 2                  # all-reduce calls per worker; the last one is timed
# the agent's record field -> the run's worker field
RENAMED = {"max_abs_error": "max_abs_err", "mean_abs_error": "mean_abs_err",
           "error_bound": "err_bound"}
PER_CALL = ("bytes_sent", "bytes_received", "packets_sent", "packets_received")


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
                 length: int, seed: int, timeout: float, record: Path, k: int, pool_size: int,
                 window: int, rto: float, aggregator: str | None,
                 wire_id: int | None = None, lane_format: str = "int32",
                 scaling: str = "job", divisor: int | None = None,
                 switch_blocks: list[list[int]] | None = None,
                 switch_slots: int | None = None, sharing: str = "static") -> dict:
    """The JSON an agent reads (hosts/agent.py: its own keys plus `AllreduceConfig` fields).

    `worker` is the worker's rank in its job (its gradient and ring position); `wire_id` is the
    id it sends to its INA aggregator (default: the rank; in a tree, its member id there).
    `switch_blocks`: the job's ranks grouped by the switch they hang off (the hierarchical
    ring follows them; the agent knows no topology).

    Two calls: the first is a warm-up that also lines the workers up (an all-reduce ends at
    about the same moment everywhere), so the second call's time is not inflated by the
    seconds it takes to start n Python processes one after another.
    """
    config = {"algo": algo, "seed": seed, "length": length, "calls": CALLS,
              "output": str(record), "job": job, "worker": worker, "rank": worker,
              "n": workers, "timeout": timeout}
    if algo == "ina":
        config.update(worker=worker if wire_id is None else wire_id, aggregator=aggregator,
                      k=k, pool_size=pool_size, window=window, rto=rto,
                      rto_max=rto_max(rto), max_retx=max_retx(rto, timeout))
        if (lane_format, scaling, divisor) != ("int32", "job", None):   # docs/formats.md
            config.update(fmt=lane_format, scaling=scaling, divisor=divisor)
        if switch_slots is not None:          # the rest on a host aggregator (docs/fallback.md)
            config.update(switch_slots=switch_slots)
        if sharing != "static":               # hashed shared pool (docs/protocol.md §3.3)
            config.update(sharing=sharing)
    else:
        config.update(peers=[f"{ip}:{RING_PORT}" for ip in host_ips],
                      idle_timeout=max(2.0, timeout / 2))
        if algo == "hring" and switch_blocks:
            config.update(switch_blocks=switch_blocks)
    return config


def rto_max(rto: float) -> float:
    """The backoff stops at 4 × rto: under heavy loss a chunk waits for its slowest worker, and
    every worker's timer backs off meanwhile; a low ceiling keeps the window moving."""
    return 4 * rto


def max_retx(rto: float, timeout: float) -> int:
    """Tries enough for the backoff (rto doubling up to `rto_max`) to span about a third of the
    call's timeout: a lost worker is declared unreachable well before the hard deadline."""
    tries, waited, wait = 0, 0.0, rto
    while waited + wait <= timeout / 3 and tries < 1000:
        waited += wait
        wait = min(2 * wait, rto_max(rto))
        tries += 1
    return max(tries, 3)


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
        record.update(_from_agent(written))
    if killed_by_us:
        record["error"] = killed_by_us
    elif written is None or (exit_status not in (0, None) and not record["error"]):
        why = _last_line(spec.log_path) or "no output"
        record["error"] = (f"exited with status {exit_status}: {why}" if exit_status
                           else f"wrote no record: {why}")
    if record["error"]:
        record["correct"] = False
    return record


def _from_agent(written: dict) -> dict:
    """The agent's record in the run's terms: the last call's time, traffic per call."""
    found: dict = {}
    if not written.get("ok", False):
        found["error"] = str(written.get("error") or "the agent reported a failure")
        return found
    calls = max(1, int(written.get("calls") or 1))
    seconds = written.get("seconds") or []
    found["time_s"] = float(seconds[-1]) if seconds else None
    for name in PER_CALL:
        if isinstance(written.get(name), (int, float)):
            found[name] = written[name] / calls
    found["retransmissions"] = written.get("retransmissions")
    for theirs, ours in RENAMED.items():
        found[ours] = written.get(theirs)
    found["correct"] = bool(written.get("correct"))
    return found
