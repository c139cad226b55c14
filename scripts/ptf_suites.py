#!/usr/bin/env python3
"""Other people's PTF tests, unchanged, on BMv2 and on inaemu side by side: how many pass.

    .venv/bin/python scripts/ptf_suites.py --ptf-python PY [--p4-guide DIR] [--p4c DIR]
                                           [--only NAME ...] [--no-bmv2] [--json results.json]

PTF (p4lang's packet test framework) is how P4 programs are tested against simple_switch_grpc:
a test pushes the pipeline and entries over P4Runtime, sends packets into switch ports and
checks what comes out. Two sets of them, read from their repositories and never copied here:

* **p4c's** `backends/bmv2/run-bmv2-ptf-test.py`, unchanged, on each v1model sample that has a
  PTF test beside it (`testdata/p4_16_samples/*-bmv2.py`). It compiles with the `p4c-bm2-ss` of
  a build folder, starts `simple_switch_grpc --packet-in ipc://...` in a network namespace and
  runs `ptf --platform nn` (its default mode, packets over the nanomsg socket).
* **p4-guide's** `runptf.sh` suites (jafingerhut/p4-guide; not the ones that need p4testgen).
  Each script compiles a program, starts simple_switch_grpc on veth pairs and runs `ptf` on
  the other ends. Here each script is read for its three commands and run the same way but
  with the nn platform instead of veths (`--packet-in` for the switch, `--platform nn
  --device-socket` for PTF, the same port numbers), and on a free gRPC port: the test files,
  their parameters and p4-guide's testlib are used as they are.

Each runs twice: with real p4c-bm2-ss and simple_switch_grpc (the reference toolchain,
/opt/p4ref), and with `inaemu shims`' p4c-bm2-ss and simple_switch_grpc, so that inaemu compiles
and inaemu's switch runs. PTF runs in --ptf-python, a Python with `ptf`, `pynng`, `scapy` and
`p4runtime-shell` (`python3 -m venv V && V/bin/pip install ptf pynng scapy
p4runtime-shell==0.0.6`). Runs one at a time (root: p4c's harness makes namespaces). Exit status
1 when a test that passes on BMv2 fails on inaemu.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import re
import shlex
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
from dataclasses import asdict, dataclass, field
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

DEFAULT_P4C = Path("/work/.mirror/p4lang+p4c/repo")
DEFAULT_P4_GUIDE = Path("/work/.mirror/jafingerhut+p4-guide/repo")
P4C_FILES = ("backends/bmv2", "backends/ebpf/targets", "tools", "testdata/p4_16_samples")
P4C_HARNESS = "backends/bmv2/run-bmv2-ptf-test.py"
TIMEOUT_S = 600              # compiling; a suite's own limit is --timeout
START_TIMEOUT_S = 60
# unittest's verbose lines, as PTF prints them: "module.Class ... ok" (a test's own output may
# stand between the name and its verdict)
VERDICT = re.compile(r"^(?:WARNING: )?(\S+\.\S+) \.\.\. .*?\b(ok|FAIL|ERROR|skipped.*)$",
                     re.MULTILINE)
LATE_VERDICT = re.compile(r"^(?:WARNING: )?(ok|FAIL|ERROR)$")


@dataclass
class Run:
    """One suite on one target."""
    status: str                       # "pass", "fail", "timeout", "error" (could not run)
    tests: dict[str, str] = field(default_factory=dict)   # test -> ok / FAIL / ERROR / skipped
    reason: str = ""
    seconds: float = 0.0


@dataclass
class SuiteResult:
    name: str
    runs: dict[str, Run]


# -- reading the repositories -------------------------------------------------------------------
def extract(repo: Path, paths: tuple[str, ...], into: Path) -> Path:
    """A checkout's files, or a bare git directory's HEAD extracted into `into`."""
    if not (repo / "HEAD").is_file() or (repo / ".git").exists():
        return repo
    into.mkdir(parents=True, exist_ok=True)
    archive = subprocess.run(["git", f"--git-dir={repo}", "archive", "HEAD", *paths],
                             capture_output=True, check=True).stdout
    subprocess.run(["tar", "-x", "-C", str(into)], input=archive, check=True)
    return into


def _commands(script: str) -> list[list[str]]:
    """A shell script's simple commands, continuation lines joined, comments dropped."""
    text = re.sub(r"\\\n", " ", script)
    commands = []
    for line in text.splitlines():
        line = line.strip()
        if not line or line.startswith("#"):
            continue
        try:
            commands.append(shlex.split(line, comments=True))
        except ValueError:
            continue
    return commands


