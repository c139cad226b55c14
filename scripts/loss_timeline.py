"""Where an INA all-reduce's time goes under loss: per-chunk timelines from the simulator.

    .venv/bin/python scripts/loss_timeline.py [--workers 4] [--size-mib 1] [--losses 0,1,5,10]
        [--bw 20] [--elems 256] [--window 16] [--seed 7] [--out DIR]

Runs a star in the simulator three times per loss rate: with the hosts' current loss recovery
(early detection sends a header-only QUERY, the values go again on a NACK), with early
detection resending the values (`query=False`, the rules before QUERY/NACK), and with timers
only (InaOptions(fast_retransmit=False, window_rule="every_loss", rto_min=rto): the rules
before issue 11, except that timers restart on every result), with every session's timeline
(`InaSession.timeline`: each send, early, NACK or timer retransmission and result). For each
worker, every moment of the data phase is one of:

* link-limited: its uplink is busy sending (recomputed from the sends, the frame size and bw);
* waiting for a timer: the uplink is idle and a chunk in flight is lost and will be resent by
  its timer;
* waiting for loss detection: idle, and a lost chunk in flight will be resent early;
* window-limited: idle, nothing in flight is lost: the window is full of chunks whose results
  are on their way (or the switch waits for another worker).

Writes DIR/loss-timeline.csv (shares per run) and DIR/loss-timeline.png (stacked shares, and
the chunk timeline of worker 0 at the highest loss for both rule sets). Numbers in docs/loss.md.
"""

from __future__ import annotations

import argparse
import csv
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from inaemu.sim import InaOptions, SimJob, simulate  # noqa: E402
from topologies.builders import star  # noqa: E402

CATEGORIES = ("link-limited", "waiting for a timer", "waiting for loss detection",
              "window-limited")
FRAME_OVERHEAD = 14 + 20 + 8 + 16      # Ethernet, IPv4, UDP and the aggregation header
RULES = ("timers only", "early, values", "early, queries")


def rules(name: str, rto: float) -> dict:
    if name == "timers only":
        return dict(fast_retransmit=False, window_rule="every_loss", rto_min=rto)
    if name == "early, values":
        return dict(query=False)
    return {}


def run(args, loss: float, name: str):
    topology = star(args.workers)
    hosts = tuple(h.name for h in topology.hosts)
    options = InaOptions(pool_size=64, window=args.window, rto=args.rto, rto_max=4 * args.rto,
                         max_retx=100, timeline=True, **rules(name, args.rto))
    return simulate(topology, [SimJob(1, hosts)], algo="ina",
                    size_bytes=int(args.size_mib * (1 << 20)), elems_k=args.elems,
                    seed=args.seed, loss=loss, bw=args.bw, ina=options, time_limit=600)


