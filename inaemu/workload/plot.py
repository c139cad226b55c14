"""One run of a workload as a timeline: per rank, its compute and each bucket's all-reduce."""

from __future__ import annotations

from pathlib import Path

MAX_RANKS_SHOWN = 16


def plot_iteration(timelines: dict[int, list], path: str | Path, *, title: str = "") -> Path:
    """`timelines`: rank -> [(kind, name, start_s, end_s)] (GraphJobRun's). Ranks beyond 16 are
    summarised: the first 8 and the last 8 are drawn, so 1,024 ranks stay readable."""
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    ranks = sorted(timelines)
    shown = ranks if len(ranks) <= MAX_RANKS_SHOWN else ranks[:8] + ranks[-8:]
    end = max((e for r in shown for _, _, _, e in timelines[r]), default=0.0)
    scale, unit = (1e3, "ms") if end < 2 else (1.0, "s")
    fig, ax = plt.subplots(figsize=(11, 1.2 + 0.45 * len(shown)))
    colours = {"compute": "#4c72b0", "all_reduce": "#dd8452"}
    for row, rank in enumerate(shown):
        for kind, name, start, stop in timelines[rank]:
            height = 0.35 if kind == "all_reduce" else 0.7
            offset = 0.35 if kind == "all_reduce" else 0.0
            ax.broken_barh([(start * scale, (stop - start) * scale)],
                           (row - 0.35 + offset, height), color=colours.get(kind, "grey"),
                           edgecolor="white", linewidth=0.3)
    ax.set_yticks(range(len(shown)))
    ax.set_yticklabels([f"rank {r}" for r in shown])
    ax.invert_yaxis()
    ax.set_xlabel(f"time ({unit})")
    note = "" if len(shown) == len(ranks) else f" (ranks {shown[7] + 1}..{shown[8] - 1} not shown)"
    ax.set_title((title or "one run per rank") + note)
    from matplotlib.patches import Patch
    ax.legend(handles=[Patch(color=colours["compute"], label="compute"),
                       Patch(color=colours["all_reduce"], label="bucket all-reduce")],
              loc="upper right", fontsize=8)
    fig.tight_layout()
    path = Path(path)
    fig.savefig(path, dpi=110)
    plt.close(fig)
    return path
