"""Built-in workloads of real models: DDP training iterations of ResNet-50, BERT-base, GPT-2.

`model_workload(name, workers)` is a `graph.Workload` of `graph.ddp_iteration`s per rank:
the model's real parameter tensors cut into DDP's gradient buckets, an all-reduce per bucket
(float32 bytes), and compute times measured on this project's machine for one iteration
(forward, the backward up to each bucket's gradients being ready, the optimizer step), read
from `model_compute.json` beside this module so a run measures nothing. The times can be
scaled by `compute_speedup` (the compute device is that many times faster than the CPU that
measured them; 1.0 = that CPU).

The models' definitions are in inaemu/workload/nets.py (torch); this module needs torch only to
measure again (`python -m inaemu.workload.models --measure resnet50`, which rewrites that
model's record in the data file).

Buckets are the ones DDP (torch 2.13) uses from its second iteration on: after the first
iteration it re-buckets the parameters in the order their gradients became ready during the
backward pass (recorded by the measurement), a bucket closing once it holds `cap` bytes or more;
the first bucket closes at 1 MiB when the cap is DDP's default (25 MiB), else at the cap.
"""

from __future__ import annotations

import argparse
import dataclasses
import datetime
import json
import os
import platform
import statistics
import subprocess
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Sequence

from inaemu.workload.graph import Workload, WorkloadError, RankGraph, ddp_iteration

MODELS = ("resnet50", "bert-base", "gpt2")
FIRST_BUCKET_BYTES = 1024 * 1024          # DDP's first bucket (dist._DEFAULT_FIRST_BUCKET_BYTES)
BUCKET_BYTES = 25 * 1024 * 1024           # DDP's bucket_cap_mb default, 25 MiB
FLOAT32 = 4
DATA = Path(__file__).with_name("model_compute.json")

# What one measured iteration is, per model (inaemu/workload/nets.py's example_batch and loss)
MEASURE_BATCH = {"resnet50": {"batch": 8, "input": "3x224x224 images, 1000 classes"},
                 "bert-base": {"batch": 8, "seq": 128, "input": "128 tokens per sample"},
                 "gpt2": {"batch": 8, "seq": 128, "input": "128 tokens per sample"}}


def ddp_buckets(sizes: Sequence[int], first_cap: int = FIRST_BUCKET_BYTES,
                cap: int = BUCKET_BYTES) -> list[list[int]]:
    """DDP's bucket assignment (torch's compute_bucket_assignment_by_size, one dtype and device):
    the tensors of byte sizes `sizes`, taken in the order given, fill a bucket until it holds
    its limit or more (`first_cap` for the first bucket, `cap` after); returns each bucket's
    positions in `sizes`."""
    if first_cap <= 0 or cap <= 0:
        raise ValueError(f"bucket caps must be > 0, got first {first_cap}, cap {cap}")
    buckets, current, size, limit = [], [], 0, first_cap
    for index, nbytes in enumerate(sizes):
        current.append(index)
        size += nbytes
        if size >= limit:
            buckets.append(current)
            current, size, limit = [], 0, cap
    if current:
        buckets.append(current)
    return buckets


def first_bucket_for(cap: int) -> int:
    """DDP's first bucket limit for a bucket cap: 1 MiB with the default cap, else the cap.
    (DDP gives 1 MiB only when bucket_cap_mb is left unset; for an explicit 25 MiB pass
    `first_bucket_bytes` = the cap.)"""
    return FIRST_BUCKET_BYTES if cap == BUCKET_BYTES else cap


@dataclass(frozen=True)
class Bucket:
    """One DDP gradient bucket: its float32 bytes, its parameters (names, in the order they
    fill it) and the backward seconds from the previous bucket's gradients being ready (or the
    backward pass's start) to its last gradient (as measured, before any speed-up)."""

    bytes: int
    parameters: tuple[str, ...]
    backward_s: float


def _check_name(name: str) -> None:
    if name not in MODELS:
        raise WorkloadError(f"unknown model {name!r} (known: {', '.join(MODELS)})")


def load_compute(path: Path = DATA) -> dict:
    """The data file: {"models": {name: record}} (see `measure` for a record's fields)."""
    return json.loads(Path(path).read_text())


def model_record(name: str, path: Path = DATA) -> dict:
    _check_name(name)
    records = load_compute(path)["models"]
    if name not in records:
        raise WorkloadError(f"{name}: no measured compute in {path} (measure it with "
                            f"`python -m inaemu.workload.models --measure {name}`)")
    return records[name]


def buckets_of(record: dict, bucket_cap_bytes: int = BUCKET_BYTES,
               first_bucket_bytes: int | None = None) -> list[Bucket]:
    """A measured record's parameters in DDP's buckets for this cap, in the order DDP fills
    (and reduces) them: gradient-ready order; a bucket is ready when its last gradient is and
    when every bucket before it is (DDP launches bucket all-reduces in order)."""
    first = first_bucket_for(bucket_cap_bytes) if first_bucket_bytes is None \
        else first_bucket_bytes
    params = record["parameters"]                 # [name, numel, ready seconds], definition order
    order = sorted(range(len(params)), key=lambda i: (params[i][2], -i))
    layout = ddp_buckets([params[i][1] * FLOAT32 for i in order], first, bucket_cap_bytes)
    out, previous = [], 0.0
    for bucket in layout:
        members = [order[j] for j in bucket]
        ready = max(previous, max(params[i][2] for i in members))
        out.append(Bucket(sum(params[i][1] for i in members) * FLOAT32,
                          tuple(params[i][0] for i in members), ready - previous))
        previous = ready
    return out


