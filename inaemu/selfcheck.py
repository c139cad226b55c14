"""`inaemu selfcheck`: prove the P4 tool chain on this machine, program by program.

It compiles every P4 program the project ships (`p4src/`, `tests/p4/`) with inaemu's front end,
loads the BMv2 JSON into the runtime, and runs each program's STF packet test; the project's
hand-written BMv2 JSON fixtures (`tests/bmv2/`) run unchanged. It prints a line per program as it
goes and a summary: a quick way to see that the switch does what the programs say.

Where the reference toolchain is installed (`/opt/p4ref`, see docs/reference.md), the JSON of every
program also runs its STF test on real simple_switch, and the outcome must be the same packets and
counter values as on inaemu's runtime; a disagreement (or a JSON simple_switch refuses) fails the
selfcheck. `--no-reference` skips that part.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from dataclasses import dataclass
from pathlib import Path

PROJECT_ROOT = Path(__file__).resolve().parent.parent


@dataclass(frozen=True)
class Case:
    """One program and its STF test; `source` is a .p4 (compiled first) or a BMv2 .json."""

    name: str
    source: Path
    stf: Path


@dataclass
class Outcome:
    case: Case
    status: str  # "pass", "fail" or "error"
    detail: str
    packets: int = 0
    compile_s: float = 0.0
    run_s: float = 0.0
    config: dict | None = None      # the BMv2 JSON that ran (for the reference check)


def discover(root: Path) -> list[Case]:
    """Every shipped program with an STF test beside it, in a stable order."""
    cases = []
    for folder in ("p4src", "tests/p4"):
        for p4 in sorted((root / folder).glob("*.p4")):
            stf = p4.with_suffix(".stf")
            if stf.is_file():
                cases.append(Case(f"{folder}/{p4.stem}", p4, stf))
    for program in sorted((root / "tests" / "bmv2").glob("*/*.json")):
        stf = program.with_suffix(".stf")
        if stf.is_file():
            cases.append(Case(f"tests/bmv2/{program.stem}", program, stf))
    return cases


def run_case(case: Case) -> Outcome:
    """Compile (if P4), load and run one STF test; every failure becomes an Outcome, not a raise."""
    from p4switch.runtime import Switch
    from p4switch.runtime.errors import P4SwitchError
    from p4switch.stf import StfError, parse_stf_file
    from p4switch.stf.report import format_report
    from p4switch.stf.runner import StfRunner

    started = time.perf_counter()
    try:
        if case.source.suffix == ".p4":
            from p4switch.compiler import CompileError, compile_file

            try:
                config = compile_file(str(case.source)).bmv2
            except CompileError as exc:
                return Outcome(case, "error", f"compile error:\n{exc}")
        else:
            config = json.loads(case.source.read_text(encoding="utf-8"))
        compiled = time.perf_counter()
        test = parse_stf_file(case.stf)
        result = StfRunner(Switch(config), config).run(test)
    except (StfError, P4SwitchError, OSError, ValueError) as exc:
        return Outcome(case, "error", str(exc))
    finished = time.perf_counter()
    packets = test.packet_count
    status = "pass" if result.passed else "fail"
    detail = "" if result.passed else format_report(result)
    return Outcome(case, status, detail, packets, compiled - started, finished - compiled, config)


def reference_verdict(outcome: Outcome, toolchain) -> tuple[bool, str]:
    """(agrees, one line) for the same JSON and STF on real simple_switch vs inaemu's runtime."""
    import tempfile

    from p4switch.reference import compare_outcomes, run_stf_bmv2, run_stf_inaemu

    with tempfile.TemporaryDirectory(prefix="inaemu-selfcheck-") as work:
        path = Path(work) / f"{outcome.case.source.stem}.json"
        path.write_text(json.dumps(outcome.config))
        real = run_stf_bmv2(path, outcome.case.stf, toolchain=toolchain)
    if real.error:
        return False, "real simple_switch: " + real.error.replace("\n", "\n      ")
    differences = compare_outcomes(real, run_stf_inaemu(outcome.config, outcome.case.stf))
    if differences:
        return False, "real simple_switch DISAGREES:\n      " + "\n".join(
            differences).replace("\n", "\n      ")
    verdict = "passes" if real.passed else "fails"
    return True, f"real simple_switch agrees ({verdict} the STF, {real.seconds * 1000:.0f} ms)"


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--root", type=Path, default=PROJECT_ROOT,
                        help="project folder to take programs from (default: this checkout)")
    parser.add_argument("-k", dest="pattern", default="",
                        help="only programs whose name contains this text")
    parser.add_argument("--no-reference", action="store_true",
                        help="do not also run the programs on real simple_switch (/opt/p4ref)")


def run(args: argparse.Namespace) -> int:
    cases = [c for c in discover(args.root) if args.pattern in c.name]
    if not cases:
        print(f"inaemu selfcheck: no programs with STF tests found under {args.root}", file=sys.stderr)
        return 2
    print(f"inaemu selfcheck: compiling and packet-testing {len(cases)} P4 programs on the embedded switch")
    toolchain = None
    if not getattr(args, "no_reference", False):
        from p4switch.reference import find_toolchain
        toolchain = find_toolchain()
        if toolchain is not None:
            print(f"and comparing each with real simple_switch ({toolchain.simple_switch})")
    outcomes = []
    disagreements = 0
    for i, case in enumerate(cases, 1):
        outcome = run_case(case)
        outcomes.append(outcome)
        timing = f"compile {outcome.compile_s * 1000:6.0f} ms, run {outcome.run_s * 1000:6.0f} ms"
        print(f"[{i:2d}/{len(cases)}] {outcome.status.upper():5s} {case.name:40s} "
              f"{outcome.packets:3d} packets  {timing}", flush=True)
        if outcome.detail:
            print("      " + outcome.detail.replace("\n", "\n      "))
        if toolchain is not None and outcome.config is not None:
            agrees, line = reference_verdict(outcome, toolchain)
            disagreements += not agrees
            print(f"      {line}", flush=True)
    passed = sum(o.status == "pass" for o in outcomes)
    packets = sum(o.packets for o in outcomes)
    print(f"\nsummary: {passed}/{len(outcomes)} programs pass, {packets} packets checked")
    if toolchain is not None:
        checked = sum(o.config is not None for o in outcomes)
        print(f"real simple_switch: {checked - disagreements}/{checked} programs agree")
    return 0 if passed == len(outcomes) and not disagreements else 1
