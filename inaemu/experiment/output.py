"""The files of a run directory: summary.json, summary.csv, workers.csv, workers.json, plot.png.

Written once at the end of a run (also of a failed one: whatever records exist are the evidence).
Floats are written as Python repr in JSON and CSV so that nothing is rounded away; an absent value
is JSON null and an empty CSV cell.
"""

from __future__ import annotations

import csv
import json
from pathlib import Path

from inaemu.experiment.summary import SUMMARY_FIELDS, WORKER_FIELDS

SUMMARY_JSON = "summary.json"
SUMMARY_CSV = "summary.csv"
WORKERS_CSV = "workers.csv"
WORKERS_JSON = "workers.json"
PLOT_PNG = "allreduce.png"
LINE_STYLES = ("-", "--", ":", "-.")      # one per job in the per-worker panel
ALGO_COLOURS = {"ina": "tab:blue", "ring": "tab:orange", "ps": "tab:green", "hring": "tab:red",
                "dbtree": "tab:purple", "rhd": "tab:brown", "torus": "tab:pink"}


def counted(n: int, one: str, many: str) -> str:
    """'1 switch', '5 switches': a count with its noun for progress lines."""
    return f"{n} {one if n == 1 else many}"


def _write_csv(path: Path, fields: tuple[str, ...], rows: list[dict]) -> None:
    with path.open("w", newline="") as f:
        writer = csv.DictWriter(f, fieldnames=fields, extrasaction="ignore")
        writer.writeheader()
        for row in rows:
            writer.writerow({k: "" if row.get(k) is None else row.get(k) for k in fields})


def write_results(out_dir: Path, summaries: list[dict], records: list[dict]) -> list[Path]:
    """Every result file; returns their paths (the plot only when there is something to plot)."""
    out_dir.mkdir(parents=True, exist_ok=True)
    written = []
    path = out_dir / SUMMARY_JSON
    path.write_text(json.dumps(summaries, indent=2) + "\n")
    written.append(path)
    path = out_dir / SUMMARY_CSV
    _write_csv(path, SUMMARY_FIELDS, summaries)
    written.append(path)
    path = out_dir / WORKERS_CSV
    _write_csv(path, WORKER_FIELDS, records)
    written.append(path)
    path = out_dir / WORKERS_JSON
    path.write_text(json.dumps(records, indent=2) + "\n")
    written.append(path)
    if summaries:
        path = out_dir / PLOT_PNG
        plot(summaries, records, path)
        written.append(path)
    return written


MAX_WORKER_TICKS = 16


def worker_ticks(workers) -> list[int] | None:
    """A tick per worker while their labels fit the panel (~16 at the figure's size: 64 ran
    into one smear); None beyond MAX_WORKER_TICKS (matplotlib picks a few integers). 16,000
    tick labels took ~90 s of a 16,000-worker run to lay out and draw."""
    ids = sorted(workers)
    return ids if len(ids) <= MAX_WORKER_TICKS else None


def plot(summaries: list[dict], records: list[dict], path: Path) -> None:
    """Three panels: all-reduce time and bus bandwidth per (algo, job), each worker's time."""
    import matplotlib
    matplotlib.use("Agg")
    from matplotlib import pyplot

    labels = [f"{s['algo']}" + (f" j{s['job']}" if s["jobs"] > 1 else "") for s in summaries]
    colours = [ALGO_COLOURS.get(s["algo"], "tab:gray") for s in summaries]
    first = summaries[0]
    figure, (times, buses, workers) = pyplot.subplots(1, 3, figsize=(13, 4))
    figure.suptitle(f"all-reduce of {first['size_bytes']} B per worker, {first['topo']} on "
                    f"{first['net']}, loss {first['loss']}%")
    times.bar(labels, [s["time_s"] or 0 for s in summaries], color=colours)
    if any(s.get("model_time_s") for s in summaries):     # the cost model (docs/model.md)
        times.plot(labels, [s.get("model_time_s") or float("nan") for s in summaries], "kx",
                   label="model")
        times.legend()
    times.set_ylabel("time (s)")
    times.set_title("time (slowest worker)")
    buses.bar(labels, [s["busbw_gbps"] or 0 for s in summaries], color=colours)
    buses.set_ylabel("busbw (Gbit/s)")
    buses.set_title("bus bandwidth")
    for s, label, colour in zip(summaries, labels, colours):
        mine = [r for r in records if r["algo"] == s["algo"] and r["job"] == s["job"]]
        mine.sort(key=lambda r: r["worker"])
        workers.plot([r["worker"] for r in mine], [r.get("time_s") or 0 for r in mine],
                     marker="o", label=label, color=colour,
                     linestyle=LINE_STYLES[(s["job"] - 1) % len(LINE_STYLES)])
    ticks = worker_ticks({r["worker"] for r in records})
    if ticks is not None:
        workers.set_xticks(ticks)
    else:
        from matplotlib.ticker import MaxNLocator
        workers.xaxis.set_major_locator(MaxNLocator(integer=True))
    workers.set_xlabel("worker")
    workers.set_ylabel("time (s)")
    workers.set_title("per worker")
    workers.legend()
    figure.tight_layout()
    figure.savefig(path, dpi=80)
    pyplot.close(figure)
