"""From per-worker records to one summary per (algorithm, job): time, bandwidths, traffic, errors.

A worker record is a dict with the fields of `WORKER_FIELDS` (what `python -m hosts.agent` and
the simulator report for one worker). A job's all-reduce is done when its slowest worker has the
result, so its time is the largest worker time. Bandwidths follow nccl-tests:

    algbw = size / time                      (size: the bytes of one worker's vector)
    busbw = algbw · 2(n − 1) / n             (all-reduce; n workers)

reported in Gbit/s (10^9 bits per second). A job is correct only when every one of its workers
finished and its error is within the bound. Nothing here does I/O.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Iterable

# per-worker fields, in the order the per-worker CSV lists them
WORKER_FIELDS = ("algo", "job", "worker", "host", "time_s", "bytes_sent", "bytes_received",
                 "packets_sent", "packets_received", "retransmissions", "max_abs_err",
                 "mean_abs_err", "err_bound", "correct", "error")

# summary fields, in the order summary.csv lists them
SUMMARY_FIELDS = ("algo", "net", "target", "compiler", "topo", "aggregation", "job", "jobs",
                  "workers", "size_bytes",
                  "elems_k", "format", "scaling", "loss", "bw_mbps", "seed", "time_s", "algbw_gbps", "busbw_gbps",
                  "bytes_sent_per_host", "bytes_received_per_host", "retransmissions",
                  "max_abs_err", "mean_abs_err", "err_bound", "finished", "correct", "error",
                  "model_time_s", "measured_over_model")     # inaemu/model/for_run.py


@dataclass(frozen=True)
class RunSetting:
    """What was run: the same for every summary of one `inaemu run`."""

    net: str            # "mininet" or "sim"
    topo: str           # the topology's name, e.g. "star4"
    jobs: int
    size_bytes: int     # per worker
    elems_k: int
    loss: float         # percent, every link, both directions
    bw_mbps: float | None
    seed: int
    aggregation: str = "single"   # INA: "tree" (every tier) or "single" (one switch)
    target: str = "inaemu"        # the switches: "inaemu" or "bmv2" (simple_switch_grpc)
    compiler: str = "inaemu"      # who compiled ina.p4: "inaemu" or "p4c"
    lane_format: str = "int32"    # INA: int32 | int16 | int8 lanes (docs/formats.md)
    scaling: str = "job"          # INA: job | block quantization scale


def algbw_gbps(size_bytes: int, time_s: float | None) -> float | None:
    """nccl-tests' algorithm bandwidth, in Gbit/s."""
    if not time_s or time_s <= 0:
        return None
    return size_bytes * 8 / time_s / 1e9


def busbw_gbps(algbw: float | None, n: int) -> float | None:
    """nccl-tests' bus bandwidth of an all-reduce of n ranks: algbw · 2(n−1)/n."""
    if algbw is None:
        return None
    return algbw * 2 * (n - 1) / n


def _max(values: Iterable) -> float | None:
    present = [v for v in values if v is not None]
    return max(present) if present else None


def _mean(values: Iterable) -> float | None:
    present = [v for v in values if v is not None]
    return sum(present) / len(present) if present else None