def breakdown(timeline: list, end: float, tx: float,
              fast_tx: float | None = None) -> dict[str, float]:
    """Seconds of each category for one worker (module docstring). `tx`: a frame with values
    on the uplink; `fast_tx`: an early retransmission (a QUERY's frame; default `tx`)."""
    fast_tx = tx if fast_tx is None else fast_tx
    data = [e for e in timeline if e[2] >= 0]
    if not data:
        return dict.fromkeys(CATEGORIES, 0.0)
    start = data[0][0]
    # busy periods of the uplink, FIFO
    busy, free_at = [], start
    for t, kind, _ in data:
        if kind in ("send", "fast", "timer", "nack"):
            begin = max(t, free_at)
            free_at = begin + (fast_tx if kind == "fast" else tx)
            if busy and begin <= busy[-1][1] + 1e-12:
                busy[-1][1] = free_at
            else:
                busy.append([begin, free_at])
    # per transmission: how it ended (answered, or resent early / by timer)
    fate: dict[tuple[int, int], str] = {}
    tries: dict[int, int] = {}
    intervals = []            # (sent, until, chunk, try)
    open_at: dict[int, tuple[float, int]] = {}
    for t, kind, chunk in data:
        if kind == "send":
            tries[chunk] = 1
            open_at[chunk] = (t, 1)
        elif kind in ("fast", "timer", "nack"):
            sent, n = open_at[chunk]
            fate[(chunk, n)] = "fast" if kind == "nack" else kind
            intervals.append((sent, t, chunk, n))
            tries[chunk] = n + 1
            open_at[chunk] = (t, n + 1)
        elif kind == "result" and chunk in open_at:
            sent, n = open_at.pop(chunk)
            fate[(chunk, n)] = "answered"
            intervals.append((sent, t, chunk, n))
    shares = dict.fromkeys(CATEGORIES, 0.0)
    shares["link-limited"] = sum(b - a for a, b in busy)
    idle, cursor = [], start
    for a, b in busy:
        if a > cursor:
            idle.append((cursor, a))
        cursor = max(cursor, b)
    if end > cursor:
        idle.append((cursor, end))
    # sweep: between consecutive boundaries the set of open transmissions is constant
    edges = []
    for sent, until, chunk, n in intervals:
        kind = fate.get((chunk, n))
        edges.append((sent, 1, kind))
        edges.append((until, -1, kind))
    edges.sort(key=lambda e: (e[0], e[1]))
    open_kinds = {"timer": 0, "fast": 0, "answered": 0, None: 0}
    cuts = sorted({t for t, _, _ in edges} | {t for a, b in idle for t in (a, b)})
    e = 0
    idle_at = 0
    for left, right in zip(cuts, cuts[1:]):
        while e < len(edges) and edges[e][0] <= left:
            open_kinds[edges[e][2]] += edges[e][1]
            e += 1
        while idle_at < len(idle) and idle[idle_at][1] <= left:
            idle_at += 1
        if idle_at >= len(idle) or idle[idle_at][0] > left:
            continue                       # the uplink is busy here
        if open_kinds["timer"] > 0:
            shares["waiting for a timer"] += right - left
        elif open_kinds["fast"] > 0:
            shares["waiting for loss detection"] += right - left
        else:
            shares["window-limited"] += right - left
    return shares


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--workers", type=int, default=4)
    parser.add_argument("--size-mib", type=float, default=1.0)
    parser.add_argument("--losses", default="0,1,5,10")
    parser.add_argument("--bw", type=float, default=20.0)
    parser.add_argument("--elems", type=int, default=256)
    parser.add_argument("--window", type=int, default=16)
    parser.add_argument("--rto", type=float, default=0.1)
    parser.add_argument("--seed", type=int, default=7)
    parser.add_argument("--out", type=Path, default=ROOT / "out" / "loss-timeline")
    args = parser.parse_args(argv)
    args.out.mkdir(parents=True, exist_ok=True)
    tx = (FRAME_OVERHEAD + 4 * args.elems) * 8 / (args.bw * 1e6)
    query_tx = FRAME_OVERHEAD * 8 / (args.bw * 1e6)
    rows, timelines = [], {}
    for loss in [float(x) for x in args.losses.split(",")]:
        for name in RULES:
            result = run(args, loss, name)
            end = max(r.time_s or result.virtual_s for r in result.records)
            total = dict.fromkeys(CATEGORIES, 0.0)
            fast_tx = query_tx if name == "early, queries" else tx
            for record in result.records:
                for key, value in breakdown(record.timeline, record.time_s or end, tx,
                                            fast_tx).items():
                    total[key] += value / len(result.records)
            spent = sum(total.values()) or 1.0
            row = {"rules": name, "loss_pct": loss, "time_s": end,
                   "retransmissions": sum(r.retransmissions for r in result.records),
                   "bytes_sent_per_host": round(sum(r.bytes_sent for r in result.records)
                                                / len(result.records)),
                   "correct": result.correct,
                   **{key: round(value / spent, 4) for key, value in total.items()}}
            rows.append(row)
            timelines[(name, loss)] = result.records[0].timeline
            print(f"loss_timeline: {name}, loss {loss:g}%: {end:.3f} s, "
                  + ", ".join(f"{k} {row[k]:.0%}" for k in CATEGORIES), flush=True)
    with (args.out / "loss-timeline.csv").open("w", newline="") as handle:
        writer = csv.DictWriter(handle, fieldnames=list(rows[0]))
        writer.writeheader()
        writer.writerows(rows)
    plot(rows, timelines, args.out / "loss-timeline.png")
    print(f"loss_timeline: wrote {args.out / 'loss-timeline.csv'} and .png")
    return 0 if all(r["correct"] for r in rows) else 1


def plot(rows: list[dict], timelines: dict, path: Path) -> None:
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    fig, (bars, lines) = plt.subplots(1, 2, figsize=(12, 4.5))
    short = {"timers only": "timers", "early, values": "values", "early, queries": "queries"}
    labels = [f"{r['loss_pct']:g}%\n{short[r['rules']]}" for r in rows]
    bottom = [0.0] * len(rows)
    colours = ("tab:green", "tab:red", "tab:orange", "tab:gray")
    for key, colour in zip(CATEGORIES, colours):
        heights = [r[key] * r["time_s"] for r in rows]
        bars.bar(range(len(rows)), heights, bottom=bottom, color=colour, label=key)
        bottom = [b + h for b, h in zip(bottom, heights)]
    bars.set_xticks(range(len(rows)), labels, fontsize=7)
    bars.set_ylabel("seconds (mean over workers)")
    bars.set_yscale("log")
    bars.set_title("where the time goes", fontsize=10)
    bars.legend(fontsize=7)
    worst = max(r["loss_pct"] for r in rows)
    for name, colour in zip(RULES, ("tab:red", "tab:orange", "tab:blue")):
        timeline = timelines.get((name, worst)) or []
        first = {c: t for t, k, c in timeline if k == "send" and c >= 0}
        done = {c: t for t, k, c in timeline if k == "result"}
        chunks = sorted(set(first) & set(done))
        for c in chunks:
            lines.plot([first[c], done[c]], [c, c], color=colour, lw=0.4, alpha=0.6)
        resent = [(t, c) for t, k, c in timeline
                  if k in ("fast", "timer", "nack") and c >= 0]
        lines.scatter([t for t, _ in resent], [c for _, c in resent], s=2, color=colour,
                      label=f"{name}: chunk lifetimes, retransmissions")
    lines.set_xlabel("virtual seconds")
    lines.set_ylabel("chunk")
    lines.set_title(f"worker 0's chunks at {worst:g}% loss", fontsize=10)
    lines.legend(fontsize=7)
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)


if __name__ == "__main__":
    sys.exit(main())
