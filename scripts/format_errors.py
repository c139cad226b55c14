"""The error table of issue 15: lane format x scaling x gradient kind, through the simulator.

    .venv/bin/python scripts/format_errors.py [--workers 4] [--elems 256] [--pool 64]
                                              [--out out/format_errors]

Every row is one `inaemu.sim` all-reduce on a star (the real p4src/ina.p4 in the switches,
lossless links) of the same per-worker vectors, so rows differ only in the encoding:

* vector kinds: `normal` (N(0, 1e-3)); `heavy` (the same with 0.1 % of the entries 1000x
  larger, a gradient with outliers); `mlp` (real gradients of inaemu/train's MLP on the
  digits, hidden 256, each rank's minibatch after 100 steps of exact-average SGD; needs torch);
* formats int32/int16/int8, scalings `job` (one scale per call) and `block` (per chunk), and
  `block/d=2` (int16/int8: quantization headroom for 2 workers' sum instead of n, the
  switch flags the chunks that overflow and the workers redo them at the safe scale).

Columns: max and mean |y - Σx| against the float64 sum, the same relative to max|Σx|, the
largest per-element bound, bytes each worker put on its link (Ethernet frames, MAX round
included), chunks redone, and the virtual time of the all-reduce. Writes table.md,
errors.csv and errors.json in --out.
"""

from __future__ import annotations

import argparse
import csv
import json
import sys
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from inaemu.sim.driver import InaOptions, SimJob, prepare_setup, simulate  # noqa: E402
from topologies.builders import star  # noqa: E402

ENCODINGS = [("int32", "job", None), ("int32", "block", None),
             ("int16", "job", None), ("int16", "block", None), ("int16", "block", 2),
             ("int8", "job", None), ("int8", "block", None), ("int8", "block", 2)]


def synthetic(kind: str, n: int, length: int, seed: int) -> list[np.ndarray]:
    vectors = []
    for rank in range(n):
        rng = np.random.default_rng([seed, rank])
        x = rng.standard_normal(length) * 1e-3
        if kind == "heavy":
            picks = rng.choice(length, max(1, length // 1000), replace=False)
            x[picks] *= 1000.0
        vectors.append(x.astype(np.float32))
    return vectors


def mlp_gradients(n: int, seed: int, steps: int = 100) -> list[np.ndarray]:
    """Each rank's gradient of the digits MLP after `steps` of SGD on the exact average."""
    import torch

    from inaemu.train.task import (TaskConfig, build_model, load_digits_split, local_loss,
                                   make_optimizer, minibatch, shard)
    task = TaskConfig(seed=seed, hidden=256)
    data = load_digits_split(seed)
    model = build_model(task)
    optimizer = make_optimizer(model, task)
    shards = [shard(data, r, n) for r in range(n)]

    def gradients(iteration: int) -> list[np.ndarray]:
        out = []
        for rank, (sx, sy) in enumerate(shards):
            model.zero_grad()
            local_loss(model, *minibatch(sx, sy, task, rank, iteration)).backward()
            out.append(torch.cat([p.grad.reshape(-1) for p in model.parameters()]).numpy()
                       .astype(np.float32).copy())
        return out

    for iteration in range(steps):
        mean = np.mean(gradients(iteration), axis=0)
        offset = 0
        for p in model.parameters():
            p.grad = torch.from_numpy(mean[offset:offset + p.numel()].reshape(p.shape).copy())
            offset += p.numel()
        optimizer.step()
    return gradients(steps)


def one_row(vectors, *, kind, fmt, scaling, divisor, k, pool, setup, topology, jobs) -> dict:
    n, length = len(vectors), vectors[0].size
    result = simulate(topology, jobs, algo="ina", size_bytes=4 * length, elems_k=k,
                      time_limit=600, setup=setup, inputs={1: vectors},
                      ina=InaOptions(pool_size=pool, fmt=fmt, scaling=scaling, divisor=divisor))
    exact = np.sum([v.astype(np.float64) for v in vectors], axis=0)
    record = result.records[0]
    error = np.abs(record.result.astype(np.float64) - exact)
    top = float(np.max(np.abs(exact)))
    counters = record.counters or {}
    return {
        "kind": kind, "format": fmt,
        "scaling": scaling if divisor is None else f"{scaling}/d={divisor}",
        "n": n, "elements": length, "correct": result.correct,
        "max_abs_err": float(error.max()), "mean_abs_err": float(error.mean()),
        "max_rel_err": float(error.max()) / top, "mean_rel_err": float(error.mean()) / top,
        "bound": record.err_bound,
        "bytes_per_worker": int(np.mean([r.bytes_sent for r in result.records])),
        "redone_chunks": int(counters.get("overflow_redos", 0)),
        "time_s": max(r.time_s for r in result.records),
    }


def markdown(rows: list[dict]) -> str:
    head = ("| vector | format | scaling | max err | mean err | max err / max|Σ| | "
            "mean err / max|Σ| | bound | bytes/worker | redone | time ms |")
    lines = [head, "|" + "---|" * 11]
    for r in rows:
        lines.append(f"| {r['kind']} | {r['format']} | {r['scaling']} | {r['max_abs_err']:.3g} | "
                     f"{r['mean_abs_err']:.3g} | {r['max_rel_err']:.2e} | "
                     f"{r['mean_rel_err']:.2e} | {r['bound']:.3g} | "
                     f"{r['bytes_per_worker']:,} | {r['redone_chunks']} | "
                     f"{1000 * r['time_s']:.2f} |")
    return "\n".join(lines) + "\n"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--workers", type=int, default=4)
    parser.add_argument("--elems", type=int, default=256, help="INA_K (default 256)")
    parser.add_argument("--pool", type=int, default=64)
    parser.add_argument("--length", type=int, default=65536,
                        help="elements per worker of the synthetic kinds (default 65536)")
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--kinds", default="normal,heavy,mlp")
    parser.add_argument("--out", default=str(ROOT / "out" / "format_errors"))
    args = parser.parse_args(argv)
    topology = star(args.workers)
    jobs = [SimJob(job=1, workers=tuple(h.name for h in topology.hosts))]
    setup = prepare_setup(topology, jobs, elems_k=args.elems, pool_size=args.pool)
    rows = []
    for kind in args.kinds.split(","):
        if kind == "mlp":
            try:
                vectors = mlp_gradients(args.workers, args.seed)
            except ImportError as error:
                print(f"mlp: skipped ({error})")
                continue
        else:
            vectors = synthetic(kind, args.workers, args.length, args.seed)
        for fmt, scaling, divisor in ENCODINGS:
            row = one_row(vectors, kind=kind, fmt=fmt, scaling=scaling, divisor=divisor,
                          k=args.elems, pool=args.pool, setup=setup, topology=topology,
                          jobs=jobs)
            rows.append(row)
            print(markdown([row]).splitlines()[-1], flush=True)
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    (out / "table.md").write_text(markdown(rows))
    (out / "errors.json").write_text(json.dumps(rows, indent=2) + "\n")
    with open(out / "errors.csv", "w", newline="") as handle:
        writer = csv.DictWriter(handle, fieldnames=list(rows[0]))
        writer.writeheader()
        writer.writerows(rows)
    print(f"wrote {out}/table.md, errors.csv, errors.json")
    return 0 if all(r["correct"] for r in rows) else 1


if __name__ == "__main__":
    raise SystemExit(main())
