#!/usr/bin/env python3
"""Does inaemu's front end accept exactly the v1model programs real p4c accepts?

    .venv/bin/python scripts/p4c_acceptance.py [P4C] [-j 2] [--json results.json]
    .venv/bin/python scripts/p4c_acceptance.py --tree DIR [-j 2]

Every program in p4c's `testdata/p4_16_samples` and `testdata/p4_16_errors` that includes
`v1model.p4` is compiled by real `p4c-bm2-ss` (/opt/p4ref, required: it is the oracle) and by
inaemu. P4C is a p4c checkout or a bare git directory of one (default: the `fetch` mirror
/work/.mirror/p4lang+p4c/repo); p4c's files are read in a temporary folder, never copied into
the repository. scripts/p4c_samples.py runs the samples that have STF tests on packets; this one
asks only which programs each compiler takes.

With `--tree DIR` it judges every v1model program under DIR instead, at any depth (someone
else's programs, e.g. the `fetch` snapshot /work/.mirror/jafingerhut+p4-guide/repo).

It lists the programs inaemu accepts and p4c refuses (a wrong answer: exit status 1), those p4c
accepts and inaemu refuses (a feature inaemu lacks, with its message), those both accept whose
P4Info text is not p4c's byte for byte, and the counts.
"""

from __future__ import annotations

import argparse
import contextlib
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
P4C_BM2_SS = Path("/opt/p4ref/bin/p4c-bm2-ss")
FOLDERS = ("testdata/p4_16_samples", "testdata/p4_16_errors")
_V1MODEL_INCLUDE = re.compile(r'^\s*#\s*include\s*[<"]v1model\.p4[>"]', re.MULTILINE)


@dataclass
class Verdict:
    program: str       # folder/name.p4, relative to testdata
    p4c: str           # "accept" or "refuse"
    inaemu: str        # "accept", "refuse" or "internal" (an internal compiler error)
    message: str = ""  # inaemu's first line when it refuses, else p4c's first error
    p4info: str = ""   # where both accept: "same" or "differs" (P4Info text, byte for byte)


def testdata(p4c: Path, scratch: Path) -> Path:
    """The checkout's testdata folder, or the two folders extracted from a bare git directory."""
    if (p4c / FOLDERS[0]).is_dir():
        return p4c / "testdata"
    if not (p4c / "HEAD").is_file():
        raise SystemExit(f"p4c_acceptance: {p4c} is neither a p4c checkout nor a git directory")
    for folder in FOLDERS:
        archive = subprocess.run(["git", f"--git-dir={p4c}", "archive", "HEAD", folder],
                                 capture_output=True, check=False)
        if archive.returncode == 0:
            subprocess.run(["tar", "-x", "-C", str(scratch)], input=archive.stdout, check=True)
    return scratch / "testdata"


def select_programs(root: Path) -> list[Path]:
    """Every .p4 of the two folders that includes v1model.p4 (not the files they include)."""
    chosen = []
    for folder in FOLDERS:
        for program in sorted((root / Path(folder).name).glob("*.p4")):
            if program.is_file() and _V1MODEL_INCLUDE.search(program.read_text(errors="replace")):
                chosen.append(program)
    return chosen


def _error_line(text: str) -> str:
    for line in text.splitlines():
        if re.search(r"\berror\b:", line):
            return re.sub(r"^\S*/testdata/", "", line.strip())[:200]
    return text.strip().splitlines()[0][:200] if text.strip() else ""


def select_tree(root: Path) -> list[Path]:
    """Every .p4 under `root`, at any depth, that includes v1model.p4 (`--tree`)."""
    return [program for program in sorted(root.rglob("*.p4"))
            if program.is_file() and _V1MODEL_INCLUDE.search(program.read_text(errors="replace"))]


def extract_tree(source: Path, scratch: Path) -> Path:
    """`source` itself if it is a folder; else a bare git directory's files (a `fetch`
    snapshot) written into `scratch`, symbolic links too; files whose contents the snapshot
    lacks (its largest) are left out."""
    if not (source / "HEAD").is_file():
        return source
    listing = subprocess.run(["git", f"--git-dir={source}", "ls-tree", "-r", "-z", "HEAD"],
                             capture_output=True, check=True).stdout.split(b"\0")
    entries = []
    for line in filter(None, listing):
        meta, path = line.split(b"\t", 1)
        mode, kind, sha = meta.split()
        if kind == b"blob":
            entries.append((mode, sha, path.decode(errors="surrogateescape")))
    batch = subprocess.run(["git", f"--git-dir={source}", "cat-file", "--batch"],
                           input=b"".join(sha + b"\n" for _, sha, _ in entries),
                           capture_output=True, check=True).stdout
    pos = 0
    for mode, sha, path in entries:
        end = batch.index(b"\n", pos)
        header = batch[pos:end].split()
        pos = end + 1
        if header[-1] == b"missing":
            continue
        size = int(header[2])
        data, pos = batch[pos:pos + size], pos + size + 1
        target = scratch / path
        target.parent.mkdir(parents=True, exist_ok=True)
        if mode == b"120000":
            target.symlink_to(data.decode(errors="surrogateescape"))
        else:
            target.write_bytes(data)
    return scratch


