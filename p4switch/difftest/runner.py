"""Compile a case with p4c and inaemu, run each JSON on each runtime, and keep the outcomes.

Four runs where possible: {p4c JSON, inaemu JSON} x {inaemu runtime, real simple_switch}, named
"p4c@bmv2", "p4c@inaemu", "inaemu@bmv2", "inaemu@inaemu". p4c and simple_switch are driven by
`p4switch.reference` (`compile_p4`, `run_stf_bmv2`, `run_stf_inaemu`); without the reference
toolchain nothing can be compared and `run_case` refuses. `bmv2=False` skips simple_switch (the
inaemu-runtime runs alone still find compiler bugs: p4c's JSON and inaemu's must agree).
"""

from __future__ import annotations

import json
import tempfile
from dataclasses import dataclass, field
from pathlib import Path

from p4switch.reference import Outcome, compile_p4, find_toolchain, run_stf_bmv2, run_stf_inaemu

from .case import Case


@dataclass
class Compiled:
    accepted: bool
    bmv2: dict | None = None
    message: str = ""
    crashed: bool = False        # the compiler itself failed (internal error, traceback)


@dataclass
class CaseResult:
    case: Case
    p4c: Compiled
    inaemu: Compiled
    runs: dict[str, Outcome] = field(default_factory=dict)
    seconds: float = 0.0


def compile_with_p4c(source: str, workdir: Path, toolchain) -> Compiled:
    path = workdir / "case.p4"
    path.write_text(source)
    built = compile_p4(toolchain, path, cache_dir=workdir / "p4c")
    message = built.stderr.replace(str(path), "case.p4")
    if not built.ok:
        crashed = "Compiler Bug" in message or "timed out" in message or \
            "did not finish" in message
        return Compiled(False, message=message, crashed=crashed)
    return Compiled(True, json.loads(built.json_path.read_text()), message=message)


def compile_with_inaemu(source: str) -> Compiled:
    from p4switch.compiler import CompileError, compile_source
    try:
        result = compile_source(source, "case.p4")
    except CompileError as exc:
        text = str(exc)
        return Compiled(False, message=text, crashed="internal" in text.lower())
    except Exception as exc:     # noqa: BLE001 - a compiler bug is a finding, not a stop
        return Compiled(False, message=f"{type(exc).__name__}: {exc}", crashed=True)
    return Compiled(True, json.loads(json.dumps(result.bmv2)))


def run_inaemu_runtime(bmv2: dict, stf: str) -> Outcome:
    try:
        return run_stf_inaemu(bmv2, stf, registers=True)
    except Exception as exc:     # noqa: BLE001 - a runtime traceback is a finding
        return Outcome(target="inaemu", error=f"runtime crashed: {type(exc).__name__}: {exc}")


def prune_stf(stf: str, p4c_json: dict) -> str:
    """The STF without entries for tables p4c left out of its JSON (a table applied only
    where control never gets, e.g. after `exit`, may be dropped); the same pruned test runs on
    all four targets, so a table inaemu drops but p4c keeps still shows (BMv2-JSON-compat)."""
    tables = {t["name"] for p in p4c_json.get("pipelines", []) for t in p["tables"]}
    kept = []
    for line in stf.splitlines():
        words = line.split()
        if words and words[0] in ("add", "setdefault") and len(words) > 1 \
                and words[1] not in tables:
            continue
        kept.append(line)
    return "\n".join(kept) + "\n"


def split_per_packet(stf: str) -> list[str]:
    """One STF test per `packet` line, each with all the set-up lines and the final checks.

    BMv2 reuses a packet's header storage for the next packet, so reading a header that is not
    valid gives the last packet's values there (the P4 spec leaves them unspecified); each
    packet on a fresh switch removes that effect (and the state packets share)."""
    lines = stf.splitlines()
    packets = [i for i, line in enumerate(lines) if line.startswith("packet ")]
    if not packets:
        return [stf]
    setup, checks = lines[:packets[0]], lines[packets[-1] + 1:]
    return ["\n".join(setup + [lines[i]] + checks) + "\n" for i in packets]


def _merge(outcomes: list[Outcome]) -> Outcome:
    merged = Outcome(target=outcomes[0].target)
    for k, o in enumerate(outcomes):
        if o.error and not merged.error:
            merged.error = o.error
        merged.aborted = merged.aborted or o.aborted
        for port, frames in o.outputs.items():
            merged.outputs.setdefault(port, []).extend(frames)
        merged.counter_reads += o.counter_reads
        for name, cells in o.registers.items():
            merged.registers[f"{name}#{k}"] = cells
        for name, samples in o.learned.items():
            merged.learned.setdefault(name, []).extend(samples)
    return merged


def run_case(case: Case, *, bmv2: bool = True, per_packet: bool = False,
             only: frozenset[str] | None = None) -> CaseResult:
    """Compile with both compilers; run every JSON there is on every runtime there is.

    `per_packet`: each packet on a fresh switch (`split_per_packet`), outcomes concatenated.
    `only`: just these runs (e.g. {"p4c@bmv2", "p4c@inaemu"}); simple_switch runs are the slow
    part (~0.3 s each to start)."""
    toolchain = find_toolchain()
    if toolchain is None:
        raise FileNotFoundError("differential testing needs the reference toolchain (/opt/p4ref)")
    with tempfile.TemporaryDirectory(prefix="difftest-") as tmp:
        workdir = Path(tmp)
        p4c = compile_with_p4c(case.source, workdir, toolchain)
        ours = compile_with_inaemu(case.source)
        result = CaseResult(case, p4c, ours)
        for compiler, compiled in (("p4c", p4c), ("inaemu", ours)):
            if not compiled.accepted:
                continue
            stf = prune_stf(case.stf, p4c.bmv2) if p4c.accepted else case.stf
            tests = split_per_packet(stf) if per_packet else [stf]
            if only is None or f"{compiler}@inaemu" in only:
                result.runs[f"{compiler}@inaemu"] = _merge(
                    [run_inaemu_runtime(compiled.bmv2, stf) for stf in tests])
            if bmv2 and (only is None or f"{compiler}@bmv2" in only):
                json_path = workdir / f"{compiler}.json"
                json_path.write_text(json.dumps(compiled.bmv2))
                result.runs[f"{compiler}@bmv2"] = _merge(
                    [run_stf_bmv2(json_path, stf, toolchain=toolchain, registers=True)
                     for stf in tests])
    return result
