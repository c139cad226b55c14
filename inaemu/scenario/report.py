"""Writing a scenario's results to a directory, and a short summary for the terminal.

`write_results` writes summary.json (everything but the samples, which it names), samples.json,
one CSV per kind of record (jobs, iterations, events, flows) and the timeline picture.
`summary_lines` gives the lines the CLI prints after a run: a table of the jobs, the events with
each affected job's recovery, the background flows, and the verdict.
"""

from __future__ import annotations

import csv
import json
import math
from dataclasses import asdict, fields
from pathlib import Path

from inaemu.scenario.plot import plot_timeline
from inaemu.scenario.results import IterationRecord, JobRecord, ScenarioResult

SUMMARY_JSON = "summary.json"
SAMPLES_JSON = "samples.json"
JOBS_CSV = "jobs.csv"
ITERATIONS_CSV = "iterations.csv"
EVENTS_CSV = "events.csv"
FLOWS_CSV = "flows.csv"
TIMELINE_PNG = "timeline.png"

JOB_COLUMNS = ("name", "algo", "final_algo", "workers", "arrived_s", "ended_s", "jct_s",
               "iterations_done", "iterations", "mean_allreduce_s", "correct", "error",
               "retransmissions", "plans", "switch_chunks", "host_chunks", "host_share")
ITERATION_COLUMNS = tuple(f.name for f in fields(IterationRecord))
EVENT_COLUMNS = ("index", "at_s", "kind", "description", "detected_s", "actions", "job",
                 "recovery_s")
FLOW_COLUMNS = ("name", "kind", "sources", "destination", "started_s", "stopped_s",
                "bytes_delivered", "goodput_mbps")

LINE_WIDTH = 100
NAME_WIDTH = 24


def _jsonable(value):
    """json's fallback for what the records may hold beyond plain JSON types."""
    if isinstance(value, (set, frozenset)):
        return sorted(value, key=str)
    if isinstance(value, Path):
        return str(value)
    if hasattr(value, "item"):            # numpy scalars
        return value.item()
    if hasattr(value, "tolist"):          # numpy arrays
        return value.tolist()
    return str(value)


def _cell(value):
    return "" if value is None else value


def _write_csv(path: Path, columns, rows) -> None:
    with open(path, "w", newline="") as handle:
        writer = csv.writer(handle)
        writer.writerow(columns)
        for row in rows:
            writer.writerow([_cell(value) for value in row])


def _allreduce_times(result: ScenarioResult) -> dict[str, list[float]]:
    """Job -> the all-reduce times (seconds) of its finished iterations."""
    times: dict[str, list[float]] = {}
    for it in result.iterations:
        if it.allreduce_s is not None:
            times.setdefault(it.job, []).append(it.allreduce_s)
    return times


def _mean(values: list[float]) -> float | None:
    return sum(values) / len(values) if values else None


def write_results(result: ScenarioResult, out_dir) -> dict[str, Path]:
    """Write every result file into `out_dir` (made if missing); file name -> path."""
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    paths = {name: out / name for name in (SUMMARY_JSON, SAMPLES_JSON, JOBS_CSV,
                                           ITERATIONS_CSV, EVENTS_CSV, FLOWS_CSV,
                                           TIMELINE_PNG)}

    summary = result.summary()
    summary["samples"] = SAMPLES_JSON
    with open(paths[SUMMARY_JSON], "w") as handle:
        json.dump(summary, handle, indent=2, default=_jsonable)
        handle.write("\n")
    with open(paths[SAMPLES_JSON], "w") as handle:
        json.dump(asdict(result.samples), handle, default=_jsonable)
        handle.write("\n")

    allreduce = _allreduce_times(result)
    _write_csv(paths[JOBS_CSV], JOB_COLUMNS, (
        (job.name, job.algo, job.final_algo, len(job.workers), job.arrived_s, job.ended_s,
         job.jct_s, job.iterations_done, job.iterations, _mean(allreduce.get(job.name, [])),
         job.correct, job.error, job.retransmissions, len(job.placements), job.switch_chunks,
         job.host_chunks, job.host_share)
        for job in result.jobs))
    _write_csv(paths[ITERATIONS_CSV], ITERATION_COLUMNS, (
        tuple(getattr(it, column) for column in ITERATION_COLUMNS)
        for it in result.iterations))

    def event_rows():
        for event in result.events:
            head = (event.index, event.at_s, event.kind, event.description, event.detected_s,
                    "; ".join(event.actions))
            if not event.recovery_s:
                yield head + (None, None)
            for job, recovery in event.recovery_s.items():
                yield head + (job, recovery)
    _write_csv(paths[EVENTS_CSV], EVENT_COLUMNS, event_rows())

    _write_csv(paths[FLOWS_CSV], FLOW_COLUMNS, (
        (flow.name, flow.kind, "; ".join(flow.sources), flow.destination, flow.started_s,
         flow.stopped_s, flow.bytes_delivered, flow.goodput_mbps)
        for flow in result.flows))

    plot_timeline(result, paths[TIMELINE_PNG])
    return paths


# ---------------------------------------------------------------------------- terminal summary

def _fit(text: str, width: int = LINE_WIDTH) -> str:
    return text if len(text) <= width else text[:width - 1] + "\u2026"