def model_buckets(name: str, bucket_cap_bytes: int = BUCKET_BYTES,
                  first_bucket_bytes: int | None = None, path: Path = DATA) -> list[Bucket]:
    """The model's DDP buckets (bytes, parameters, measured backward seconds) for a cap."""
    return buckets_of(model_record(name, path), bucket_cap_bytes, first_bucket_bytes)


def model_workload(name: str, workers: int, *, bucket_cap_bytes: int = BUCKET_BYTES,
                   first_bucket_bytes: int | None = None, compute_speedup: float = 1.0,
                   iterations: int = 1, path: Path = DATA) -> Workload:
    """`iterations` DDP iterations of model `name` (one of MODELS) on `workers` ranks: per rank
    and iteration a forward node, per bucket its backward node and its all-reduce, an optimizer
    node; iteration i+1's forward waits for iteration i's optimizer step. Compute seconds are the
    data file's measurement divided by `compute_speedup`. `first_bucket_bytes` None: DDP's rule
    (1 MiB with the default 25 MiB cap, else the cap)."""
    _check_name(name)
    if workers < 1:
        raise WorkloadError(f"{name}: workers must be >= 1, got {workers}")
    if iterations < 1:
        raise WorkloadError(f"{name}: iterations must be >= 1, got {iterations}")
    if not compute_speedup > 0:
        raise WorkloadError(f"{name}: compute_speedup must be > 0, got {compute_speedup!r}")
    if bucket_cap_bytes <= 0 or (first_bucket_bytes is not None and first_bucket_bytes <= 0):
        raise WorkloadError(f"{name}: bucket caps must be > 0")
    record = model_record(name, path)
    buckets = buckets_of(record, bucket_cap_bytes, first_bucket_bytes)
    first = first_bucket_for(bucket_cap_bytes) if first_bucket_bytes is None \
        else first_bucket_bytes
    s = compute_speedup
    plan = [(b.backward_s / s, b.bytes) for b in buckets]
    ranks = []
    for rank in range(workers):
        nodes, next_id, last = [], 0, None
        for it in range(iterations):
            step = ddp_iteration(rank, record["forward_s"] / s, plan, record["optimizer_s"] / s,
                                 first_id=next_id)
            if last is not None:
                step[0] = dataclasses.replace(step[0], deps=(last,))
            if iterations > 1:
                step = [dataclasses.replace(n, name=f"{n.name} (iteration {it})") for n in step]
            nodes += step
            last = step[-1].id
            next_id = max(n.id for n in step) + 1
        ranks.append(RankGraph(rank, tuple(nodes)))
    machine = record["measured"]
    shape = ", ".join(f"{k} {v}" for k, v in record["batch"].items())
    source = (f"{name}: compute measured on {machine['cpu']} ({machine['cores']} cores, torch "
              f"{machine['torch']}, {machine['date']}) for {shape}, "
              f"divided by compute_speedup {s:g}; DDP buckets of cap {bucket_cap_bytes} B "
              f"(first {first} B) in gradient-ready order (inaemu/workload/model_compute.json)")
    meta = {"model": name, "parameters": sum(p[1] for p in record["parameters"]),
            "buckets": [b.bytes for b in buckets],
            "bucket_parameters": [list(b.parameters) for b in buckets],
            "bucket_cap_bytes": bucket_cap_bytes, "first_bucket_bytes": first,
            "compute_speedup": s, "iterations": iterations, "batch": record["batch"],
            "optimizer": record["optimizer"]}
    return Workload(name, tuple(ranks), source, meta)


# ----------------------------------------------------------------------------------- measuring


def cpu_name() -> str:
    try:
        out = subprocess.run(["lscpu"], capture_output=True, text=True, check=True).stdout
        for line in out.splitlines():
            if line.startswith("Model name:"):
                return line.split(":", 1)[1].strip()
    except (OSError, subprocess.CalledProcessError):
        pass
    return platform.processor() or platform.machine()


