"""Shrink a disagreeing case while it keeps disagreeing the same way.

Greedy deletion of line chunks (halves, quarters, ... single lines) from the STF test first
(fewer packets), then from the P4 program; a candidate is kept when it still shows the same
kind of disagreement. A deletion that breaks the program just makes p4c reject it, so the
predicate fails and the deletion is dropped. Bounded by `max_runs` case runs.
"""

from __future__ import annotations

import dataclasses
from typing import Callable

from .case import Case
from .outcome import classify
from .runner import run_case


def still_disagrees(kind: str, bmv2: bool) -> Callable[[Case], bool]:
    def predicate(case: Case) -> bool:
        try:
            # one packet per switch: stale header values (BMv2) cannot make a false repro
            result = run_case(case, bmv2=bmv2, per_packet=True)
            return any(d.kind == kind for d in classify(result))
        except Exception:        # noqa: BLE001 - a candidate that breaks the tools is no repro
            return False
    return predicate


def minimize(case: Case, predicate: Callable[[Case], bool], max_runs: int = 400) -> Case:
    budget = [max_runs]

    def shrink_text(text: str, rebuild: Callable[[str], Case], protected) -> str:
        lines = text.splitlines()
        chunk = max(1, len(lines) // 2)
        while chunk >= 1 and budget[0] > 0:
            i, changed = 0, False
            while i < len(lines) and budget[0] > 0:
                if any(protected(line) for line in lines[i:i + chunk]):
                    i += chunk
                    continue
                candidate = lines[:i] + lines[i + chunk:]
                budget[0] -= 1
                if predicate(rebuild("\n".join(candidate) + "\n")):
                    lines, changed = candidate, True
                else:
                    i += chunk
            if not changed:
                chunk //= 2
        return "\n".join(lines) + "\n"

    stf = shrink_text(case.stf, lambda t: dataclasses.replace(case, stf=t),
                      lambda line: False)
    case = dataclasses.replace(case, stf=stf)
    source = shrink_text(case.source, lambda t: dataclasses.replace(case, source=t),
                         lambda line: line.startswith("#include") or " main;" in line)
    return dataclasses.replace(case, source=source)
