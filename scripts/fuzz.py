"""Coverage-guided fuzzing of inaemu's inputs with atheris (docs/fuzzing.md).

    .venv/bin/python scripts/fuzz.py TARGET --minutes M [--corpus DIR] [--jobs-dir DIR]
    .venv/bin/python scripts/fuzz.py --all --minutes M      # each target in turn, M minutes each
    .venv/bin/python scripts/fuzz.py --seed                 # (re)write the seed corpus
    .venv/bin/python scripts/fuzz.py --list

Needs the `fuzz` extra (`pip install -e '.[fuzz]'`: atheris). Each target runs in a child
process (libFuzzer exits the process at the end) under `nice`, with its corpus in
fuzz/corpus/TARGET/ (new inputs that reach new coverage are added there) and crashing inputs
written to out/fuzz/TARGET/ (crash-*, timeout-*, oom-*). At the end it prints one line per
target: minutes, executions, executions per second, coverage (libFuzzer's `cov`: edges of the
instrumented Python code; `ft`: features), corpus size and the crashes found. Replay a crash
with `python scripts/fuzz.py TARGET --replay FILE` (no atheris needed): the traceback.
"""

from __future__ import annotations

import argparse
import os
import re
import resource
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from fuzz.targets import TARGETS, corpus_dir, harness  # noqa: E402

# the project's packages: what atheris instruments for coverage
INSTRUMENTED = ["p4switch", "hosts", "controller", "inaemu", "fuzz"]
MAX_LEN = {"frontend": 16384, "bmv2_json": 32768, "stf": 8192}
# the packet targets run generated code (exec'd, not imported): its functions are instrumented
# one by one after set-up (fuzz.common.generated_functions)
GENERATED_CODE = {"packet_ina", "packet_l3", "packet_clone", "packet_recirc"}
STATS = re.compile(r"#(\d+)\s+\w+\s+cov: (\d+) ft: (\d+) corp: (\d+)/(\S+)")


def child(target: str, libfuzzer_args: list[str]) -> None:
    """Run inside the child: instrument, warm up on the corpus, hand over to libFuzzer."""
    import atheris

    with atheris.instrument_imports(include=INSTRUMENTED):
        test_one_input = harness(target)
        # the modules harnesses import lazily (compiler stages, server) come in here too
        for seed in sorted(corpus_dir(target).glob("*"))[:3]:
            try:
                test_one_input(seed.read_bytes())
            except Exception:   # noqa: BLE001 - libFuzzer reports it again, with the input
                pass
    if target in GENERATED_CODE:
        from fuzz.common import generated_functions

        functions = generated_functions()
        for function in functions:
            atheris.instrument_func(function)
        print(f"INFO: instrumented {len(functions)} generated packet-code functions",
              file=sys.stderr, flush=True)
    # libFuzzer runs argv[0] again for -merge (and -fork): run_target's rerun.sh comes back here
    atheris.Setup([os.environ.get("INAEMU_FUZZ_RERUN", sys.argv[0]), *libfuzzer_args],
                  test_one_input)
    atheris.Fuzz()


def _rerun_command(target: str, artifacts: Path) -> Path:
    """An executable that runs the child again with the arguments libFuzzer gives it: libFuzzer
    runs its argv[0] again for -merge (and -fork), and argv[0] is otherwise this script."""
    path = artifacts / "rerun.sh"
    path.write_text(f'#!/bin/sh\nexec "{sys.executable}" "{Path(__file__).resolve()}" '
                    f'--child {target} -- "$@"\n')
    path.chmod(0o755)
    return path