def judge(job: Path | tuple[Path, str]) -> Verdict:
    from p4switch.compiler import CompileError, compile_file
    program, name = job if isinstance(job, tuple) else \
        (job, f"{job.parent.name}/{job.name}")
    with tempfile.TemporaryDirectory(prefix="p4c-acceptance-") as out:
        # P4Info is asked of both compilers (a program may have BMv2 JSON but no P4Info)
        done = subprocess.run([str(P4C_BM2_SS), "--arch", "v1model", "-o", f"{out}/p.json",
                               "--p4runtime-files", f"{out}/p.p4info.txtpb", str(program)],
                              capture_output=True, text=True,
                              stdin=subprocess.DEVNULL, timeout=300)
        p4c_info = Path(out, "p.p4info.txtpb").read_text() if done.returncode == 0 else None
    p4c = "accept" if done.returncode == 0 else "refuse"
    p4info = ""
    try:
        result = compile_file(program)
        if result is not None:
            result.p4info                 # raises where inaemu, as p4c, has no P4Info for it
        inaemu, message = "accept", ""
        if p4c_info is not None and result is not None:
            p4info = "same" if result.p4info_text() == p4c_info else "differs"
    except CompileError as exc:
        text = str(exc)
        inaemu = "internal" if "internal compiler error" in text else "refuse"
        message = re.sub(r"^\S*/testdata/", "", text.splitlines()[0] if text else "")[:200]
    if inaemu == "accept" and p4c == "refuse":
        message = "p4c: " + _error_line(done.stdout + done.stderr)
    return Verdict(name, p4c, inaemu, message, p4info)


def report(verdicts: list[Verdict], out=None) -> int:
    """The disagreements and the counts; returns how many programs inaemu accepts and p4c
    refuses."""
    wrong = [v for v in verdicts if v.inaemu == "accept" and v.p4c == "refuse"]
    lacking = [v for v in verdicts if v.inaemu != "accept" and v.p4c == "accept"]
    if wrong:
        print("accepted by inaemu, refused by p4c:", file=out)
        for v in wrong:
            print(f"  {v.program}: {v.message}", file=out)
        print(file=out)
    if lacking:
        print("accepted by p4c, refused by inaemu:", file=out)
        for v in lacking:
            print(f"  {v.program} ({v.inaemu}): {v.message}", file=out)
        print(file=out)
    differs = [v for v in verdicts if v.p4info == "differs"]
    if differs:
        print("accepted by both, with another P4Info than p4c's:", file=out)
        for v in differs:
            print(f"  {v.program}", file=out)
        print(file=out)
    agree = sum(v.p4c == ("accept" if v.inaemu == "accept" else "refuse") for v in verdicts)
    print(f"{len(verdicts)} v1model programs: the compilers agree on {agree} "
          f"(p4c accepts {sum(v.p4c == 'accept' for v in verdicts)}); inaemu accepts "
          f"{len(wrong)} that p4c refuses and refuses {len(lacking)} that p4c accepts; "
          f"P4Info byte for byte p4c's for {sum(v.p4info == 'same' for v in verdicts)} of the "
          f"{sum(bool(v.p4info) for v in verdicts)} both accept", file=out)
    return len(wrong)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("p4c", nargs="?", type=Path, default=DEFAULT_P4C,
                    help=f"p4c checkout or bare git directory (default {DEFAULT_P4C})")
    ap.add_argument("--tree", type=Path, metavar="DIR",
                    help="judge every v1model program under DIR instead (a folder or a bare "
                         "git directory, e.g. a `fetch` snapshot of someone's P4 programs)")
    ap.add_argument("-j", "--processes", type=int, default=2)
    ap.add_argument("--json", type=Path, help="also write every verdict to this file")
    args = ap.parse_args(argv)
    if not P4C_BM2_SS.exists():
        raise SystemExit(f"p4c_acceptance: real p4c is the oracle and {P4C_BM2_SS} is missing "
                         "(../shared/ref-toolchain/install.sh installs it)")
    scratch = Path(tempfile.mkdtemp(prefix="p4c-acceptance-"))
    try:
        if args.tree is not None:
            root = extract_tree(args.tree.resolve(), scratch)
            programs = [(p, str(p.relative_to(root))) for p in select_tree(root)]
        else:
            programs = select_programs(testdata(args.p4c.resolve(), scratch))
        start, verdicts = time.monotonic(), []
        step = max(1, len(programs) // 20)
        with contextlib.ExitStack() as stack:
            if args.processes > 1:
                judged = stack.enter_context(Pool(args.processes)).imap_unordered(judge, programs)
            else:   # in this process: one at a time, easy to debug
                judged = map(judge, programs)
            for verdict in judged:
                verdicts.append(verdict)
                if len(verdicts) % step == 0 or len(verdicts) == len(programs):
                    print(f"{len(verdicts)}/{len(programs)} programs compiled by both, "
                          f"{time.monotonic() - start:.0f} s", file=sys.stderr, flush=True)
        verdicts.sort(key=lambda v: v.program)
        if args.json:
            args.json.write_text(json.dumps([asdict(v) for v in verdicts], indent=1))
        return 1 if report(verdicts) else 0
    finally:
        shutil.rmtree(scratch, ignore_errors=True)


if __name__ == "__main__":
    sys.exit(main())
