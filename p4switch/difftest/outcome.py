"""Compare the runs of one case and name each disagreement by its kind.

The oracle is p4c's JSON on real simple_switch ("p4c@bmv2"). Kinds:

- `accept/reject: p4c accepts, inaemu rejects` and `... p4c rejects, inaemu accepts`
- `compiler crash` — inaemu's compiler failed with an internal error
- `runtime divergence` — p4c's JSON on inaemu's runtime differs from simple_switch
- `miscompile` — inaemu's JSON on simple_switch differs from p4c's JSON on simple_switch
- `BMv2-JSON-compat` — simple_switch refuses (or cannot run the STF on) inaemu's JSON
- `runtime divergence (inaemu JSON)` — inaemu's JSON runs differently on the two runtimes while
  the two kinds above do not explain it
- `miscompile or runtime` — without simple_switch: p4c's and inaemu's JSON differ on inaemu's
  runtime

A disagreement in the runs that disappears when every packet runs on a fresh switch
(`runner.split_per_packet`) is reported as `unspecified: stale invalid-header fields` instead:
BMv2 lets a packet read the previous packet's values of a header that is not valid, which the
P4 spec leaves unspecified (docs/difftest.md). One that remains is run again on simple_switch:
if the same JSON and STF give simple_switch another outcome than before (inaemu's runtime is
deterministic), it is reported as `unspecified: simple_switch nondeterministic` (its egress
threads race on a register, F19; a replica's recycled PHV holds an earlier packet's fields,
F13).

Not disagreements (counted apart): both compilers reject a case meant to be valid (the
generator produced something p4c refuses), p4c crashing.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass

from p4switch.reference import compare_outcomes

from .runner import CaseResult, run_case

ACCEPT_REJECT = "accept/reject: p4c accepts, inaemu rejects"
REJECT_ACCEPT = "accept/reject: p4c rejects, inaemu accepts"
COMPILER_CRASH = "compiler crash"
RUNTIME = "runtime divergence"
MISCOMPILE = "miscompile"
JSON_COMPAT = "BMv2-JSON-compat"
RUNTIME_OWN_JSON = "runtime divergence (inaemu JSON)"
UNRESOLVED = "miscompile or runtime"
STALE = "unspecified: stale invalid-header fields"
NONDETERMINISTIC = "unspecified: simple_switch nondeterministic"
UNSPECIFIED = (STALE, NONDETERMINISTIC)     # counted apart, not disagreements
_ORACLE_RERUNS = 2
RUN_KINDS = (RUNTIME, MISCOMPILE, JSON_COMPAT, RUNTIME_OWN_JSON, UNRESOLVED)
_RUNS_BEHIND = {RUNTIME: ("p4c@bmv2", "p4c@inaemu"), MISCOMPILE: ("p4c@bmv2", "inaemu@bmv2"),
                RUNTIME_OWN_JSON: ("p4c@bmv2", "inaemu@bmv2", "inaemu@inaemu"),
                UNRESOLVED: ("p4c@inaemu", "inaemu@inaemu")}


@dataclass(frozen=True)
class Disagreement:
    kind: str
    detail: str


def classify_case(case, *, bmv2: bool = True) -> tuple[list[Disagreement], CaseResult]:
    """Run and classify; a run disagreement is re-checked with one packet per switch."""
    result = run_case(case, bmv2=bmv2)
    found = classify(result)
    if any(d.kind in RUN_KINDS and d.kind != JSON_COMPAT for d in found):
        needed = frozenset(run for d in found for run in _RUNS_BEHIND.get(d.kind, ()))
        again = classify(run_case(case, bmv2=bmv2, per_packet=True, only=needed))
        if not any(d.kind in RUN_KINDS for d in again):
            found = [Disagreement(STALE, "\n\n".join(d.detail for d in found))]
        elif _oracle_varies(case, result, needed, bmv2):
            found = [Disagreement(NONDETERMINISTIC, "\n\n".join(d.detail for d in found))]
        else:
            found = again
    return found, result


def _oracle_varies(case, result: CaseResult, needed: frozenset[str], bmv2: bool) -> bool:
    """Whether simple_switch gives one of the disagreeing runs another outcome when the same
    JSON and STF run again."""
    on_bmv2 = frozenset(run for run in needed if run.endswith("@bmv2") and run in result.runs)
    if not on_bmv2:
        return False
    for _ in range(_ORACLE_RERUNS):
        again = run_case(case, bmv2=bmv2, only=on_bmv2).runs
        for run in on_bmv2:
            if run in again and compare_outcomes(_comparable(result.runs[run], run),
                                                 _comparable(again[run], run)):
                return True
    return False


def classify(result: CaseResult) -> list[Disagreement]:
    p4c, ours = result.p4c, result.inaemu
    if ours.crashed:
        return [Disagreement(COMPILER_CRASH, ours.message)]
    if p4c.crashed:
        return []
    if p4c.accepted and not ours.accepted:
        return [Disagreement(ACCEPT_REJECT, ours.message)]
    if ours.accepted and not p4c.accepted:
        return [Disagreement(REJECT_ACCEPT, _errors(p4c.message))]
    if not p4c.accepted:
        return []
    runs = result.runs
    found: list[Disagreement] = []

    def differ(a: str, b: str) -> list[str]:
        if a not in runs or b not in runs:
            return []
        # name each side after its run ("p4c@bmv2"), not just its target
        return compare_outcomes(_comparable(runs[a], a), _comparable(runs[b], b))

    if "p4c@bmv2" in runs:
        oracle = runs["p4c@bmv2"]
        if oracle.error:       # the oracle itself could not run the test: nothing to compare
            return []
        if diffs := differ("p4c@bmv2", "p4c@inaemu"):
            found.append(Disagreement(RUNTIME, "\n".join(diffs)))
        if "inaemu@bmv2" in runs and runs["inaemu@bmv2"].error:
            found.append(Disagreement(JSON_COMPAT, runs["inaemu@bmv2"].error))
        elif diffs := differ("p4c@bmv2", "inaemu@bmv2"):
            found.append(Disagreement(MISCOMPILE, "\n".join(diffs)))
        if not found and (diffs := differ("inaemu@bmv2", "inaemu@inaemu")):
            found.append(Disagreement(RUNTIME_OWN_JSON, "\n".join(diffs)))
        return found
    if diffs := differ("p4c@inaemu", "inaemu@inaemu"):
        found.append(Disagreement(UNRESOLVED, "\n".join(diffs)))
    return found


# simple_switch's control-plane API reads registers as signed 64-bit integers: a cell at or above
# 2**63 reads as 2**63 - 1 there although the data plane holds the full value (F7).
_REGISTER_READ_MAX = (1 << 63) - 1


def _comparable(outcome, name: str):
    registers = {reg: [min(v, _REGISTER_READ_MAX) for v in cells]
                 for reg, cells in outcome.registers.items()}
    return dataclasses.replace(outcome, target=name, registers=registers)


def _errors(message: str) -> str:
    """p4c's error lines (with the source line and caret after each), warnings dropped."""
    lines = message.splitlines()
    keep = []
    for i, line in enumerate(lines):
        if "error" in line.lower():
            keep += lines[i:i + 3]
    return "\n".join(keep) or message