def _is_ptf(word: str) -> bool:
    """The word that runs PTF: `ptf`, a path to it, or the end of `` `which ptf` ``."""
    return word in ("ptf", "ptf`") or (word.endswith("/ptf") and "=" not in word)


@dataclass
class GuideSuite:
    """What a p4-guide runptf.sh does, read from it."""
    name: str
    folder: Path
    program: str
    p4info: str
    switch_options: list[str]        # simple_switch_grpc's, minus -i, with target options
    ports: list[int]
    test_params: str
    test_dir: str
    tests: list[str]                  # test names after PTF's options (usually none)


def read_runptf(path: Path, root: Path) -> GuideSuite | str:
    """The suite of one runptf.sh, or why it cannot run here."""
    commands = _commands(path.read_text())
    compile_ = next((c for c in commands if c and c[0] == "p4c"), None)
    switch = next((c for c in commands if "simple_switch_grpc" in c), None)
    # the run, not a `ptf --list` before it: the PTF command with test parameters, else the last
    runs = [c for c in commands if any(_is_ptf(w) for w in c)]
    ptf = next((c for c in runs if any(w.startswith("--test-params=") for w in c)),
               runs[-1] if runs else None)
    if any(c and c[0] == "p4testgen" for c in commands):
        return "needs p4testgen"
    if compile_ is None or switch is None or ptf is None:
        return "not the usual p4c / simple_switch_grpc / ptf script"
    p4info = compile_[compile_.index("--p4runtime-files") + 1]
    program = compile_[-1]
    options = switch[switch.index("simple_switch_grpc") + 1:]
    if options and options[-1] == "&":
        options = options[:-1]
    ports, kept, index = [], [], 0
    while index < len(options):
        word = options[index]
        if word in ("-i", "--interface"):
            ports.append(int(options[index + 1].split("@")[0]))
            index += 2
            continue
        kept.append(word)
        index += 1
    params, test_dir, tests, index = "", ".", [], 0
    words = ptf[next(i for i, w in enumerate(ptf) if _is_ptf(w)) + 1:]
    while index < len(words):
        word = words[index]
        if word.startswith("--test-params="):
            params = word.split("=", 1)[1]
        elif word in ("--test-dir", "--pypath", "-i", "--interface", "--log-file"):
            if word == "--test-dir":
                test_dir = words[index + 1]
            index += 2
            continue
        elif not word.startswith("-"):
            tests.append(word)
        index += 1
    folder = path.parent
    if not (folder / test_dir).is_dir():
        return f"its test folder {test_dir} is not in the repository (p4testgen writes it)"
    return GuideSuite(str(folder.relative_to(root)) + ("" if path.name == "runptf.sh" else
                                                       f"/{path.stem}"),
                      folder, program, p4info, kept, ports, params, test_dir, tests)


def guide_suites(root: Path) -> tuple[list[GuideSuite], dict[str, str]]:
    suites, skipped = [], {}
    for path in sorted(root.rglob("*runptf.sh")):
        relative = path.relative_to(root)
        if relative.parts[0] == "ipdk":
            continue                     # DPDK's target, not simple_switch_grpc
        suite = read_runptf(path, root)
        if isinstance(suite, str):
            skipped[str(relative)] = suite
        else:
            suites.append(suite)
    return suites, skipped


# -- running ------------------------------------------------------------------------------------
def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def wait_listening(port: int, process: subprocess.Popen, timeout_s: float) -> bool:
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        if process.poll() is not None:
            return False
        with socket.socket() as s:
            if s.connect_ex(("127.0.0.1", port)) == 0:
                return True
        time.sleep(0.1)
    return False


