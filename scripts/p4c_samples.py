#!/usr/bin/env python3
"""p4c's v1model STF samples on real BMv2 and on inaemu: how many pass on each, and why not.

    .venv/bin/python scripts/p4c_samples.py [P4C] [-j 2] [--only NAME ...] [--no-bmv2]
                                            [--json results.json] [--keep DIR]

P4C is a p4c checkout or a bare git directory of one (such as the mirror the `fetch` tool makes:
/work/.mirror/p4lang+p4c/repo, the default); from a bare directory `testdata/p4_16_samples` is
extracted from HEAD into a temporary folder. The samples are p4c's own test set for BMv2:
every `testdata/p4_16_samples/*-bmv2.p4` that includes `v1model.p4` and has an `.stf` beside it.

Each sample is compiled by real `p4c-bm2-ss` and its STF run on real `simple_switch` (when the
reference toolchain is installed, /opt/p4ref), and compiled by inaemu's front end and run on
inaemu's runtime with the same STF runner (`p4switch.reference`). The table lists every sample
that BMv2 passes and inaemu does not, with the reason; the summary says how many BMv2 passes and
how many of those inaemu passes. Exit status 1 when some BMv2-passing sample fails on inaemu.
p4c's files are only read, never copied into the repository.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import re
import shutil
import subprocess
import sys
import tempfile
import time
from dataclasses import asdict, dataclass
from multiprocessing import Pool
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

DEFAULT_P4C = Path("/work/.mirror/p4lang+p4c/repo")
SAMPLES = "testdata/p4_16_samples"
_SAMPLES_PATH = re.compile(r"\S*/" + re.escape(SAMPLES) + "/")
_V1MODEL_INCLUDE = re.compile(r'^\s*#\s*include\s*[<"]v1model\.p4[>"]', re.MULTILINE)


@dataclass
class SampleResult:
    name: str
    bmv2: str          # "pass", "fail", "refused" (p4c or simple_switch), "absent" (no toolchain)
    inaemu: str        # "pass", "fail", "refused", "internal", "runtime"
    reason: str = ""   # why inaemu did not pass (first line that says it)
    bmv2_reason: str = ""


def samples_folder(p4c: Path, scratch: Path) -> Path:
    """The p4_16_samples folder of a checkout, or extracted from a bare git directory."""
    if (p4c / SAMPLES).is_dir():
        return p4c / SAMPLES
    if not (p4c / "HEAD").is_file():
        raise SystemExit(f"p4c_samples: {p4c} is neither a p4c checkout nor a git directory")
    archive = subprocess.run(["git", f"--git-dir={p4c}", "archive", "HEAD", SAMPLES],
                             capture_output=True, check=True).stdout
    subprocess.run(["tar", "-x", "-C", str(scratch)], input=archive, check=True)
    return scratch / SAMPLES


def select_samples(folder: Path) -> list[Path]:
    """Every `*-bmv2.p4` that includes v1model.p4 and has an `.stf` test beside it."""
    chosen = []
    for program in sorted(folder.glob("*-bmv2.p4")):
        if program.with_suffix(".stf").is_file() and _V1MODEL_INCLUDE.search(
                program.read_text(errors="replace")):
            chosen.append(program)
    return chosen


def _first_line(text: str, limit: int = 220) -> str:
    """The first non-blank line, without the samples folder's path (a temporary folder)."""
    for line in text.splitlines():
        if line.strip():
            return _SAMPLES_PATH.sub("", line.strip())[:limit]
    return ""


def _failure_line(report: str) -> str:
    """The first line of an STF report that names what went wrong."""
    for line in report.splitlines():
        if re.search(r"FAIL|mismatch|expected|missing|unexpected|error", line, re.IGNORECASE):
            return _SAMPLES_PATH.sub("", line.strip())[:220]
    return _first_line(report)


def p4c_compile(toolchain, program: Path, cache: Path) -> tuple[Path | None, str]:
    """Real p4c's BMv2 JSON for `program` (None and p4c's message when it refuses), cached in
    `cache` by the program's bytes: the samples folder is fixed for a run, so its includes are
    too (p4switch.reference.compile_p4 would hash every sibling of thousands of files)."""
    key = hashlib.sha256(str(toolchain.p4c).encode() + program.read_bytes()).hexdigest()[:24]
    folder = cache / f"{program.stem}-{key}"
    json_path, log_path = folder / "out.json", folder / "p4c.log"
    if not log_path.exists():
        folder.mkdir(parents=True, exist_ok=True)
        done = subprocess.run([str(toolchain.p4c), "--arch", "v1model", "-o", str(json_path),
                               str(program)], capture_output=True, text=True,
                              stdin=subprocess.DEVNULL, timeout=300)
        log_path.write_text((done.stdout + done.stderr) or f"exit status {done.returncode}")
        if done.returncode != 0:
            json_path.unlink(missing_ok=True)
    return (json_path if json_path.exists() else None), log_path.read_text()


