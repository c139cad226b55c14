#!/usr/bin/env python3
"""BMv2's own CLI tests (targets/simple_switch/tests/CLI_tests), run on inaemu's switch.

    .venv/bin/python scripts/bmv2_cli_tests.py [BMV2] [--no-bmv2]

BMv2 checks its runtime CLI with command files (`testdata/NAME.in`) whose expected output it
keeps (`testdata/NAME.out`), each test a `NAME.test` script naming the JSON the switch loads and
any extra CLI arguments. This runs every one as BMv2's runner (`run_one_test.py`) does: the
switch loads the JSON, BMv2's generic CLI (`runtime_CLI`, the toolchain's `bm_CLI`) reads the
commands, and the output, split at each prompt, must equal the expected output split at its
`????` markers, piece by piece. The switch is `inaemu switch --thrift-port 0`, and, unless
--no-bmv2, real simple_switch too, side by side. BMV2 is a BMv2 checkout or a bare git
directory of one (default: the `fetch` mirror, /work/.mirror/p4lang+behavioral-model/repo). Exit
status 1 when a test fails on inaemu. BMv2's files are only read, never copied here.
"""

from __future__ import annotations

import argparse
import re
import subprocess
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

DEFAULT_BMV2 = Path("/work/.mirror/p4lang+behavioral-model/repo")
TESTS = "targets/simple_switch/tests/CLI_tests"
RUN_LINE = re.compile(r"run_one_test\.py\s+\S+\s+(\S+)\s+(\S+)(.*)$", re.MULTILINE)


def tests_folder(bmv2: Path, scratch: Path) -> Path:
    if (bmv2 / TESTS).is_dir():
        return bmv2 / TESTS
    from p4c_acceptance import extract_tree
    if not (bmv2 / "HEAD").is_file():
        raise SystemExit(f"bmv2_cli_tests: {bmv2} is neither a BMv2 checkout nor a git directory")
    return extract_tree(bmv2, scratch) / TESTS


def pieces(text: str, marker: str) -> list[str]:
    """BMv2's runner's split: what lies between one marker and the next."""
    return re.findall(f"{marker}(.*?)(?={marker})", text, re.DOTALL)


def verdict(output: str, expected: str) -> tuple[bool, str]:
    got = pieces(output[output.find("RuntimeCmd: "):], "RuntimeCmd: ")
    want = pieces(expected, r"\?\?\?\?\n")
    if len(got) != len(want):
        return False, f"{len(got)} answers, {len(want)} expected"
    for i, (g, w) in enumerate(zip(got, want)):
        if g != w:
            return False, f"answer {i + 1}: got {g[:120]!r}, expected {w[:120]!r}"
    return True, ""


def cli_output(toolchain, port: int, commands: Path, extra: list[str]) -> str:
    cli = toolchain.root / "bin" / "bm_CLI"
    with commands.open() as stdin:
        done = subprocess.run([str(cli), "--thrift-port", str(port), *extra], stdin=stdin,
                              capture_output=True, text=True, timeout=120)
    return done.stdout


def run_on(target: str, toolchain, json_path: Path, commands: Path, extra: list[str]) -> str:
    from p4switch.reference.cli_transcript import serve_bmv2, serve_inaemu
    serve = serve_inaemu if target == "inaemu" else serve_bmv2
    with serve(toolchain, json_path) as port:
        return cli_output(toolchain, port, commands, extra)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("bmv2", nargs="?", type=Path, default=DEFAULT_BMV2)
    ap.add_argument("--no-bmv2", action="store_true", help="inaemu only")
    args = ap.parse_args(argv)
    from p4switch.reference import find_toolchain
    from p4switch.reference.cli_transcript import TranscriptError
    toolchain = find_toolchain()
    if toolchain is None:
        raise SystemExit("bmv2_cli_tests: needs BMv2's CLI from the reference toolchain")
    targets = ["inaemu"] + ([] if args.no_bmv2 else ["bmv2"])
    failed = 0
    with tempfile.TemporaryDirectory(prefix="bmv2-cli-tests-") as scratch:
        folder = tests_folder(args.bmv2, Path(scratch))
        tests = sorted(folder.glob("*.test"))
        for test in tests:
            match = RUN_LINE.search(test.read_text())
            if match is None:
                continue
            name, json_name, extra = match.group(1), match.group(2), match.group(3).split()
            data = folder / "testdata"
            expected = (data / f"{name}.out").read_text()
            line = [name]
            for target in targets:
                try:
                    output = run_on(target, toolchain, data / json_name, data / f"{name}.in",
                                    extra)
                    ok, why = verdict(output, expected)
                except TranscriptError as error:
                    ok, why = False, " ".join(str(error).split())[:300]
                line.append(f"{target} {'pass' if ok else 'FAIL: ' + why}")
                failed += target == "inaemu" and not ok
            print(": ".join(line[:1]) + ": " + ", ".join(line[1:]), flush=True)
        print(f"BMv2's CLI tests: {len(tests) - failed} of {len(tests)} pass on inaemu")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
