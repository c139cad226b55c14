"""The files and the table of `inaemu train`: train.csv (one row per iteration), eval.csv,
summary.json, train.png (loss against iterations and against time), and how close each
algorithm's loss curve stays to the ring's (the same seeds: only the all-reduce differs).
"""

from __future__ import annotations

import csv
import json
from pathlib import Path

from inaemu.train.results import EVAL_FIELDS, ROW_FIELDS, TrainResult

COLOURS = {"ina": "tab:blue", "ring": "tab:orange", "ps": "tab:green", "hring": "tab:red",
           "dbtree": "tab:purple", "rhd": "tab:brown", "torus": "tab:pink"}


def curve_gap(result: TrainResult, reference: TrainResult) -> dict | None:
    """How far `result`'s curves are from `reference`'s: the largest absolute difference of
    the per-iteration batch loss and of the evaluated training loss, and the final test
    accuracies' difference. None when either run has no curve."""
    if not result.ok or not reference.ok or len(result.rows) != len(reference.rows):
        return None
    batch = max(abs(a["loss"] - b["loss"]) for a, b in zip(result.rows, reference.rows))
    evals = [abs(a["train_loss"] - b["train_loss"])
             for a, b in zip(result.evals, reference.evals)]
    final = (result.evals[-1]["test_accuracy"] - reference.evals[-1]["test_accuracy"]
             if result.evals and reference.evals else None)
    return {"max_batch_loss_gap": batch, "max_train_loss_gap": max(evals) if evals else None,
            "test_accuracy_gap": final}


def summaries(results: list[TrainResult]) -> list[dict]:
    """One summary per algorithm, with its gap to the ring's curve when the ring ran."""
    ring = next((r for r in results if r.algo == "ring"), None)
    out = []
    for result in results:
        summary = result.summary()
        gap = curve_gap(result, ring) if ring is not None and result is not ring else None
        summary.update(gap or {"max_batch_loss_gap": None, "max_train_loss_gap": None,
                               "test_accuracy_gap": None})
        out.append(summary)
    return out


def _cell(value, fmt: str) -> str:
    return "-" if value is None else format(value, fmt)


TABLE_COLUMNS = ("algo", "net", "n", "iters", "iter ms", "compute ms", "comm ms", "comm %",
                 "sent/iter", "retx", "final loss", "train loss", "test acc", "loss gap vs ring")


def table(rows: list[dict]) -> str:
    """The end-of-run table: time per iteration and its parts, the outcome, the curve gap."""
    lines = [TABLE_COLUMNS]
    for s in rows:
        share = None if s["comm_share"] is None else 100 * s["comm_share"]
        sent = s["bytes_sent_per_iteration"]
        lines.append((s["algo"], s["net"], str(s["workers"]), str(s["iterations"]),
                      _cell(s["iteration_ms"], ".2f"), _cell(s["compute_ms"], ".2f"),
                      _cell(s["comm_ms"], ".2f"), _cell(share, ".1f"),
                      "-" if sent is None else f"{sent / 1024:.1f} KiB",
                      str(s["retransmissions"]), _cell(s["final_batch_loss"], ".4f"),
                      _cell(s["final_train_loss"], ".4f"), _cell(s["test_accuracy"], ".3f"),
                      _cell(s["max_batch_loss_gap"], ".2e")))
    widths = [max(len(line[i]) for line in lines) for i in range(len(TABLE_COLUMNS))]
    text = ["  ".join(cell.rjust(w) if i > 1 else cell.ljust(w)
                      for i, (cell, w) in enumerate(zip(line, widths))).rstrip()
            for line in lines]
    text += [f"{s['algo']}: {s['error']}" for s in rows if s["error"]]
    return "\n".join(text)


def _write_csv(path: Path, fields: tuple[str, ...], rows: list[dict]) -> None:
    with path.open("w", newline="") as f:
        writer = csv.DictWriter(f, fieldnames=fields, extrasaction="ignore")
        writer.writeheader()
        for row in rows:
            writer.writerow({k: "" if row.get(k) is None else row.get(k) for k in fields})


def write_files(out_dir: Path, results: list[TrainResult], rows: list[dict]) -> list[Path]:
    """train.csv, eval.csv, summary.json and train.png (when a run has a curve)."""
    files = [out_dir / "train.csv", out_dir / "eval.csv", out_dir / "summary.json"]
    _write_csv(files[0], ROW_FIELDS, [row for r in results for row in r.rows])
    _write_csv(files[1], EVAL_FIELDS, [point for r in results for point in r.evals])
    files[2].write_text(json.dumps(rows, indent=2) + "\n")
    if any(r.ok for r in results):
        files.append(plot(out_dir / "train.png", results))
    return files


def plot(path: Path, results: list[TrainResult]) -> Path:
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    fig, (by_iteration, by_time) = plt.subplots(1, 2, figsize=(11, 4.2))
    # the ring first, solid and wide, so a curve that coincides with it stays visible on top
    for result in sorted(results, key=lambda r: r.algo != "ring"):
        if not result.ok:
            continue
        colour = COLOURS.get(result.algo)
        label = f"{result.algo} ({result.net})"
        iterations = [row["iteration"] + 1 for row in result.rows]
        seconds = [row["time_s"] for row in result.rows]
        losses = [row["loss"] for row in result.rows]
        style, width = ("-", 2.4) if result.algo == "ring" else ("--", 1.2)
        by_iteration.plot(iterations, losses, style, color=colour, label=label, linewidth=width)
        by_time.plot(seconds, losses, style, color=colour, label=label, linewidth=width)
        points = [p for p in result.evals if p.get("time_s") is not None]
        by_iteration.plot([p["iteration"] for p in points], [p["train_loss"] for p in points],
                          "o", color=colour, markersize=3)
        by_time.plot([p["time_s"] for p in points], [p["train_loss"] for p in points], "o",
                     color=colour, markersize=3)
    net = results[0].net
    by_iteration.set(xlabel="iteration", ylabel="loss (line: minibatch mean; dots: train set)",
                     yscale="log", title=f"loss vs iterations ({results[0].workers} workers)")
    unit = "s (compute real, network virtual)" if net == "sim" else "wall s"
    by_time.set(xlabel=f"training time, {unit}", yscale="log", title="loss vs time")
    for axes in (by_iteration, by_time):
        axes.grid(True, alpha=0.3)
        axes.legend()
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)
    return path