def run_bmv2(program: Path, stf: Path, cache: Path) -> tuple[str, str]:
    from p4switch.reference import find_toolchain, run_stf_bmv2
    toolchain = find_toolchain()
    if toolchain is None:
        return "absent", "the reference toolchain is not installed"
    json_path, messages = p4c_compile(toolchain, program, cache)
    if json_path is None:
        return "refused", "p4c: " + _first_line(messages)
    outcome = run_stf_bmv2(json_path, stf, toolchain=toolchain)
    if outcome.error:
        return "refused", "simple_switch: " + _first_line(outcome.error)
    if not outcome.passed:
        return "fail", _failure_line(outcome.report)
    return "pass", ""


def run_inaemu(program: Path, stf: Path) -> tuple[str, str]:
    from p4switch.compiler import CompileError, compile_file
    from p4switch.reference import run_stf_inaemu
    try:
        doc = compile_file(program).bmv2
    except CompileError as exc:
        text = str(exc)
        kind = "internal" if "internal compiler error" in text else "refused"
        return kind, _first_line(text)
    try:
        outcome = run_stf_inaemu(doc, stf)
    except Exception as exc:  # noqa: BLE001 - a runtime crash is a result to report
        return "runtime", f"{type(exc).__name__}: {_first_line(str(exc))}"
    if outcome.error:
        return "runtime", _first_line(outcome.error)
    if not outcome.passed:
        return "fail", _failure_line(outcome.report)
    return "pass", ""


def run_sample(job: tuple[Path, Path, bool]) -> SampleResult:
    program, cache, with_bmv2 = job
    stf = program.with_suffix(".stf")
    bmv2, bmv2_reason = run_bmv2(program, stf, cache) if with_bmv2 else ("absent", "--no-bmv2")
    inaemu, reason = run_inaemu(program, stf)
    return SampleResult(program.stem, bmv2, inaemu, reason, bmv2_reason)


def print_report(results: list[SampleResult], out=None) -> int:
    """The table of samples that do not pass on inaemu, then the counts; returns how many
    BMv2-passing (or, without BMv2, any) samples fail on inaemu."""
    have_bmv2 = any(r.bmv2 != "absent" for r in results)
    judged = [r for r in results if r.bmv2 == "pass"] if have_bmv2 else results
    failing = [r for r in judged if r.inaemu != "pass"]
    if failing:
        width = max(len(r.name) for r in failing)
        print(f"{'sample':<{width}}  {'inaemu':<8}  reason", file=out)
        for r in failing:
            print(f"{r.name:<{width}}  {r.inaemu:<8}  {r.reason}", file=out)
        print(file=out)
    if have_bmv2:
        others = [r for r in results if r.bmv2 != "pass"]
        if others:
            print("not passing on real BMv2 (not counted):", file=out)
            for r in others:
                print(f"  {r.name}: bmv2 {r.bmv2} ({r.bmv2_reason}); inaemu {r.inaemu}", file=out)
            print(file=out)
        print(f"{len(results)} v1model STF samples; real BMv2 passes {len(judged)}; "
              f"inaemu passes {len(judged) - len(failing)} of those "
              f"({sum(r.inaemu == 'pass' for r in results)} in all)", file=out)
    else:
        print(f"{len(results)} v1model STF samples (no real BMv2 here); inaemu passes "
              f"{len(judged) - len(failing)}", file=out)
    return len(failing)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("p4c", nargs="?", type=Path, default=DEFAULT_P4C,
                    help=f"p4c checkout or bare git directory (default {DEFAULT_P4C})")
    ap.add_argument("-j", "--processes", type=int, default=2)
    ap.add_argument("--only", nargs="+", metavar="NAME", help="just these samples (stem names)")
    ap.add_argument("--no-bmv2", action="store_true", help="inaemu only")
    ap.add_argument("--json", type=Path, help="also write every result to this file")
    ap.add_argument("--keep", type=Path, help="p4c's compile cache here (kept between runs)")
    args = ap.parse_args(argv)
    scratch = Path(tempfile.mkdtemp(prefix="p4c-samples-"))
    try:
        folder = samples_folder(args.p4c.resolve(), scratch)
        programs = select_samples(folder)
        if args.only:
            wanted = {n.removesuffix(".p4") for n in args.only}
            programs = [p for p in programs if p.stem in wanted]
        cache = args.keep or scratch / "p4c-cache"
        jobs = [(p, cache, not args.no_bmv2) for p in programs]
        start = time.monotonic()
        results = []
        with Pool(args.processes) as pool:
            for result in pool.imap_unordered(run_sample, jobs):
                results.append(result)
                print(f"\r{len(results)}/{len(jobs)} samples, "
                      f"{time.monotonic() - start:.0f} s", end="", file=sys.stderr, flush=True)
        print(file=sys.stderr)
        results.sort(key=lambda r: r.name)
        if args.json:
            args.json.write_text(json.dumps([asdict(r) for r in results], indent=1))
        return 1 if print_report(results) else 0
    finally:
        shutil.rmtree(scratch, ignore_errors=True)


if __name__ == "__main__":
    sys.exit(main())
