"""The p4lang tutorials' mri and ecn exercises on real BMv2 and on inaemu, side by side.

    flock /tmp/inaemu-mininet.lock .venv/bin/python scripts/tutorial_queues.py \
        [--tutorials DIR] [--exercises mri,ecn] [--targets bmv2,inaemu] [--runs 1] [--keep DIR]

Both exercises put a 512 kbit/s link between s1 and s2 and send a low-rate flow (h1 -> h2,
send.py, one packet a second for 30 s) beside a UDP iperf (h11 -> h22, 1 Mbit/s for 15 s), as
their READMEs say. What h2 receives shows the queue at s1's port towards s2: mri's packets
carry the deq_qdepth each switch saw (the maximum at s1 is printed), ecn's are marked (tos 0x3)
when s1's enq_qdepth reached 10 (the share of marked packets is printed). Real BMv2 is
/opt/p4ref/bin's p4c-bm2-ss and simple_switch_grpc; inaemu runs through `inaemu shims`
(docs/tutorials.md). The exercises' own solution programs are compiled.

DIR (default: a git archive of /work/.mirror/p4lang+tutorials/repo) is a p4lang/tutorials
checkout with `exercises/` and `utils/`; its run_exercise.py builds the Mininet network, so
this needs root, Mininet, and a Python with Mininet, grpc and scapy (inaemu's venv has them).
Mininet owns the machine's switches while it runs: run this under the machine's Mininet lock,
as above. Each (exercise, target) run is a fresh process.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
REF = Path("/opt/p4ref/bin")
MIRROR = Path("/work/.mirror/p4lang+tutorials/repo")
PROBE_COUNT = 30          # send.py's packets: one a second for 30 s (the READMEs' numbers)
IPERF_SECONDS = 15


def parse_args(argv: list[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--tutorials", type=Path, help="a p4lang/tutorials checkout")
    parser.add_argument("--exercises", default="mri,ecn")
    parser.add_argument("--targets", default="bmv2,inaemu")
    parser.add_argument("--runs", type=int, default=1, help="runs per exercise and target")
    parser.add_argument("--keep", type=Path, help="keep every run's directory under here")
    parser.add_argument("--one", nargs=3, metavar=("EXERCISE", "TARGET", "DIR"),
                        help=argparse.SUPPRESS)          # one run, in its own process
    args = parser.parse_args(argv)
    for exercise in args.exercises.split(","):
        if exercise not in ("mri", "ecn"):
            parser.error(f"--exercises: unknown exercise {exercise!r} (mri, ecn)")
    for target in args.targets.split(","):
        if target not in ("bmv2", "inaemu"):
            parser.error(f"--targets: unknown target {target!r} (bmv2, inaemu)")
    if args.runs < 1:
        parser.error("--runs must be at least 1")
    return args


def tutorials_copy(given: Path | None, into: Path) -> Path:
    """A checkout with exercises/ and utils/: `given`, or extracted from the mirror."""
    if given is not None:
        if not (given / "exercises").is_dir() or not (given / "utils").is_dir():
            sys.exit(f"--tutorials {given}: no exercises/ and utils/ there")
        return given
    if not MIRROR.exists():
        sys.exit(f"no tutorials checkout: give --tutorials DIR ({MIRROR} does not exist)")
    archive = subprocess.run(["git", "-C", str(MIRROR), "archive", "HEAD", "exercises", "utils"],
                             check=True, capture_output=True).stdout
    subprocess.run(["tar", "-x", "-C", str(into)], input=archive, check=True)
    return into


def tools(target: str, shims: Path) -> tuple[str, str]:
    """(compiler, switch) command paths for `target`."""
    if target == "bmv2":
        if not (REF / "simple_switch_grpc").exists():
            sys.exit(f"real BMv2 is not installed ({REF})")
        return str(REF / "p4c-bm2-ss"), str(REF / "simple_switch_grpc")
    if not (shims / "simple_switch_grpc").exists():
        inaemu = Path(sys.executable).with_name("inaemu")
        subprocess.run([str(inaemu), "shims", str(shims)], check=True, capture_output=True)
    return str(shims / "p4c-bm2-ss"), str(shims / "simple_switch_grpc")


def prepare(tutorials: Path, exercise: str, target: str, shims: Path, workdir: Path) -> Path:
    """The exercise's directory copied to `workdir`, its solution compiled by `target`'s
    compiler as the tutorials' Makefile does."""
    source = tutorials / "exercises" / exercise
    run_dir = workdir / exercise
    shutil.copytree(source, run_dir)
    shutil.copy(source / "solution" / f"{exercise}.p4", run_dir / f"{exercise}.p4")
    for name in ("build", "logs", "pcaps"):
        (run_dir / name).mkdir(exist_ok=True)
    compiler, _ = tools(target, shims)
    subprocess.run([compiler, "--p4v", "16", "--p4runtime-files",
                    f"build/{exercise}.p4.p4info.txtpb", "-o", f"build/{exercise}.json",
                    f"{exercise}.p4"], cwd=run_dir, check=True)
    return run_dir