def measure(name: str, repeats: int = 3, warmup: int = 1) -> dict:
    """Time `warmup + repeats` training iterations of the model on this CPU (the batch of
    MEASURE_BATCH) and return its record: forward_s (inputs to loss), optimizer_s, the
    backward's total, and per parameter (definition order) the seconds from the backward's
    start to its gradient being accumulated (a post-accumulate-grad hook, the event DDP's
    reducer hooks); each the median over the repeats."""
    import torch

    from inaemu.workload import nets

    _check_name(name)
    torch.manual_seed(0)
    model = nets.build(name, "cpu")
    model.train()
    shape = MEASURE_BATCH[name]
    inputs = nets.example_batch(name, shape["batch"], shape.get("seq", 128))
    optimizer = nets.make_optimizer(name, model)
    named = list(model.named_parameters())
    stamps: dict[int, float] = {}
    for index, (_, param) in enumerate(named):
        param.register_post_accumulate_grad_hook(
            lambda _p, index=index: stamps.__setitem__(index, time.perf_counter()))
    runs = []
    for _ in range(warmup + repeats):
        optimizer.zero_grad(set_to_none=True)
        stamps.clear()
        t0 = time.perf_counter()
        loss = nets.loss(name, model, inputs)
        t1 = time.perf_counter()
        loss.backward()
        t2 = time.perf_counter()
        optimizer.step()
        t3 = time.perf_counter()
        if len(stamps) != len(named):
            missing = [named[i][0] for i in range(len(named)) if i not in stamps][:5]
            raise RuntimeError(f"{name}: parameters without a gradient: {missing}")
        runs.append((t1 - t0, t2 - t1, t3 - t2, [stamps[i] - t1 for i in range(len(named))]))
    runs = runs[warmup:]
    med = statistics.median
    return {
        "definition": f"inaemu/workload/nets.py {nets.BUILDERS[name].__name__}()",
        "batch": {k: v for k, v in shape.items() if k != "input"},
        "input": shape["input"],
        "optimizer": type(optimizer).__name__,
        "repeats": repeats,
        "forward_s": round(med(r[0] for r in runs), 6),
        "backward_total_s": round(med(r[1] for r in runs), 6),
        "optimizer_s": round(med(r[2] for r in runs), 6),
        "parameters": [[pname, param.numel(), round(med(r[3][i] for r in runs), 6)]
                       for i, (pname, param) in enumerate(named)],
    }


def write_measurement(name: str, record: dict, path: Path = DATA) -> dict:
    """Put `record` in the data file, with where and when it was measured (`measured`: the date,
    `lscpu`'s model name, cores, torch's threads and version, the 1-minute load average) and
    its buckets for DDP's default cap (for reading)."""
    import torch

    data = load_compute(path) if Path(path).exists() else {"models": {}}
    buckets = buckets_of(record)
    measured = {"date": datetime.date.today().isoformat(), "cpu": cpu_name(),
                "cores": os.cpu_count(), "threads": torch.get_num_threads(),
                "torch": torch.__version__, "load_average": round(os.getloadavg()[0], 2)}
    record = {"measured": measured, **record,
              "buckets_default_cap": {"bytes": [b.bytes for b in buckets],
                                      "backward_s": [round(b.backward_s, 6) for b in buckets]}}
    models = dict(data["models"], **{name: record})
    data = {"about": ABOUT, "models": {k: models[k] for k in MODELS if k in models}}
    Path(path).write_text(_compact(json.dumps(data, indent=1)) + "\n")
    return record


ABOUT = ("Compute of one training iteration per built-in model, measured on a CPU by `python -m "
         "inaemu.workload.models --measure NAME` (inaemu/workload/models.py), in seconds, each "
         "the median of `repeats` iterations after a warm-up: forward_s from the inputs to the "
         "loss, backward_total_s, optimizer_s; parameters: [name, elements, seconds from the "
         "backward's start to its gradient being ready] in the model's parameters() order; "
         "buckets_default_cap: DDP's buckets for its default cap (25 MiB, the first 1 MiB) with "
         "each bucket's backward seconds, for reading (model_workload recomputes them).")


def _compact(text: str) -> str:
    """json.dumps(indent=1) with each innermost list on one line."""
    import re
    return re.sub(r"\[\s*([^\[\]{}]*?)\s*\]",
                  lambda m: "[" + re.sub(r"\s*\n\s*", " ", m.group(1)) + "]", text)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m inaemu.workload.models",
                                     description=__doc__.split("\n")[0])
    parser.add_argument("--measure", nargs="+", metavar="MODEL", choices=MODELS,
                        help="time one training iteration of these models here and rewrite "
                             "their records in inaemu/workload/model_compute.json")
    parser.add_argument("--repeats", type=int, default=3)
    args = parser.parse_args(argv)
    if not args.measure:
        for name in MODELS:
            try:
                b = model_buckets(name)
            except WorkloadError as e:
                print(e)
                continue
            r = model_record(name)
            print(f"{name}: {sum(p[1] for p in r['parameters']):,} parameters, "
                  f"{len(b)} buckets, forward {r['forward_s']:.3f} s, backward "
                  f"{sum(x.backward_s for x in b):.3f} s, optimizer {r['optimizer_s']:.3f} s")
        return 0
    for name in args.measure:
        record = write_measurement(name, measure(name, args.repeats))
        b = record["buckets_default_cap"]
        print(f"{name}: forward {record['forward_s']:.3f} s, backward "
              f"{record['backward_total_s']:.3f} s ({len(b['bytes'])} buckets: "
              f"{sum(b['backward_s']):.3f} s), optimizer {record['optimizer_s']:.3f} s")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