def run_target(target: str, minutes: float, corpus: Path, artifacts: Path,
               extra: list[str]) -> dict:
    corpus.mkdir(parents=True, exist_ok=True)
    artifacts.mkdir(parents=True, exist_ok=True)
    args = [str(corpus), f"-max_total_time={max(1, int(minutes * 60))}",
            f"-artifact_prefix={artifacts}/", "-print_final_stats=1", "-timeout=20",
            "-rss_limit_mb=3072", f"-max_len={MAX_LEN.get(target, 4096)}", *extra]
    command = ["nice", "-n", "19", sys.executable, __file__, "--child", target, "--", *args]
    env = dict(os.environ, INAEMU_FUZZ_RERUN=str(_rerun_command(target, artifacts)))
    log_path = artifacts / "fuzz.log"
    start = time.monotonic()
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    with open(log_path, "w") as log:
        code = subprocess.call(command, stdout=log, stderr=subprocess.STDOUT, cwd=ROOT, env=env)
    elapsed = time.monotonic() - start
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu_s = (after.ru_utime + after.ru_stime) - (before.ru_utime + before.ru_stime)
    text = log_path.read_text(errors="replace")
    last = STATS.findall(text)
    execs = re.search(r"stat::number_of_executed_units: (\d+)", text)
    result = {
        "target": target, "minutes": elapsed / 60, "cpu_minutes": cpu_s / 60, "exit": code,
        "execs": int(execs.group(1)) if execs else (int(last[-1][0]) if last else 0),
        "cov": int(last[-1][1]) if last else 0, "ft": int(last[-1][2]) if last else 0,
        "corpus": len(list(corpus.iterdir())),
        "crashes": sorted(p.name for p in artifacts.iterdir()
                          if p.name.startswith(("crash-", "timeout-", "oom-", "leak-"))),
        "log": str(log_path),
    }
    result["execs_per_s"] = result["execs"] / max(elapsed, 1e-9)
    return result


def show(result: dict) -> None:
    crashes = ", ".join(result["crashes"]) or "none"
    print(f"{result['target']:14} {result['minutes']:6.1f} min ({result['cpu_minutes']:.1f} CPU)  "
          f"{result['execs']:>9} execs "
          f"{result['execs_per_s']:8.1f}/s  cov {result['cov']:>6}  ft {result['ft']:>7}  "
          f"corpus {result['corpus']:>5}  exit {result['exit']}  crashes: {crashes}  "
          f"(log {result['log']})", flush=True)


def write_seeds() -> None:
    from fuzz.seeds import SEEDS

    for target, make in SEEDS.items():
        directory = corpus_dir(target)
        directory.mkdir(parents=True, exist_ok=True)
        for index, data in enumerate(make()):
            (directory / f"seed-{index:02d}").write_bytes(data)
        print(f"{target}: {len(list(directory.iterdir()))} files")


def replay(target: str, path: Path) -> None:
    harness(target)(path.read_bytes())
    print(f"{target}: {path} passes (nothing escaped)")


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    if argv[:1] == ["--child"]:
        child(argv[1], argv[3:] if argv[2:3] == ["--"] else argv[2:])
        return 0
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("target", nargs="?", choices=sorted(TARGETS))
    parser.add_argument("--all", action="store_true", help="every target in turn")
    parser.add_argument("--minutes", type=float, default=1.0, help="per target")
    parser.add_argument("--corpus", type=Path, help="corpus directory (one target only)")
    parser.add_argument("--out", type=Path, default=ROOT / "out" / "fuzz",
                        help="crash artifacts and logs, per target")
    parser.add_argument("--seed", action="store_true", help="write the seed corpus")
    parser.add_argument("--list", action="store_true")
    parser.add_argument("--replay", type=Path, help="run one input through the harness")
    # after `--`: more libFuzzer flags, split off here (argparse would have matched its
    # optional positional TARGET first and refused them)
    split = argv.index("--") if "--" in argv else len(argv)
    argv, libfuzzer = argv[:split], argv[split + 1:]
    options = parser.parse_args(argv)
    options.libfuzzer = libfuzzer
    if options.list:
        print("\n".join(TARGETS))
        return 0
    if options.seed:
        write_seeds()
        return 0
    if options.replay:
        if not options.target:
            parser.error("--replay needs a TARGET")
        replay(options.target, options.replay)
        return 0
    targets = list(TARGETS) if options.all else [options.target] if options.target else []
    if not targets:
        parser.error("give a TARGET or --all")
    if options.corpus and len(targets) > 1:
        parser.error("--corpus is for one target")
    try:
        import atheris  # noqa: F401
    except ImportError:
        print("atheris is not installed: pip install -e '.[fuzz]' (docs/fuzzing.md)",
              file=sys.stderr)
        return 2
    results = []
    for target in targets:
        result = run_target(target, options.minutes, options.corpus or corpus_dir(target),
                            options.out / target, options.libfuzzer)
        show(result)
        results.append(result)
    return 1 if any(r["crashes"] for r in results) else 0


if __name__ == "__main__":
    sys.exit(main())