# -- one run (in its own process, as root) ------------------------------------------------------
def run_one(exercise: str, target: str, run_dir: Path, shims: Path) -> dict:
    """Start the exercise's network, drive the READMEs' traffic, return what h2 received."""
    sys.path.insert(0, str(run_dir.parents[0] / "utils"))
    legacy_protos()
    from run_exercise import ExerciseRunner      # the tutorials' own runner (Mininet)

    _, switch = tools(target, shims)
    os.chdir(run_dir)
    runner = ExerciseRunner("topology.json", "logs", "pcaps", f"build/{exercise}.json",
                            switch, quiet=True)
    runner.create_network()
    runner.net.start()
    try:
        time.sleep(1)
        runner.program_hosts()
        runner.program_switches()
        time.sleep(1)
        return drive(runner.net, run_dir)
    finally:
        runner.net.stop()


def legacy_protos() -> None:
    """The tutorials' p4runtime_lib wraps the JSON in `p4.tmp.P4DeviceConfig`, which the p4runtime
    package on PyPI lacks; PI installs it beside BMv2 (/opt/p4ref): take it from there."""
    try:
        import p4.tmp.p4config_pb2  # noqa: F401
        return
    except ImportError:
        pass
    import p4
    for extra in sorted(REF.parent.glob("lib/python3*/site-packages/p4")):
        if (extra / "tmp" / "p4config_pb2.py").exists():
            p4.__path__.append(str(extra))
            return
    sys.exit("the tutorials' p4runtime_lib needs p4.tmp.p4config_pb2 (PI's Python protos)")


def drive(net, run_dir: Path) -> dict:
    python = sys.executable
    h1, h11, h2, h22 = (net.get(name) for name in ("h1", "h11", "h2", "h22"))
    received = open(run_dir / "h2.log", "w")
    receiver = h2.popen([python, "receive.py"], stdout=received, stderr=subprocess.STDOUT,
                        cwd=str(run_dir))
    iperf_server = h22.popen(["iperf", "-s", "-u"], stdout=subprocess.DEVNULL,
                             stderr=subprocess.DEVNULL)
    try:
        deadline = time.monotonic() + 60
        while "sniffing on" not in (run_dir / "h2.log").read_text():
            if receiver.poll() is not None or time.monotonic() > deadline:
                raise RuntimeError("h2's receive.py did not start: "
                                   + (run_dir / "h2.log").read_text()[-2000:])
            time.sleep(0.2)
        time.sleep(0.5)
        sender = h1.popen([python, "send.py", "10.0.2.2", "P4 is cool", str(PROBE_COUNT)],
                          stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, cwd=str(run_dir))
        time.sleep(1.0)           # send.py imports scapy first: let its first packet go
        iperf = h11.popen(["iperf", "-c", "10.0.2.22", "-t", str(IPERF_SECONDS), "-u"],
                          stdout=subprocess.PIPE, stderr=subprocess.STDOUT)
        iperf_out, _ = iperf.communicate(timeout=IPERF_SECONDS + 60)
        _, sender_err = sender.communicate(timeout=PROBE_COUNT + 60)
        if sender.returncode:
            raise RuntimeError(f"send.py failed: {sender_err.decode()[-2000:]}")
        time.sleep(3)             # the last packets cross the link
    finally:
        for process in (receiver, iperf_server):
            process.terminate()
            process.wait(timeout=20)
        received.close()
    return {"h2": (run_dir / "h2.log").read_text(), "iperf": iperf_out.decode(errors="replace")}