def verdicts(output: str) -> dict[str, str]:
    tests = {}
    pending = None
    for line in output.splitlines():
        match = VERDICT.match(line)
        if match:
            tests[match.group(1)] = match.group(2).split()[0]
            pending = None
            continue
        if " ... " in line:
            pending = line.split(" ... ")[0].removeprefix("WARNING: ").strip()
            continue
        late = LATE_VERDICT.match(line.strip())
        if pending and late:
            tests[pending] = late.group(1)
            pending = None
    return tests


def first_problem(output: str) -> str:
    for line in output.splitlines():
        text = line.removeprefix("WARNING: ").strip()
        if text.startswith(("AssertionError", "Error", "ERROR:", "FAIL:", "Exception")) or \
                "Error:" in text:
            return text[:300]
    return output.strip().splitlines()[-1][:300] if output.strip() else ""


def run_guide_suite(suite: GuideSuite, target: str, tools: dict, ptf_python: str,
                    testlib: Path, scratch: Path, timeout_s: float) -> Run:
    started = time.monotonic()
    work = scratch / target / suite.name.replace("/", "_")
    shutil.copytree(suite.folder, work, symlinks=True)
    stem = Path(suite.program).stem
    built = subprocess.run([str(tools["p4c-bm2-ss"]), "--target", "bmv2", "--arch", "v1model",
                            "--p4runtime-files", suite.p4info, suite.program,
                            "-o", f"{stem}.json"], cwd=work, capture_output=True, text=True,
                           timeout=TIMEOUT_S)
    if built.returncode != 0:
        return Run("error", reason="compile: " + first_problem(built.stderr + built.stdout),
                   seconds=time.monotonic() - started)
    grpc = free_port()
    address = f"ipc://{work}/packets.ipc"
    options = list(suite.switch_options)
    target_options = []
    if "--" in options:
        cut = options.index("--")
        options, target_options = options[:cut], options[cut + 1:]
    command = [str(tools["simple_switch_grpc"]), *options, "--packet-in", address,
               "--thrift-port", str(free_port()), "--notifications-addr",
               f"ipc://{work}/notifications.ipc", "--", *target_options,
               "--grpc-server-addr", f"0.0.0.0:{grpc}"]
    log = open(work / "switch-output.txt", "w")
    switch = subprocess.Popen(command, cwd=work, stdout=log, stderr=subprocess.STDOUT,
                              stdin=subprocess.DEVNULL, start_new_session=True)
    try:
        if not wait_listening(grpc, switch, START_TIMEOUT_S):
            log.flush()
            return Run("error", reason="switch did not start: " + first_problem(
                (work / "switch-output.txt").read_text()), seconds=time.monotonic() - started)
        params = re.sub(r"grpcaddr='[^']*'", f"grpcaddr='localhost:{grpc}'", suite.test_params)
        ports = ",".join(str(p) for p in suite.ports)
        ptf = [str(Path(ptf_python).with_name("ptf")), "--pypath", str(testlib),
               "--platform", "nn", "--device-socket", f"0-{{{ports}}}@{address}",
               f"--test-params={params}", "--test-dir", suite.test_dir,
               "--log-file", str(work / "ptf.log"), *suite.tests]
        return run_to_verdict(ptf, work, dict(os.environ), work / "ptf-output.txt", started,
                              timeout_s)
    finally:
        _stop(switch)
        log.close()


