#!/usr/bin/env python3
"""Other people's simple_switch_CLI command files, on real simple_switch and on inaemu's switch.

    .venv/bin/python scripts/cli_transcripts.py --tree DIR [-j 2] [--show NAME]

Projects that configure BMv2 over Thrift keep a command file per switch (p4-learning's
`s1-commands.txt`, given as `cli_input` in its network.py or p4app.json). This finds every
(program, command file) pair under DIR (a folder, or a bare git directory as `fetch` makes, read
from HEAD), compiles the program with real p4c, runs the command file through BMv2's
simple_switch_CLI against real simple_switch and against `inaemu switch --thrift-port` on the
same JSON, and compares the two transcripts (p4switch/reference/cli_transcript.py). A pair is
"same", "differs" (the first differing line is shown; `--show NAME` prints both in full), or
"skipped" when p4c refuses the program. Exit status 1 when any pair differs.
"""

from __future__ import annotations

import argparse
import difflib
import json
import re
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass
from multiprocessing import Pool
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from p4c_acceptance import extract_tree  # noqa: E402

SWITCH_CLI = re.compile(r"""addP4Switch\(\s*['"](\w+)['"][^)]*?cli_input\s*=\s*['"]([^'"]+)['"]""")
SOURCE_ALL = re.compile(r"""^\s*\w+\.setP4SourceAll\(\s*['"]([^'"]+)['"]""", re.MULTILINE)
SOURCE_ONE = re.compile(r"""^\s*\w+\.setP4Source\(\s*['"](\w+)['"]\s*,\s*['"]([^'"]+)['"]""",
                        re.MULTILINE)


@dataclass
class Pair:
    name: str            # what the report calls it: folder/commands file
    program: Path
    commands: Path


@dataclass
class Outcome:
    name: str
    verdict: str         # "same", "differs", "skipped", "error"
    detail: str = ""
    bmv2: str = ""
    inaemu: str = ""


def pairs_in(root: Path) -> list[Pair]:
    """(program, command file) of every switch that network*.py or p4app*.json configures."""
    found: dict[tuple[Path, Path], Pair] = {}

    def add(folder: Path, program: str, commands: str) -> None:
        p, c = (folder / program).resolve(), (folder / commands).resolve()
        if p.is_file() and c.is_file():
            name = f"{c.relative_to(root.resolve())} ({p.name})"
            found.setdefault((p, c), Pair(name, p, c))

    for script in sorted(root.rglob("network*.py")):
        text = script.read_text(errors="replace")
        every = SOURCE_ALL.findall(text)
        one = dict(SOURCE_ONE.findall(text))
        for switch, commands in SWITCH_CLI.findall(text):
            program = one.get(switch) or (every[0] if every else None)
            if program:
                add(script.parent, program, commands)
    for app in sorted(root.rglob("p4app*.json")):
        try:
            doc = json.loads(app.read_text(errors="replace"))
        except ValueError:
            continue
        topo = doc.get("topology", {}) if isinstance(doc, dict) else {}
        switches = topo.get("switches", {}) if isinstance(topo, dict) else {}
        for conf in (switches.values() if isinstance(switches, dict) else ()):
            if isinstance(conf, dict) and conf.get("cli_input"):
                program = conf.get("program") or doc.get("program")
                if isinstance(program, str):
                    add(app.parent, program, conf["cli_input"])
    return sorted(found.values(), key=lambda p: p.name)


def compile_json(toolchain, program: Path, out: Path) -> str | None:
    """p4c's JSON for `program` at `out`; None when p4c refuses it (the reason then)."""
    done = subprocess.run([str(toolchain.p4c), "-o", str(out), str(program)],
                          capture_output=True, text=True, timeout=300, cwd=program.parent)
    if done.returncode == 0:
        return None
    errors = [line for line in (done.stdout + done.stderr).splitlines() if "error" in line]
    return " ".join((errors[0] if errors else "").split())[:200]


def run_pair(pair: Pair) -> Outcome:
    from p4switch.reference import find_toolchain
    from p4switch.reference.cli_transcript import (TranscriptError, bmv2_transcript,
                                                   inaemu_transcript)
    toolchain = find_toolchain()
    commands = pair.commands.read_text(errors="replace")
    with tempfile.TemporaryDirectory(prefix="cli-transcripts-") as scratch:
        json_path = Path(scratch) / "prog.json"
        refused = compile_json(toolchain, pair.program, json_path)
        if refused is not None:
            return Outcome(pair.name, "skipped", f"p4c refuses {pair.program.name}: {refused}")
        try:
            bmv2 = bmv2_transcript(toolchain, json_path, commands, cwd=pair.commands.parent)
            ours = inaemu_transcript(toolchain, json_path, commands, cwd=pair.commands.parent)
        except (TranscriptError, subprocess.TimeoutExpired) as error:
            return Outcome(pair.name, "error", str(error).splitlines()[0][:200])
    if bmv2 == ours:
        return Outcome(pair.name, "same")
    diff = [line for line in difflib.unified_diff(bmv2.splitlines(), ours.splitlines(),
                                                  "bmv2", "inaemu", n=0, lineterm="")
            if line[:1] in "+-" and line[:3] not in ("+++", "---")]
    return Outcome(pair.name, "differs", " | ".join(diff[:4])[:300], bmv2, ours)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--tree", type=Path, required=True, metavar="DIR")
    ap.add_argument("-j", "--processes", type=int, default=2)
    ap.add_argument("--show", metavar="NAME", help="print both transcripts of this pair")
    args = ap.parse_args(argv)
    from p4switch.reference import find_toolchain
    if find_toolchain() is None:
        raise SystemExit("cli_transcripts: needs the reference toolchain (/opt/p4ref)")
    with tempfile.TemporaryDirectory(prefix="cli-tree-") as scratch:
        root = extract_tree(args.tree, Path(scratch))
        pairs = pairs_in(root)
        if args.show:
            pairs = [p for p in pairs if p.name == args.show]
        outcomes = []
        started = time.monotonic()
        with Pool(max(1, args.processes)) as pool:
            for outcome in pool.imap_unordered(run_pair, pairs):
                outcomes.append(outcome)
                print(f"{len(outcomes)}/{len(pairs)} {outcome.name}: {outcome.verdict} "
                      f"({time.monotonic() - started:.0f} s)", file=sys.stderr, flush=True)
    outcomes.sort(key=lambda o: o.name)
    for o in outcomes:
        if o.verdict != "same":
            print(f"  {o.name}: {o.verdict}: {o.detail}")
        if args.show and o.name == args.show:
            print(f"--- BMv2\n{o.bmv2}\n--- inaemu\n{o.inaemu}")
    counts = {v: sum(o.verdict == v for o in outcomes) for v in ("same", "differs", "error",
                                                                  "skipped")}
    print(f"{len(outcomes)} command files: " + ", ".join(f"{n} {v}" for v, n in counts.items()))
    return 1 if counts["differs"] or counts["error"] else 0


if __name__ == "__main__":
    sys.exit(main())
