#!/usr/bin/env python3
"""p4c's own BMv2 test harness, unchanged, with inaemu as the target: how many samples pass.

    .venv/bin/python scripts/p4c_harness.py [P4C] --harness-python PY [-j 2] [--only NAME ...]
                                           [--no-bmv2] [--json results.json]

p4c tests its BMv2 back end with `backends/bmv2/run-bmv2-test.py`: it compiles a sample with the
`p4c-bm2-ss` of a build folder, starts `simple_switch --use-files` on pcap FIFOs, adds the STF's
table entries through `simple_switch_CLI` over Thrift, writes the packets and compares what
comes out. This runs that script, as p4c ships it, on every v1model sample with an `.stf`
(p4c_samples.py's selection), twice: with real p4c and simple_switch (the reference toolchain,
/opt/p4ref), and with `inaemu shims`' `p4c-bm2-ss` and `simple_switch` first on PATH, so that
inaemu compiles and inaemu's switch runs while BMv2's own `simple_switch_CLI` drives it.

P4C is a p4c checkout or a bare git directory of one (default: the `fetch` mirror,
/work/.mirror/p4lang+p4c/repo; the harness and the samples are extracted from HEAD into a
temporary folder). The harness needs Python with `ptf`, `scapy` and `ply` (`python3 -m venv V &&
V/bin/pip install ptf scapy ply`), given as --harness-python. Exit status 1 when a sample that
passes on BMv2 fails on inaemu. p4c's files are only read, never copied into the repository.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from dataclasses import asdict, dataclass
from multiprocessing import Pool
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from p4c_samples import DEFAULT_P4C, select_samples  # noqa: E402

HARNESS_FILES = ("backends/bmv2", "tools", "testdata/p4_16_samples")
RUN = "backends/bmv2/run-bmv2-test.py"
TIMEOUT_S = 300


@dataclass
class HarnessResult:
    name: str
    bmv2: str           # "pass", "fail", "absent" (no toolchain), "timeout"
    inaemu: str         # "pass", "fail", "timeout"
    reason: str = ""    # the harness's first error line for inaemu
    seconds: float = 0.0


def p4c_tree(p4c: Path, scratch: Path) -> Path:
    """A folder holding the harness, p4c's test tools and the samples."""
    if (p4c / RUN).is_file():
        return p4c
    if not (p4c / "HEAD").is_file():
        raise SystemExit(f"p4c_harness: {p4c} is neither a p4c checkout nor a git directory")
    archive = subprocess.run(["git", f"--git-dir={p4c}", "archive", "HEAD", *HARNESS_FILES],
                             capture_output=True, check=True).stdout
    scratch.mkdir(parents=True, exist_ok=True)
    subprocess.run(["tar", "-x", "-C", str(scratch)], input=archive, check=True)
    return scratch


def build_folder(root: Path, compiler: Path) -> Path:
    """What run-bmv2-test.py takes as p4c's build folder: p4c-bm2-ss and a config.h saying
    BMv2 is there."""
    root.mkdir(parents=True, exist_ok=True)
    (root / "config.h").write_text("#define HAVE_SIMPLE_SWITCH 1\n")
    link = root / "p4c-bm2-ss"
    if not link.exists():
        link.symlink_to(compiler)
    return root


def _error_line(text: str) -> str:
    for line in text.splitlines():
        if "ERROR" in line or "error" in line:
            return line.strip()[:200]
    lines = [line for line in text.splitlines() if line.strip()]
    return lines[-1][:200] if lines else ""


def run_harness(python: str, tree: Path, sample: Path, build: Path, path: str,
                work: Path) -> tuple[str, str]:
    env = {**os.environ, "PATH": path}
    try:
        done = subprocess.run([python, str(tree / RUN), str(tree), str(sample), "-bd", str(build)],
                              cwd=work, env=env, capture_output=True, text=True,
                              timeout=TIMEOUT_S, stdin=subprocess.DEVNULL)
    except subprocess.TimeoutExpired:
        return "timeout", f"no verdict within {TIMEOUT_S} s"
    if done.returncode == 0:
        return "pass", ""
    return "fail", _error_line(done.stdout + done.stderr)


