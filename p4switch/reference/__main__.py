"""`python -m p4switch.reference PROG.p4 TEST.stf [-D NAME=VALUE]...`: one program, four runs.

Compiles PROG.p4 with real p4c and with inaemu, runs TEST.stf on real simple_switch and on
inaemu's runtime with each JSON, and prints each outcome and how the targets differ. Exit status
0 when all four runs pass and agree, 1 otherwise, 2 when the toolchain is missing.
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
from pathlib import Path

from . import compare_outcomes, compile_p4, find_toolchain, run_stf_bmv2, run_stf_inaemu


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m p4switch.reference",
                                     description=__doc__.splitlines()[0])
    parser.add_argument("program", type=Path)
    parser.add_argument("stf", type=Path)
    parser.add_argument("-D", dest="defines", action="append", default=[], metavar="NAME=VALUE")
    args = parser.parse_args(argv)
    toolchain = find_toolchain()
    if toolchain is None:
        print("the reference toolchain is not installed (/opt/p4ref)", file=sys.stderr)
        return 2
    defines = dict(d.partition("=")[::2] for d in args.defines)
    outcomes = {}
    built = compile_p4(toolchain, args.program, defines=defines)
    print(f"p4c: {'ok' if built.ok else 'REFUSED'} ({built.seconds:.2f} s)")
    if not built.ok:
        print(built.stderr.strip())
    else:
        outcomes["bmv2 / p4c JSON"] = run_stf_bmv2(built.json_path, args.stf, toolchain=toolchain)
        outcomes["inaemu / p4c JSON"] = run_stf_inaemu(built.json_path, args.stf)
    from p4switch.compiler import CompileError, compile_file
    try:
        config = compile_file(str(args.program), defines=defines).bmv2
    except CompileError as exc:
        print(f"inaemu compile: REFUSED\n{exc}")
    else:
        path = Path(tempfile.mkdtemp(prefix="inaemu-ref-")) / f"{args.program.stem}.json"
        path.write_text(json.dumps(config))
        outcomes["bmv2 / inaemu JSON"] = run_stf_bmv2(path, args.stf, toolchain=toolchain)
        outcomes["inaemu / inaemu JSON"] = run_stf_inaemu(config, args.stf)
    for label, outcome in outcomes.items():
        verdict = "ERROR" if outcome.error else "PASS" if outcome.passed else "FAIL"
        print(f"\n== {label}: {verdict} ({outcome.seconds * 1000:.0f} ms)")
        if not outcome.passed:
            print(outcome.report)
    agree = True
    for label in ("p4c JSON", "inaemu JSON"):
        real, mine = outcomes.get(f"bmv2 / {label}"), outcomes.get(f"inaemu / {label}")
        if real and mine:
            differences = compare_outcomes(real, mine)
            agree &= not differences
            print(f"\n{label}: simple_switch and inaemu "
                  + ("agree" if not differences else "differ:\n" + "\n".join(differences)))
    ok = built.ok and len(outcomes) == 4 and all(o.passed for o in outcomes.values()) and agree
    return 0 if ok else 1


if __name__ == "__main__":
    raise SystemExit(main())