def run_p4c_sample(sample: Path, tree: Path, target: str, tools: dict, ptf_python: str,
                   scratch: Path, timeout_s: float) -> Run:
    """p4c's harness as p4c runs it, with the target's tools first on PATH."""
    started = time.monotonic()
    build = scratch / f"build-{target}"
    build.mkdir(parents=True, exist_ok=True)
    link = build / "p4c-bm2-ss"
    if not link.exists():
        link.symlink_to(tools["p4c-bm2-ss"])
    tree_link = scratch / f"p4c-{target}"
    if not tree_link.exists():           # the harness reads its compiler from ROOT/build
        tree_link.mkdir()
        for part in tree.iterdir():
            (tree_link / part.name).symlink_to(part)
        (tree_link / "build").symlink_to(build)
    work = scratch / target / f"p4c_{sample.stem}"
    (work / "test").mkdir(parents=True)
    path = os.pathsep.join([str(Path(tools["simple_switch_grpc"]).parent),
                            str(Path(ptf_python).parent), os.environ.get("PATH", "")])
    command = [ptf_python, str(tree / P4C_HARNESS), str(tree_link), str(sample),
               "-tf", str(sample.with_suffix(".py")), "-td", str(work / "test")]
    return run_to_verdict(command, work, {**os.environ, "PATH": path},
                          work / "harness-output.txt", started, timeout_s)


SUITE_TIMEOUT_S = 1800       # --timeout: p4-guide's lpmtester checks ~10,000 lookups


def run_to_verdict(command: list[str], cwd: Path, env: dict, output_file: Path,
                   started: float, timeout_s: float) -> Run:
    """Run a PTF command (or a harness around one) and read its verdicts; the output is kept
    in `output_file`. A pass needs exit status 0 and at least one test run."""
    try:
        done = subprocess.run(command, cwd=cwd, capture_output=True, text=True,
                              timeout=timeout_s, env=env, stdin=subprocess.DEVNULL)
    except subprocess.TimeoutExpired:
        return Run("timeout", reason=f"no verdict within {timeout_s:.0f} s",
                   seconds=time.monotonic() - started)
    output = done.stdout + done.stderr
    output_file.write_text(output)
    tests = verdicts(output)
    status = "pass" if done.returncode == 0 and tests else "fail"
    return Run(status, tests, "" if status == "pass" else first_problem(output),
               time.monotonic() - started)


def _stop(process: subprocess.Popen) -> None:
    if process.poll() is None:
        try:
            os.killpg(process.pid, signal.SIGTERM)
            process.wait(timeout=10)
        except (ProcessLookupError, subprocess.TimeoutExpired):
            os.killpg(process.pid, signal.SIGKILL)
            process.wait()