def run_sample(job) -> HarnessResult:
    python, tree, sample, targets = job
    started = time.monotonic()
    verdicts = {}
    for target, (build, path, work) in targets.items():
        verdicts[target] = run_harness(python, tree, sample, build, path, work)
    bmv2 = verdicts["bmv2"][0] if "bmv2" in verdicts else "absent"
    inaemu, reason = verdicts["inaemu"]
    return HarnessResult(sample.stem, bmv2, inaemu, reason, time.monotonic() - started)


def print_report(results: list[HarnessResult], out=sys.stdout) -> int:
    worse = [r for r in results if r.bmv2 in ("pass", "absent") and r.inaemu != "pass"]
    for r in worse:
        print(f"  {r.name}: BMv2 {r.bmv2}, inaemu {r.inaemu}: {r.reason}", file=out)
    bmv2_pass = [r for r in results if r.bmv2 == "pass"]
    both = [r for r in bmv2_pass if r.inaemu == "pass"]
    only_inaemu = [r for r in results if r.bmv2 == "fail" and r.inaemu == "pass"]
    print(f"p4c's harness (run-bmv2-test.py), {len(results)} samples: BMv2 passes "
          f"{len(bmv2_pass)}, inaemu passes {len(both)} of those"
          + (f" and {len(only_inaemu)} BMv2 fails" if only_inaemu else ""), file=out)
    return 1 if any(r.bmv2 == "pass" for r in worse) else 0


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("p4c", nargs="?", type=Path, default=DEFAULT_P4C,
                    help="a p4c checkout or bare git directory (default: %(default)s)")
    ap.add_argument("--harness-python", required=True,
                    help="a Python with ptf, scapy and ply, to run p4c's harness")
    ap.add_argument("-j", "--processes", type=int, default=2)
    ap.add_argument("--only", nargs="+", metavar="NAME", help="just these samples (stem names)")
    ap.add_argument("--no-bmv2", action="store_true", help="inaemu only")
    ap.add_argument("--json", type=Path, help="also write every result to this file")
    args = ap.parse_args(argv)

    from inaemu.shims import write_shims
    from p4switch.reference import find_toolchain
    toolchain = find_toolchain()
    if toolchain is None:
        raise SystemExit("p4c_harness: the harness drives switches with BMv2's simple_switch_CLI;"
                         " install the reference toolchain (/opt/p4ref)")
    probe = subprocess.run([args.harness_python, "-c", "import ptf.pcap_writer, scapy, ply"],
                           capture_output=True, text=True)
    if probe.returncode != 0:
        raise SystemExit(f"p4c_harness: {args.harness_python} lacks ptf, scapy or ply "
                         f"({_error_line(probe.stderr)}); pip install ptf scapy ply")
    with tempfile.TemporaryDirectory(prefix="p4c-harness-") as scratch:
        scratch = Path(scratch)
        tree = p4c_tree(args.p4c, scratch / "p4c")
        samples = select_samples(tree / "testdata/p4_16_samples")
        if args.only:
            samples = [s for s in samples if s.stem in set(args.only)]
        shims = scratch / "shims"
        write_shims(shims)
        system_path = os.environ.get("PATH", "")
        tools = str(toolchain.root / "bin")
        targets = {"inaemu": (build_folder(scratch / "build-inaemu", shims / "p4c-bm2-ss"),
                              f"{shims}:{tools}:{system_path}", scratch / "work-inaemu")}
        if not args.no_bmv2:
            targets["bmv2"] = (build_folder(scratch / "build-bmv2", toolchain.p4c),
                               f"{tools}:{system_path}", scratch / "work-bmv2")
        for _, _, work in targets.values():
            work.mkdir(exist_ok=True)
        jobs = [(args.harness_python, tree, s, targets) for s in samples]
        results = []
        started = time.monotonic()
        with Pool(max(1, args.processes)) as pool:
            for result in pool.imap_unordered(run_sample, jobs):
                results.append(result)
                print(f"{len(results)}/{len(jobs)} {result.name}: BMv2 {result.bmv2}, "
                      f"inaemu {result.inaemu} ({time.monotonic() - started:.0f} s)",
                      file=sys.stderr, flush=True)
    results.sort(key=lambda r: r.name)
    if args.json:
        args.json.write_text(json.dumps([asdict(r) for r in results], indent=1))
    return print_report(results)


if __name__ == "__main__":
    sys.exit(main())
