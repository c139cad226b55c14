"""The two pictures of a traced run (matplotlib, Agg backend: no display needed).

- `occupancy.png`: aggregator cells busy over time, one line per switch (a cell is busy from its
  first contribution of a round until it completes, or, on a child switch, until the parent's
  result arrives), with each worker's retransmissions marked below on the same time axis.
- `link_bytes.png`: bytes per switch port and direction, from the pcaps (from the log's packet
  lengths for a switch without captures).

The numbers behind them are pure functions (`busy_intervals`, `occupancy`, `retransmissions`,
`link_bytes`) so tests check them without drawing.
"""

from __future__ import annotations

from collections import defaultdict
from pathlib import Path

from inaemu.trace.events import PipelineRun, WireFrame
from inaemu.trace.lifecycle import COMPLETED, CONTRIBUTION, PARENT_RESULT, SlotLifecycle
from inaemu.trace.reader import RunTrace

OCCUPANCY_PNG = "occupancy.png"
LINK_BYTES_PNG = "link_bytes.png"


def busy_intervals(lifecycles: list[SlotLifecycle], end: float
                   ) -> dict[str, list[tuple[float, float]]]:
    """switch -> (start, end) of every cell use; a cell still busy at the end closes at `end`."""
    intervals: dict[str, list[tuple[float, float]]] = defaultdict(list)
    for life in lifecycles:
        starts: dict[str, float] = {}
        ends: dict[str, float] = {}
        for step in life.steps:
            if step.what in (CONTRIBUTION, COMPLETED) and step.switch not in starts:
                starts[step.switch] = step.time
            if step.what == PARENT_RESULT or (step.what == COMPLETED and "multicast" in step.detail):
                ends[step.switch] = step.time
        for switch, start in starts.items():
            intervals[switch].append((start, max(start, ends.get(switch, end))))
    return dict(intervals)


def occupancy(intervals: list[tuple[float, float]]) -> tuple[list[float], list[int]]:
    """A step function: times and the number of busy cells from each time on."""
    changes: list[tuple[float, int]] = []
    for start, stop in intervals:
        changes += [(start, 1), (stop, -1)]
    changes.sort(key=lambda change: (change[0], -change[1]))
    times, busy, level = [], [], 0
    for time, delta in changes:
        level += delta
        times.append(time)
        busy.append(level)
    return times, busy


def retransmissions(lifecycles: list[SlotLifecycle]) -> dict[int, list[float]]:
    """worker -> times at which a switch received a retransmission from it."""
    marks: dict[int, list[float]] = defaultdict(list)
    for life in lifecycles:
        for step in life.steps:
            if step.retx and step.kind in ("CONTRIB", "MAX_CONTRIB") and step.what != "loss":
                marks[step.worker].append(step.time)
    return dict(marks)


def link_bytes(trace: RunTrace) -> dict[tuple[str, str, str], int]:
    """(switch, port label, in|out) -> bytes, from pcaps, else from the log."""
    captured = {files.name for files in trace.switches if files.pcaps}
    totals: dict[tuple[str, str, str], int] = defaultdict(int)
    for event in trace.events:
        if isinstance(event, WireFrame):
            label = f"{event.port}" if event.port is not None else event.iface
            totals[(event.switch, label, event.direction)] += len(event.data)
        elif isinstance(event, PipelineRun) and event.switch not in captured:
            totals[(event.switch, str(event.port), "in")] += event.length
            for out in event.outputs:
                totals[(event.switch, str(out.port), "out")] += out.length
    return dict(totals)


def write_plots(trace: RunTrace, lifecycles: list[SlotLifecycle], out_dir: Path) -> list[Path]:
    """Both PNGs into `out_dir`; returns their paths."""
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    from matplotlib.ticker import MaxNLocator

    out_dir = Path(out_dir)
    out_dir.mkdir(parents=True, exist_ok=True)
    origin = trace.events[0].time if trace.events else 0.0
    end = trace.events[-1].time if trace.events else 0.0

    fig, (top, bottom) = plt.subplots(2, 1, sharex=True, figsize=(10, 6),
                                      gridspec_kw={"height_ratios": [3, 1]})
    for switch, intervals in sorted(busy_intervals(lifecycles, end).items()):
        times, busy = occupancy(intervals)
        top.step([t - origin for t in times], busy, where="post", label=switch)
    top.set_ylabel("cells busy")
    top.yaxis.set_major_locator(MaxNLocator(integer=True))
    top.set_title("Aggregator slot occupancy")
    if top.get_legend_handles_labels()[0]:
        top.legend(loc="upper right")
    marks = retransmissions(lifecycles)
    for worker, times in sorted(marks.items()):
        bottom.plot([t - origin for t in times], [worker] * len(times), "x", label=f"w{worker}")
    bottom.set_ylabel("retx by worker")
    bottom.set_xlabel("seconds since the first packet")
    if marks:
        bottom.set_yticks(sorted(marks))
    fig.tight_layout()
    occupancy_path = out_dir / OCCUPANCY_PNG
    fig.savefig(occupancy_path, dpi=100)
    plt.close(fig)

    totals = link_bytes(trace)
    links = sorted({(switch, port) for switch, port, _ in totals},
                   key=lambda sp: (sp[0], int(sp[1]) if sp[1].isdigit() else 1 << 30, sp[1]))
    fig, axis = plt.subplots(figsize=(max(6, 1.2 * len(links) + 2), 4))
    positions = range(len(links))
    width = 0.4
    for offset, direction, label in ((-width / 2, "in", "in (arrived at the switch)"),
                                     (width / 2, "out", "out (left the switch)")):
        axis.bar([p + offset for p in positions],
                 [totals.get((s, port, direction), 0) for s, port in links], width, label=label)
    axis.set_xticks(list(positions))
    axis.set_xticklabels([f"{s}:{port}" for s, port in links])
    axis.set_ylabel("bytes")
    axis.set_title("Bytes per switch port and direction")
    axis.legend()
    fig.tight_layout()
    bytes_path = out_dir / LINK_BYTES_PNG
    fig.savefig(bytes_path, dpi=100)
    plt.close(fig)
    return [occupancy_path, bytes_path]