# -- the report ---------------------------------------------------------------------------------
def print_report(results: list[SuiteResult], skipped: dict[str, str], out=sys.stdout) -> int:
    worse = 0
    totals = {"bmv2": [0, 0], "inaemu": [0, 0]}
    for result in results:
        line = []
        for target, run in result.runs.items():
            ok = sum(v == "ok" for v in run.tests.values())
            totals[target][0] += ok
            totals[target][1] += len(run.tests)
            line.append(f"{target} {ok}/{len(run.tests)} ok" + (
                f" ({run.status}: {run.reason})" if run.status != "pass" else ""))
        print(f"  {result.name}: " + "; ".join(line), file=out)
        bmv2, inaemu = result.runs.get("bmv2"), result.runs["inaemu"]
        if bmv2 is not None:
            for test, verdict in bmv2.tests.items():
                if verdict == "ok" and inaemu.tests.get(test) != "ok":
                    worse += 1
                    print(f"    {test}: ok on BMv2, {inaemu.tests.get(test, 'not run')} on "
                          f"inaemu", file=out)
    for name, why in skipped.items():
        print(f"  {name}: skipped ({why})", file=out)
    summary = ", ".join(f"{t} {ok} of {n} tests ok" for t, (ok, n) in totals.items() if n or
                        t == "inaemu")
    print(f"PTF suites: {len(results)} run, {len(skipped)} skipped; {summary}; "
          f"{worse} ok on BMv2 but not on inaemu", file=out)
    return 1 if worse else 0


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--ptf-python", required=True,
                    help="a Python with ptf, pynng, scapy and p4runtime-shell")
    ap.add_argument("--p4-guide", type=Path, default=DEFAULT_P4_GUIDE,
                    help="a p4-guide checkout or bare git directory (default: %(default)s)")
    ap.add_argument("--p4c", type=Path, default=DEFAULT_P4C,
                    help="a p4c checkout or bare git directory (default: %(default)s)")
    ap.add_argument("--only", nargs="+", metavar="NAME", help="just the suites whose name "
                    "contains one of these")
    ap.add_argument("--no-bmv2", action="store_true", help="inaemu only")
    ap.add_argument("--json", type=Path, help="also write every result to this file")
    ap.add_argument("--timeout", type=float, default=SUITE_TIMEOUT_S, metavar="S",
                    help="seconds one suite may take on one target (%(default)s)")
    ap.add_argument("--keep", type=Path, metavar="DIR",
                    help="work in DIR (new) and keep it: each run's switch, PTF and harness "
                         "output")
    args = ap.parse_args(argv)

    from inaemu.shims import write_shims
    from p4switch.reference import find_toolchain
    probe = subprocess.run([args.ptf_python, "-c", "import ptf, pynng, scapy, p4runtime_sh"],
                           capture_output=True, text=True)
    if probe.returncode != 0:
        raise SystemExit(f"ptf_suites: {args.ptf_python} lacks ptf, pynng, scapy or "
                         f"p4runtime-shell: {probe.stderr.strip().splitlines()[-1]}")
    toolchain = find_toolchain()
    if toolchain is None and not args.no_bmv2:
        raise SystemExit("ptf_suites: no reference toolchain (/opt/p4ref); give --no-bmv2")
    results: list[SuiteResult] = []
    if args.keep is not None:
        args.keep.mkdir(parents=True)           # a new folder: nothing of an earlier run
        work_folder = contextlib.nullcontext(str(args.keep.absolute()))
    else:
        work_folder = tempfile.TemporaryDirectory(prefix="ptf-suites-")
    with work_folder as scratch_name:
        scratch = Path(scratch_name)
        shims = scratch / "shims"
        write_shims(shims)
        targets = {"inaemu": {"p4c-bm2-ss": shims / "p4c-bm2-ss",
                              "simple_switch_grpc": shims / "simple_switch_grpc"}}
        if not args.no_bmv2:
            targets = {"bmv2": {"p4c-bm2-ss": toolchain.p4c,
                                "simple_switch_grpc": toolchain.root / "bin/simple_switch_grpc"},
                       **targets}
        guide = extract(args.p4_guide, (".",), scratch / "p4-guide")
        suites, skipped = guide_suites(guide)
        p4c = extract(args.p4c, P4C_FILES, scratch / "p4c")
        samples = sorted(p.with_suffix(".p4")
                         for p in (p4c / "testdata/p4_16_samples").glob("*-bmv2.py")
                         if p.with_suffix(".p4").exists()
                         and "v1model.p4" in p.with_suffix(".p4").read_text())
        jobs = [(f"p4c/{s.stem}", "p4c", s) for s in samples] + \
               [(f"p4-guide/{s.name}", "guide", s) for s in suites]
        if args.only:
            jobs = [j for j in jobs if any(word in j[0] for word in args.only)]
        started = time.monotonic()
        for number, (name, kind, job) in enumerate(jobs, 1):
            runs = {}
            for target, tools in targets.items():
                if kind == "p4c":
                    runs[target] = run_p4c_sample(job, p4c, target, tools, args.ptf_python,
                                                  scratch, args.timeout)
                else:
                    runs[target] = run_guide_suite(job, target, tools, args.ptf_python,
                                                   guide / "testlib", scratch, args.timeout)
            results.append(SuiteResult(name, runs))
            print(f"{number}/{len(jobs)} {name}: " + ", ".join(
                f"{t} {r.status} {sum(v == 'ok' for v in r.tests.values())}/{len(r.tests)}"
                for t, r in runs.items()) + f" ({time.monotonic() - started:.0f} s)",
                file=sys.stderr, flush=True)
    if args.json:
        args.json.write_text(json.dumps([{"name": r.name, "runs": {t: asdict(x) for t, x in
                                                                   r.runs.items()}}
                                         for r in results], indent=1))
    return print_report(results, {f"p4-guide/{k}": v for k, v in skipped.items()})


if __name__ == "__main__":
    sys.exit(main())
