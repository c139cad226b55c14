"""The timeline picture of a scenario run (matplotlib, Agg: no display needed).

Top panel: each job's progress (iterations done, fractional) against time, one line per job
(workers are never drawn one by one, so 1,024 workers cost nothing), with the timeline's events
as vertical lines and short labels. Bottom panel: link utilisation in percent, the busiest link
directions only (by mean), and a shaded band for the maximum over all links when there are more.
Empty samples give a picture that says so instead of an error.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np

from inaemu.scenario.results import EventRecord, ScenarioResult

TOP_LINKS = 8            # link directions drawn as lines; the rest only count in the max band
MAX_EVENT_LABELS = 40    # events beyond this are drawn as lines without a label
LEGEND_INSIDE = 10       # up to this many jobs: legend inside the panel
LEGEND_OUTSIDE = 20      # up to this many: legend to the right of it; more: no legend, a note
LABEL_CHARS = 24         # event labels are cut to this many characters
LABEL_LEVELS = 3         # heights at which labels of close events are staggered
FIG_WIDTH_IN = 12.0
FONT_PT = 7


def time_scale(duration_s: float) -> tuple[float, str]:
    """(factor from seconds, unit name) for the x axis: ms below 2 s, else s."""
    return (1000.0, "ms") if duration_s < 2.0 else (1.0, "s")


def _series(times: list[float], values: list[float]) -> tuple[np.ndarray, np.ndarray]:
    """Times and values as arrays of the same length (a short list cuts the other)."""
    n = min(len(times), len(values))
    return (np.asarray(times[:n], dtype=float), np.asarray(values[:n], dtype=float))


def _span_s(result: ScenarioResult) -> float:
    """The time the x axis covers: the duration, or longer if samples or events go past it."""
    ends = [result.duration_s or 0.0]
    samples = result.samples
    if samples.times_s:
        ends.append(max(samples.times_s))
    if samples.link_times_s:
        ends.append(max(samples.link_times_s))
    ends.extend(event.at_s for event in result.events)
    return max(ends)


def busiest_links(result: ScenarioResult, top: int = TOP_LINKS
                  ) -> tuple[list[tuple[str, np.ndarray, np.ndarray]], np.ndarray | None, int]:
    """The `top` link directions with the highest mean utilisation, busiest first, as
    (name, times, values); the maximum over all links at each link sample time (None when there
    are no more links than `top`); the number of links with samples."""
    samples = result.samples
    means: list[tuple[float, str]] = []
    arrays: dict[str, tuple[np.ndarray, np.ndarray]] = {}
    all_times = np.asarray(samples.link_times_s, dtype=float)
    peak = np.zeros(len(all_times)) if len(all_times) else None
    for name, values in samples.link_utilisation.items():
        n = min(len(all_times), len(values))
        if not n:
            continue
        series = np.asarray(values[:n], dtype=float)
        arrays[name] = (all_times[:n], series)
        finite = series[np.isfinite(series)]
        means.append((float(finite.mean()) if len(finite) else 0.0, name))
        np.fmax(peak[:n], series, out=peak[:n])
    means.sort(key=lambda mean_name: (-mean_name[0], mean_name[1]))
    chosen = [(name, *arrays[name]) for _, name in means[:top]]
    return chosen, (peak if len(arrays) > top else None), len(arrays)


def labelled_events(events: list[EventRecord], limit: int = MAX_EVENT_LABELS
                    ) -> set[int]:
    """Positions (in `events`) of the events that get a label: all up to `limit`, else
    `limit` of them spread evenly over the list in time order."""
    order = sorted(range(len(events)), key=lambda i: events[i].at_s)
    if len(order) <= limit:
        return set(order)
    step = (len(order) - 1) / (limit - 1)
    return {order[round(k * step)] for k in range(limit)}


def _short(text: str, chars: int = LABEL_CHARS) -> str:
    text = " ".join(text.split())
    return text if len(text) <= chars else text[:chars - 1] + "\u2026"


def _place_labels(xs: list[float], gap: float, shift: float = 2.0
                  ) -> list[tuple[float, int] | None]:
    """For label anchors at `xs` (sorted, axis fraction), (x, level) each such that labels at
    the same level are at least `gap` apart: a label takes the lowest level free at its own x,
    else it moves right on the level that frees first, by at most `shift` gaps; a label that
    would have to move further is left out (None: its event keeps its line only)."""
    last = [-np.inf] * LABEL_LEVELS
    placed: list[tuple[float, int] | None] = []
    for x in xs:
        level = next((lv for lv in range(LABEL_LEVELS) if x - last[lv] >= gap), None)
        if level is None:
            level = min(range(LABEL_LEVELS), key=lambda lv: last[lv])
            if last[level] + gap - x > shift * gap:
                placed.append(None)
                continue
            x = last[level] + gap
        last[level] = x
        placed.append((x, level))
    return placed


def _job_colours(count: int):
    from matplotlib import colormaps
    if count <= 10:
        cmap = colormaps["tab10"]
        return [cmap(i) for i in range(count)]
    if count <= 20:
        cmap = colormaps["tab20"]
        return [cmap(i) for i in range(count)]
    cmap = colormaps["viridis"]
    return [cmap(i / max(1, count - 1)) for i in range(count)]


def _no_samples(axis, what: str) -> None:
    axis.text(0.5, 0.5, f"no samples ({what})", transform=axis.transAxes,
              ha="center", va="center", fontsize=11, color="0.4")


def plot_timeline(result: ScenarioResult, path) -> Path:
    """Draw the timeline of `result` into the PNG `path`; returns the path."""
    from matplotlib.backends.backend_agg import FigureCanvasAgg
    from matplotlib.figure import Figure
    from matplotlib.transforms import blended_transform_factory

    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    span = _span_s(result)
    scale, unit = time_scale(span)
    samples = result.samples

    fig = Figure(figsize=(FIG_WIDTH_IN, 7.5), layout="constrained")
    FigureCanvasAgg(fig)
    top, bottom = fig.subplots(2, 1, sharex=True, gridspec_kw={"height_ratios": [3, 2]})
    verdict = "correct" if result.correct else "WRONG"
    fig.suptitle(f"{result.name}  ({result.net}, seed {result.seed}, {len(result.jobs)} jobs, "
                 f"{verdict}, stop: {result.stop})", fontsize=10)

    # Top: progress per job, in the order of result.jobs, then any other series in the samples.
    names = [job.name for job in result.jobs if job.name in samples.progress]
    known = set(names)
    names += [name for name in samples.progress if name not in known]
    drawn = []
    for name, colour in zip(names, _job_colours(len(names))):
        times, series = _series(samples.times_s, samples.progress[name])
        if len(series):
            top.plot(times * scale, series, color=colour, linewidth=1.2, label=name)
            drawn.append(name)
    top.set_ylabel("iterations done")
    top.set_ylim(bottom=0)
    notes = []
    if not drawn:
        _no_samples(top, "job progress")
    elif len(drawn) <= LEGEND_INSIDE:
        top.legend(loc="upper left", fontsize=FONT_PT + 1, framealpha=0.8)
    elif len(drawn) <= LEGEND_OUTSIDE:
        top.legend(loc="upper left", bbox_to_anchor=(1.01, 1.0), fontsize=FONT_PT,
                   borderaxespad=0.0)
    else:
        notes.append(f"{len(drawn)} jobs, one line each, legend omitted")

    # Events: a line on both panels, a label on the top one for at most MAX_EVENT_LABELS.
    if span > 0:
        top.set_xlim(0, span * scale)
    events = result.events
    if events:
        xs = [event.at_s * scale for event in events]
        for axis in (top, bottom):
            axis.vlines(xs, 0, 1, transform=axis.get_xaxis_transform(), colors="0.35",
                        linestyles="--", linewidth=0.7, alpha=0.7, zorder=1)
    chosen = sorted(labelled_events(events), key=lambda i: events[i].at_s)
    if chosen:
        left, right = top.get_xlim()
        width = (right - left) or 1.0
        axis_width_in = FIG_WIDTH_IN * top.get_position().width
        gap = (FONT_PT * 1.4 / 72.0) / axis_width_in   # a rotated line of text, axis fraction
        xs = [(events[i].at_s * scale - left) / width for i in chosen]
        where = blended_transform_factory(top.transAxes, top.transAxes)
        labelled = 0
        for i, spot in zip(chosen, _place_labels(xs, gap)):
            if spot is None:
                continue
            x, level = spot
            top.text(x + gap * 0.15, 0.98 - level / LABEL_LEVELS,
                     _short(events[i].description), transform=where, rotation=90,
                     ha="left", va="top", fontsize=FONT_PT, color="0.2", clip_on=False)
            labelled += 1
        if labelled < len(events):
            notes.append(f"{len(events)} events, {labelled} labelled")
    if notes:
        top.set_title("; ".join(notes), fontsize=FONT_PT + 2, loc="left")

    # Bottom: link utilisation in percent.
    links, peak, link_count = busiest_links(result)
    highest = 0.0
    if peak is not None and len(peak):
        times = np.asarray(samples.link_times_s[:len(peak)], dtype=float) * scale
        bottom.fill_between(times, 0, peak * 100.0, color="0.6", alpha=0.3, linewidth=0,
                            label=f"max over all {link_count} links")
        highest = float(np.nanmax(peak)) * 100.0
    for name, times, series in links:
        bottom.plot(times * scale, series * 100.0, linewidth=1.0, label=name)
        if np.isfinite(series).any():
            highest = max(highest, float(np.nanmax(series)) * 100.0)
    if links:
        bottom.legend(loc="upper right", fontsize=FONT_PT, ncol=3, framealpha=0.7)
        if link_count > len(links):
            bottom.set_title(f"busiest {len(links)} of {link_count} link directions (by mean)",
                             fontsize=FONT_PT + 2)
    else:
        _no_samples(bottom, "link utilisation")
    bottom.set_ylim(0, max(100.0, highest * 1.05))
    bottom.set_ylabel("link utilisation (%)")
    bottom.set_xlabel(f"time ({unit})")

    fig.savefig(path, format="png", dpi=100)
    return path