def _ms(seconds: float | None) -> str:
    if seconds is None or (isinstance(seconds, float) and math.isnan(seconds)):
        return "-"
    return f"{seconds * 1000:.3f}" if seconds < 0.01 else f"{seconds * 1000:.1f}"


def _seconds(value: float | None) -> str:
    return "-" if value is None else f"{value:.3f} s"


def _algo(job: JobRecord) -> str:
    if job.final_algo and job.final_algo != job.algo:
        return f"{job.algo}->{job.final_algo}"
    return job.algo


def _job_ok(job: JobRecord) -> bool:
    return job.correct and job.error is None


def _why_wrong(job: JobRecord) -> str:
    if job.error is not None:
        error = " ".join(str(job.error).split())
        return f"{job.name} (error: {error if len(error) <= 40 else error[:39] + chr(0x2026)})"
    return f"{job.name} (wrong sum)"


def _wrapped(head: str, items: list[str], indent: str = "      ") -> list[str]:
    """`head` followed by `items` joined by ", ", wrapped at LINE_WIDTH."""
    lines = []
    line = head
    for k, item in enumerate(items):
        piece = item + ("," if k < len(items) - 1 else "")
        if len(line) + 1 + len(piece) > LINE_WIDTH and line.strip():
            lines.append(line)
            line = indent + piece
        else:
            line = f"{line} {piece}" if line else piece
    lines.append(line)
    return [_fit(text) for text in lines]


def verdict(result: ScenarioResult, width: int = LINE_WIDTH - len("verdict: ")) -> str:
    """"correct", or "WRONG: " and what was wrong, naming the jobs (as many as fit in
    `width` characters, then how many more)."""
    if result.correct:
        return "correct"
    if not result.jobs:
        return "WRONG: no jobs"
    wrong = [_why_wrong(job) for job in result.jobs if not _job_ok(job)]
    text = "WRONG: " + ", ".join(wrong)
    if len(text) <= width:
        return text
    text = f"WRONG: {len(wrong)} jobs:"
    for k, reason in enumerate(wrong):
        more = f" and {len(wrong) - k} more"
        if len(text) + 2 + len(reason) + len(more) > width:
            return text + ("," if k else "") + more
        text += ("," if k else "") + " " + reason
    return text


def summary_lines(result: ScenarioResult) -> list[str]:
    """A short readable summary of `result` for the terminal, lines of at most 100 chars."""
    lines = [_fit(f"scenario {result.name} ({result.net}, seed {result.seed}): "
                  f"{result.duration_s:.3f} s of timeline, {result.wall_s:.1f} s wall, "
                  f"stop: {result.stop}")]

    allreduce = _allreduce_times(result)
    width = min(NAME_WIDTH, max([len("job")] + [len(job.name) for job in result.jobs]))
    algo_width = min(16, max([len("algo")] + [len(_algo(job)) for job in result.jobs]))
    hashed = any(job.host_share is not None for job in result.jobs)
    header = (f"  {'job':<{width}}  {'algo':<{algo_width}}  {'iterations':>10}  "
              f"{'mean AR ms':>10}  {'correct':<7}  {'retx':>6}")
    if hashed:                      # hashed sharing: JCT, and what the host aggregator took
        header += f"  {'JCT s':>8}  {'host %':>6}"
    lines.append(header)
    for job in result.jobs:
        name = job.name if len(job.name) <= width else job.name[:width - 1] + "\u2026"
        algo = _algo(job)[:algo_width]
        done = f"{job.iterations_done}/{job.iterations}"
        ok = "yes" if _job_ok(job) else ("ERROR" if job.error is not None else "NO")
        row = (f"  {name:<{width}}  {algo:<{algo_width}}  {done:>10}  "
               f"{_ms(_mean(allreduce.get(job.name, []))):>10}  {ok:<7}  "
               f"{job.retransmissions:>6}")
        if hashed:
            jct = "-" if job.jct_s is None else f"{job.jct_s:.3f}"
            share = "-" if job.host_share is None else f"{100 * job.host_share:.1f}"
            row += f"  {jct:>8}  {share:>6}"
        lines.append(_fit(row))
    if not result.jobs:
        lines.append("  (no jobs)")

    if result.events:
        lines.append("events:")
    for event in result.events:
        detected = ""
        if event.detected_s is not None:
            detected = f", detected after {_ms(event.detected_s - event.at_s)} ms"
        head = (f"  #{event.index} at {_seconds(event.at_s)} {event.kind}: "
                f"{' '.join(event.description.split())}{detected}")
        if not event.recovery_s:
            lines.append(_fit(head + "; no job affected"))
            continue
        lines.append(_fit(head))
        recoveries = [f"{job} {_ms(seconds)} ms" if seconds is not None else f"{job} never"
                      for job, seconds in event.recovery_s.items()]
        lines.extend(_wrapped("    recovery:", recoveries))

    if result.flows:
        lines.append("flows:")
    for flow in result.flows:
        sources = ", ".join(flow.sources)
        lines.append(_fit(f"  {flow.name} ({flow.kind}) {sources} -> {flow.destination}: "
                          f"{flow.goodput_mbps:.1f} Mbit/s goodput, "
                          f"{flow.bytes_delivered / 1e6:.2f} MB delivered"))

    lines.append(_fit("verdict: " + verdict(result)))
    return lines