def summarize(records: list[dict], setting: RunSetting, *,
              expected: dict[tuple[str, int], int] | None = None) -> list[dict]:
    """One summary per (algo, job), in the order they first appear in `records`.

    `expected` maps (algo, job) to its worker count, so a job whose workers left no record at
    all is still summarized (and not correct); by default the records' own count is used.
    """
    groups: dict[tuple[str, int], list[dict]] = {}
    for record in records:
        groups.setdefault((record["algo"], record["job"]), []).append(record)
    for key in expected or {}:
        groups.setdefault(key, [])
    summaries = []
    for (algo, job), members in groups.items():
        n = (expected or {}).get((algo, job), len(members))
        finished = [r for r in members if r.get("time_s") is not None and not r.get("error")]
        complete = len(finished) == n and n > 0
        time_s = _max(r["time_s"] for r in finished) if complete else None
        algbw = algbw_gbps(setting.size_bytes, time_s)
        errors = _grouped_errors(members)
        errors += [f"{r.get('host') or 'worker ' + str(r['worker'])}: result outside the "
                   f"error bound (max error {r.get('max_abs_err')}, bound {r.get('err_bound')})"
                   for r in finished if not r.get("correct")]
        if len(members) < n:
            errors.append(f"{n - len(members)} of {n} workers left no record")
        summaries.append({
            "algo": algo, "net": setting.net, "target": setting.target,
            "compiler": setting.compiler, "topo": setting.topo,
            "aggregation": setting.aggregation if algo == "ina" else None, "job": job,
            "jobs": setting.jobs, "workers": n, "size_bytes": setting.size_bytes,
            "elems_k": setting.elems_k,
            "format": setting.lane_format if algo == "ina" else None,
            "scaling": setting.scaling if algo == "ina" else None,
            "loss": setting.loss, "bw_mbps": setting.bw_mbps,
            "seed": setting.seed, "time_s": time_s, "algbw_gbps": algbw,
            "busbw_gbps": busbw_gbps(algbw, n),
            "bytes_sent_per_host": _mean(r.get("bytes_sent") for r in members),
            "bytes_received_per_host": _mean(r.get("bytes_received") for r in members),
            "retransmissions": sum(r.get("retransmissions") or 0 for r in members),
            "max_abs_err": _max(r.get("max_abs_err") for r in members),
            "mean_abs_err": _mean(r.get("mean_abs_err") for r in members),
            "err_bound": _max(r.get("err_bound") for r in members),
            "finished": len(finished),
            "correct": complete and all(bool(r.get("correct")) for r in members),
            "error": "; ".join(errors) or None,
            "model_time_s": None, "measured_over_model": None,   # inaemu/model/for_run.py
        })
    return summaries


def _grouped_errors(members: list[dict]) -> list[str]:
    """One entry per distinct error, naming every worker that had it ("h1, h2: timed out"):
    a run that gives up reports its unfinished workers once, not the list per worker."""
    by_error: dict[str, list[str]] = {}
    for r in members:
        if r.get("error"):
            name = r.get("host") or "worker " + str(r["worker"])
            by_error.setdefault(r["error"], []).append(name)
    return [f"{', '.join(names)}: {error}" for error, names in by_error.items()]


def all_correct(summaries: list[dict]) -> bool:
    return bool(summaries) and all(s["correct"] for s in summaries)


def _number(value, fmt: str) -> str:
    return "-" if value is None else format(value, fmt)


def _bytes(value) -> str:
    if value is None:
        return "-"
    for unit, size in (("GiB", 2**30), ("MiB", 2**20), ("KiB", 2**10)):
        if value >= size:
            return f"{value / size:.2f} {unit}"
    return f"{value:.0f} B"


TABLE_COLUMNS = ("algo", "job", "n", "size", "time s", "model s", "meas/model", "algbw Gb/s",
                 "busbw Gb/s", "sent/host", "recv/host", "retx", "max err", "mean err", "bound",
                 "correct")


def table(summaries: list[dict]) -> str:
    """The end-of-run table, one row per (algo, job), columns aligned."""
    rows = [TABLE_COLUMNS]
    for s in summaries:
        rows.append((s["algo"], str(s["job"]), str(s["workers"]), _bytes(s["size_bytes"]),
                     _number(s["time_s"], ".4f"), _number(s.get("model_time_s"), ".4f"),
                     _number(s.get("measured_over_model"), ".3f"),
                     _number(s["algbw_gbps"], ".4f"),
                     _number(s["busbw_gbps"], ".4f"), _bytes(s["bytes_sent_per_host"]),
                     _bytes(s["bytes_received_per_host"]), str(s["retransmissions"]),
                     _number(s["max_abs_err"], ".3g"), _number(s["mean_abs_err"], ".3g"),
                     _number(s["err_bound"], ".3g"), "yes" if s["correct"] else "NO"))
    widths = [max(len(row[i]) for row in rows) for i in range(len(TABLE_COLUMNS))]
    lines = ["  ".join(cell.rjust(w) if i > 1 else cell.ljust(w)
                       for i, (cell, w) in enumerate(zip(row, widths))).rstrip()
             for row in rows]
    for s in summaries:
        if s["error"]:
            lines.append(f"{s['algo']} job {s['job']}: {s['error']}")
            if "AllreduceTimeout" in s["error"] and s.get("loss") and s["algo"] != "ina":
                lines.append(f"  ({s['algo']} runs on TCP, whose retransmission timer doubles "
                             f"with each lost try: at {s['loss']:g} % loss per link a "
                             "connection stalls for tens of seconds now and then; a longer "
                             "--timeout lets it finish, docs/loss.md)")
    return "\n".join(lines)