# -- what h2 saw --------------------------------------------------------------------------------
def mri_max_qdepth(h2_log: str, switch_id: int = 1) -> tuple[int, int]:
    """(largest qdepth switch `switch_id` recorded, packets received)."""
    packets = h2_log.count("got a packet")
    depths = [int(depth) for swid, depth in
              re.findall(r"swid\s*=\s*(\d+)[\s|]+qdepth\s*=\s*(\d+)", h2_log)
              if int(swid) == switch_id]
    return (max(depths) if depths else 0), packets


def ecn_marked_share(h2_log: str) -> tuple[float, int]:
    """(share of received packets with ECN 3, packets received)."""
    tos = [int(value, 16) for value in re.findall(r"\btos\s*=\s*0x([0-9a-fA-F]+)", h2_log)]
    if not tos:
        return 0.0, 0
    return sum(value & 3 == 3 for value in tos) / len(tos), len(tos)


def measure(exercise: str, h2_log: str) -> dict:
    if exercise == "mri":
        value, packets = mri_max_qdepth(h2_log)
        return {"value": value, "packets": packets}
    value, packets = ecn_marked_share(h2_log)
    return {"value": value, "packets": packets}


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    if args.one:
        exercise, target, directory = args.one
        directory = Path(directory)
        result = run_one(exercise, target, directory / exercise, directory.parent / "shims")
        print("RESULT " + json.dumps(measure(exercise, result["h2"])), flush=True)
        return 0
    if os.geteuid() != 0:
        sys.exit("Mininet needs root")
    base = Path(tempfile.mkdtemp(prefix="tutorial-queues-"))
    try:
        tutorials = tutorials_copy(args.tutorials, base)
        rows = []
        for exercise in args.exercises.split(","):
            for target in args.targets.split(","):
                for run in range(args.runs):
                    workdir = base / f"{exercise}-{target}-{run}"
                    workdir.mkdir()
                    # run_one finds utils/ beside the exercise's directory
                    shutil.copytree(tutorials / "utils", workdir / "utils")
                    prepare(tutorials, exercise, target, base / "shims", workdir)
                    done = subprocess.run([sys.executable, __file__, "--one", exercise, target,
                                           str(workdir)], capture_output=True, text=True,
                                          timeout=600)
                    line = [line for line in done.stdout.splitlines()
                            if line.startswith("RESULT ")]
                    if done.returncode or not line:
                        print(done.stdout[-3000:], done.stderr[-3000:], file=sys.stderr)
                        sys.exit(f"{exercise} on {target} failed ({done.returncode})")
                    got = json.loads(line[-1][len("RESULT "):])
                    rows.append((exercise, target, run, got))
                    print(f"{exercise} {target} run {run}: {got}", flush=True)
                    if args.keep:
                        shutil.copytree(workdir, args.keep / workdir.name, dirs_exist_ok=True)
        print_table(rows)
    finally:
        shutil.rmtree(base, ignore_errors=True)
    return 0


def print_table(rows: list) -> None:
    """Every run's figure per exercise and target, their means, and inaemu's mean over BMv2's."""
    labels = {"mri": "mri: max qdepth at s1", "ecn": "ecn: share of h1's packets marked"}
    print()
    print(f"{'':36} {'real BMv2':>20} {'inaemu':>20} {'inaemu/BMv2':>12}")
    for exercise, label in labels.items():
        values = {target: [got["value"] for ex, tg, _, got in rows if ex == exercise and
                           tg == target] for target in ("bmv2", "inaemu")}
        if not any(values.values()):
            continue
        shown = "{:.2f}" if exercise == "ecn" else "{}"
        means = {t: sum(v) / len(v) for t, v in values.items() if v}
        cells = [" ".join(shown.format(v) for v in values[t]) or "-" for t in ("bmv2", "inaemu")]
        ratio = (f"{means['inaemu'] / means['bmv2']:.2f}"
                 if means.get("bmv2") and "inaemu" in means else "-")
        print(f"{label:36} {cells[0]:>20} {cells[1]:>20} {ratio:>12}")
        if len(values["bmv2"]) > 1 or len(values["inaemu"]) > 1:
            mean_cells = [f"{means[t]:.2f}" if t in means else "-" for t in ("bmv2", "inaemu")]
            print(f"{'  mean':36} {mean_cells[0]:>20} {mean_cells[1]:>20}")


if __name__ == "__main__":
    sys.exit(main())
