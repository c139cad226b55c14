"""Run many generated cases in parallel and collect disagreements (used by scripts/difftest.py
and tests/difftest). Each worker process generates its case from the seed, so only seeds and
small results cross process boundaries."""

from __future__ import annotations

import json
import multiprocessing
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path

from .generator import generate_case
from .outcome import UNSPECIFIED, classify_case


@dataclass
class SeedReport:
    seed: int
    expect_valid: bool
    p4c_accepted: bool
    inaemu_accepted: bool
    kinds: list[str]
    details: list[str]
    runs: dict[str, dict] = field(default_factory=dict)   # run name -> outputs (disagreeing only)
    oracle_error: str | None = None     # p4c's JSON could not run the STF on simple_switch

    @property
    def disagreeing(self) -> bool:
        return any(k not in UNSPECIFIED for k in self.kinds)


def run_seed(seed: int, bmv2: bool = True) -> SeedReport:
    case = generate_case(seed)
    found, result = classify_case(case, bmv2=bmv2)
    report = SeedReport(seed, case.expect_valid, result.p4c.accepted, result.inaemu.accepted,
                        [d.kind for d in found], [d.detail for d in found])
    oracle = result.runs.get("p4c@bmv2")
    if oracle is not None and oracle.error:
        report.oracle_error = oracle.error
    if found:
        report.runs = {name: _outcome_dict(o) for name, o in result.runs.items()}
        report.runs["compilers"] = {"p4c": result.p4c.message, "inaemu": result.inaemu.message}
    return report


def _outcome_dict(outcome) -> dict:
    return {"error": outcome.error, "aborted": outcome.aborted,
            "outputs": {str(p): [f.hex().upper() for f in frames]
                        for p, frames in sorted(outcome.outputs.items())},
            "counter_reads": [list(r) for r in outcome.counter_reads],
            "registers": outcome.registers, "learned": outcome.learned}


def _worker(args):
    seed, bmv2 = args
    return run_seed(seed, bmv2)


def worker_pool(processes: int):
    """A pool whose workers start from a fresh process (forkserver), not as forks of the
    caller: a caller that has run gRPC (a P4Runtime server, a client's stream) holds objects
    whose finalizers, run by a forked worker's collector, wait on threads the fork did not
    copy, and the worker hung or crashed ("Fatal Python error: Segmentation fault ...
    Garbage-collecting") in the test suite, where one process runs both."""
    return multiprocessing.get_context("forkserver").Pool(processes)


def run_batch(seeds, *, processes: int = 2, bmv2: bool = True, progress=None):
    """Yields a SeedReport per seed as they finish (order not kept)."""
    jobs = [(s, bmv2) for s in seeds]
    if processes <= 1:
        for job in jobs:
            yield _worker(job)
        return
    with worker_pool(processes) as pool:
        yield from pool.imap_unordered(_worker, jobs, chunksize=1)


def summarize(reports: list[SeedReport]) -> Counter:
    counts: Counter = Counter()
    for r in reports:
        counts["cases"] += 1
        counts["valid by construction" if r.expect_valid else "invalid on purpose"] += 1
        if r.expect_valid and not r.p4c_accepted and not r.inaemu_accepted:
            counts["both reject a case meant valid (generator)"] += 1
        if r.oracle_error:
            counts["simple_switch could not run the STF on p4c's JSON (not compared)"] += 1
        if not r.expect_valid and r.p4c_accepted:
            counts["p4c accepts a mutation (generator)"] += 1
        for kind in set(r.kinds):
            label = kind if kind in UNSPECIFIED else f"disagreement: {kind}"
            counts[label] += 1
    return counts


def write_case(out_dir: Path, report: SeedReport) -> Path:
    """One folder per disagreeing seed: the program, the STF, the four outcomes, the kinds."""
    case = generate_case(report.seed)
    folder = out_dir / f"seed{report.seed}"
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "case.p4").write_text(case.source)
    (folder / "case.stf").write_text(case.stf)
    (folder / "outcomes.json").write_text(json.dumps(report.runs, indent=1))
    (folder / "disagreements.txt").write_text(
        "\n\n".join(f"== {k}\n{d}" for k, d in zip(report.kinds, report.details)) + "\n")
    return folder
