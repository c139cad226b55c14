"""One worker process of an experiment: `python -m hosts.agent --config FILE.json`.

The worker builds its gradient from the seed (numpy default_rng([seed, job, rank]), standard
normal times `magnitude`, float32), all-reduces it `calls` times with the chosen algorithm, and
writes a JSON record: timing, traffic, and the error against the exact float64 sum, which it
recomputes from the seeds of all n ranks 0..n-1, with the algorithm's error bound. The rank is
separate from `worker`, the id on the wire: in an aggregation tree a worker's id is its member
index at its own switch, so ids repeat across switches while ranks do not. On failure it prints
one line to stderr, writes {"ok": false, "error": ...} to the output path when it has one, and
exits 1.

The config file is one JSON object: the agent's own keys (`algo`, `seed`, `length`, `calls`,
`magnitude`, `output`, `rank` (default: `worker`)) and every other key an `AllreduceConfig`
field (docs/hosts.md).
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

import numpy as np

from .api import ALGORITHMS, AllreduceConfig, Allreducer, ConfigError
from .errors import HostError
from .gradient_stream import draw, generator_of
from .quantize import error_bound as ina_error_bound
from .ring_session import ring_error_bound

AGENT_KEYS = {"algo": "ina", "seed": 0, "length": 1024, "calls": 1, "magnitude": 1.0,
              "output": None, "rank": None}


def gradient(seed: int, rank: int, length: int, magnitude: float = 1.0,
             job: int | None = None) -> np.ndarray:
    """Rank `rank`'s gradient for an experiment seed (any process can rebuild it). With a job,
    seeded by (seed, job, rank), so concurrent jobs sum different inputs; without, by
    (seed, rank) (the simulator's inputs)."""
    return draw(generator_of(seed, rank, job), length, magnitude)


VERIFY_BLOCK = 1 << 16     # elements per block of the check against the exact sum


def reference_blocks(seed: int, n: int, length: int, magnitude: float, job: int | None = None,
                     *, own: tuple[int, np.ndarray] | None = None, abs_sums: bool = True):
    """The exact float64 sum over all n ranks, a block of VERIFY_BLOCK elements at a time:
    (first, exact, sum of |x| or None) per block. Each rank's generator draws its gradient in
    blocks (the same values as `gradient`: a Generator's normals drawn in pieces are the stream
    drawn at once), so no vector of the whole length is built and every temporary stays in the
    cache: at 16 MiB and 8 ranks the whole-vector version took 0.66 s per agent, half of it
    page faults, and every agent of a run pays it at once. `own`: (rank, its gradient), used
    instead of drawing it again."""
    generators = [None if own is not None and rank == own[0] else generator_of(seed, rank, job)
                  for rank in range(n)]
    for first in range(0, length, VERIFY_BLOCK):
        size = min(VERIFY_BLOCK, length - first)
        total = np.zeros(size, np.float64)
        abs_total = np.zeros(size, np.float64) if abs_sums else None
        for generator in generators:
            add_exact(total, own[1][first:first + size] if generator is None else
                      draw(generator, size, magnitude), abs_total)
        yield first, total, abs_total


def add_exact(total: np.ndarray, values: np.ndarray, abs_total: np.ndarray | None = None) -> None:
    """One rank's float32 values into the exact float64 sums (and the sums of |x|), in place.
    The ranks go in order 0..n-1, whoever drew the values (`reference_blocks`, or the
    simulator's check from what the workers quantized): float64 addition is not associative,
    and the reference is this order's sum."""
    np.add(total, values, out=total)       # (float32 to float64 is exact: no rounding but +'s)
    if abs_total is not None:
        np.add(abs_total, np.abs(values), out=abs_total)


def reference(seed: int, n: int, length: int, magnitude: float,
              job: int | None = None) -> tuple[np.ndarray, np.ndarray, float]:
    """The exact float64 sum, the sum of |x| and the global max |x| over all n ranks."""
    total = np.zeros(length, np.float64)
    abs_total = np.zeros(length, np.float64)
    for first, exact, abs_sum in reference_blocks(seed, n, length, magnitude, job):
        total[first:first + exact.size] = exact
        abs_total[first:first + exact.size] = abs_sum
    global_max = max((float(np.max(np.abs(gradient(seed, rank, length, magnitude, job))))
                      for rank in range(n)), default=0.0) if length else 0.0
    return total, abs_total, global_max


def check_result(result: np.ndarray, blocks, bound_of) -> dict:
    """The record's error fields, a block at a time: `blocks` from `reference_blocks`,
    `bound_of(first, end, abs_sum)` the algorithm's bound of elements first..end-1."""
    max_error = error_sum = max_bound = 0.0
    correct = True
    for first, exact, abs_sum in blocks:
        end = first + exact.size
        error = np.abs(result[first:end].astype(np.float64) - exact)
        bound = bound_of(first, end, abs_sum)
        max_error = max(max_error, float(np.max(error)))
        error_sum += float(np.sum(error))
        max_bound = max(max_bound, float(np.max(bound)))
        correct = correct and bool(np.all(error <= bound))
    return {"max_abs_error": max_error,
            "mean_abs_error": error_sum / result.size if result.size else 0.0,
            "error_bound": max_bound, "correct": correct}


def parse_config(data) -> tuple[dict, AllreduceConfig]:
    if not isinstance(data, dict):
        raise ConfigError("the agent config must be a JSON object")
    agent = {key: data.get(key, default) for key, default in AGENT_KEYS.items()}
    if agent["algo"] not in ALGORITHMS:
        raise ConfigError(f"config.algo: must be one of {ALGORITHMS}, got {agent['algo']!r}")
    for key in ("seed", "length", "calls"):
        value = agent[key]
        if isinstance(value, bool) or not isinstance(value, int) or value < (key == "calls"):
            raise ConfigError(f"config.{key}: must be a non-negative integer"
                              f"{' (at least 1)' if key == 'calls' else ''}, got {value!r}")
    if not isinstance(agent["magnitude"], (int, float)) or not 0 < agent["magnitude"] < 1e30:
        raise ConfigError(f"config.magnitude: must be a positive number, got "
                          f"{agent['magnitude']!r}")
    if agent["output"] is not None and not isinstance(agent["output"], str):
        raise ConfigError(f"config.output: must be a path, got {agent['output']!r}")
    rest = {key: value for key, value in data.items() if key not in AGENT_KEYS}
    config = AllreduceConfig.from_dict(rest)
    if agent["rank"] is None:
        agent["rank"] = config.worker
    rank = agent["rank"]
    if isinstance(rank, bool) or not isinstance(rank, int) or not 0 <= rank < config.n:
        raise ConfigError(f"config.rank: must be an integer 0..n-1 ({config.n - 1}), "
                          f"got {rank!r}")
    return agent, config


def run_experiment(agent: dict, config: AllreduceConfig) -> dict:
    """All-reduce the seeded gradient; the record to write."""
    x = gradient(agent["seed"], agent["rank"], agent["length"], agent["magnitude"], config.job)
    times, totals = [], {"bytes_sent": 0, "bytes_received": 0, "packets_sent": 0,
                         "packets_received": 0, "retransmissions": 0,
                         "fast_retransmissions": 0, "timer_retransmissions": 0,
                         "nack_retransmissions": 0, "send_refused": 0}
    per_call = []
    with Allreducer(config, algo=agent["algo"]) as worker:
        for _ in range(agent["calls"]):
            result = worker.allreduce(x)
            times.append(worker.stats.seconds)
            per_call.append(worker.stats.retransmissions)
            for key in totals:
                totals[key] += getattr(worker.stats, key)
        stats = worker.stats
    errors = verify_result(agent["algo"], agent["seed"], agent["rank"], agent["length"],
                           agent["magnitude"], config, x, result, stats, config.job)
    return {
        "ok": True, "algo": agent["algo"], "job": config.job, "worker": config.worker,
        "rank": agent["rank"],
        "n": config.n, "length": agent["length"], "calls": agent["calls"],
        "seconds": times, "mean_seconds": float(np.mean(times)),
        **totals,
        "retransmissions_per_call": per_call,
        "bytes_per_call": totals["bytes_sent"] // agent["calls"],
        **errors,
        "ignored": stats.ignored,
    }


def verify_result(algo: str, seed: int, rank: int, length: int, magnitude: float,
                  config: AllreduceConfig, x: np.ndarray, result: np.ndarray, stats,
                  seed_job: int | None) -> dict:
    """The error fields of one call's result against the float64 sum of every rank's seeded
    gradient (`seed_job`: the job the gradients were seeded with, or None), within the
    algorithm's bound."""
    ina = algo == "ina"
    own = (rank, x)
    blocks = reference_blocks(seed, config.n, length, magnitude, seed_job, own=own,
                              abs_sums=not ina)
    if ina and stats.error_bound is not None:   # per block and per format: the session's
        bound = stats.error_bound
        return check_result(result, blocks, lambda first, end, _: bound[first:end])
    if ina:
        global_max = max(float(np.max(np.abs(gradient(seed, r, length, magnitude, seed_job))))
                         for r in range(config.n)) if length else 0.0
        return check_result(result, blocks, lambda first, end, _: ina_error_bound(
            global_max, config.n, result[first:end]))
    return check_result(result, blocks, lambda first, end, abs_sum: ring_error_bound(
        abs_sum, result[first:end], config.n, config.accumulate))


def write_record(path: str | None, record: dict) -> None:
    if path:
        Path(path).write_text(json.dumps(record, indent=2) + "\n")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m hosts.agent", description=__doc__.split(
        "\n")[0])
    parser.add_argument("--config", required=True, help="the worker's JSON config file")
    parser.add_argument("--output", help="where to write the JSON record (overrides 'output')")
    args = parser.parse_args(argv)
    output = args.output
    try:
        try:
            data = json.loads(Path(args.config).read_text())
        except OSError as error:
            raise ConfigError(f"cannot read {args.config}: {error.strerror}") from None
        except json.JSONDecodeError as error:
            raise ConfigError(f"{args.config}:{error.lineno}:{error.colno}: not JSON: "
                              f"{error.msg}") from None
        if output is None and isinstance(data, dict) and isinstance(data.get("output"), str):
            output = data["output"]
        agent, config = parse_config(data)
        record = run_experiment(agent, config)
    except (HostError, OSError) as error:
        message = f"{type(error).__name__}: {error}"
        print(f"agent: error: {message}", file=sys.stderr)
        try:
            write_record(output, {"ok": False, "error": message})
        except OSError:
            pass
        return 1
    try:
        write_record(output, record)
    except OSError as error:
        print(f"agent: error: cannot write {output}: {error.strerror}", file=sys.stderr)
        return 1
    if not output:
        print(json.dumps(record))
    return 0


if __name__ == "__main__":
    sys.exit(main())
