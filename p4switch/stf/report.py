"""The outcome of an STF run as text: a diff-like block per disagreement, then a one-line summary.

A differing packet shows the expected hex (with its `*` nibbles), the actual hex and a line of `^`
under every nibble that breaks the expectation, wrapped in rows of 32 bytes with byte offsets.
The last line always starts with `PASS:` or `FAIL:` so scripts and people can grep it.
"""

from __future__ import annotations

from .expectations import Mismatch, difference_marks
from .runner import CounterFailure, StfResult

ROW_NIBBLES = 64


def _hex_rows(pattern: str, exact_length: bool, actual: str) -> list[str]:
    marks = difference_marks(pattern, actual)
    expected = pattern + ("$" if exact_length else "")
    width = max(len(expected), len(actual))
    rows = []
    for start in range(0, width, ROW_NIBBLES):
        end = start + ROW_NIBBLES
        prefix = f"  [{start // 2:4d}]"
        rows.append(f"{prefix} expected: {expected[start:end]}")
        rows.append(f"{' ' * len(prefix)} actual:   {actual[start:end]}")
        mark = marks[start:end].rstrip()
        if mark:
            rows.append(f"{' ' * len(prefix)}           {mark}")
    return rows


def _describe(path: str, m: Mismatch) -> list[str]:
    if m.kind == "missing":
        e = m.expect
        pattern = e.pattern or ""
        return [f"missing packet on port {m.port} (expect at {path}:{e.line})",
                f"  expected: {pattern}{'$' if e.exact_length else ''}"]
    if m.kind == "unexpected":
        out = m.output
        return [f"unexpected packet on port {m.port} (out of the packet at {path}:"
                f"{out.packet_line})",
                f"  actual:   {out.data.hex().upper()}"]
    e, out = m.expect, m.output
    lines = [f"packet on port {m.port} differs: {m.reason} (packet #{m.position} on the port; "
             f"expect at {path}:{e.line}, out of the packet at {path}:{out.packet_line})"]
    lines += _hex_rows(e.pattern or "", e.exact_length, out.data.hex().upper())
    return lines


def _describe_counter(path: str, f: CounterFailure) -> str:
    chk = f.check
    where = f"${chk.entry_id}" if chk.entry_id is not None else str(chk.index)
    condition = f"{chk.kind or 'packets and bytes'} {chk.op} {chk.value}"
    return (f"counter check failed at {path}:{chk.line}: {chk.counter}({where}) {condition}; "
            f"actual packets={f.actual['packets']} bytes={f.actual['bytes']}")


def summary_line(result: StfResult) -> str:
    counts = f"{result.test.packet_count} packets, {result.test.expect_count} expects"
    if result.passed:
        checks = sum(1 for c in result.test.commands if type(c).__name__ == "CheckCounter")
        return f"PASS: {counts}" + (f", {checks} counter checks" if checks else "")
    problems = []
    by_kind = {k: sum(m.kind == k for m in result.mismatches)
               for k in ("differs", "missing", "unexpected")}
    if by_kind["differs"]:
        problems.append(f"{by_kind['differs']} differing")
    if by_kind["missing"]:
        problems.append(f"{by_kind['missing']} missing")
    if by_kind["unexpected"]:
        problems.append(f"{by_kind['unexpected']} unexpected")
    if result.counter_failures:
        problems.append(f"{len(result.counter_failures)} counter checks failed")
    if result.aborted:
        problems.append("aborted by assert/assume")
    return f"FAIL: {counts}: {', '.join(problems)}"


def format_report(result: StfResult) -> str:
    """Everything a failing test needs to be understood, ending with the summary line."""
    path = result.test.path
    lines: list[str] = []
    if result.aborted:
        lines.append(result.aborted)
    for m in result.mismatches:
        lines += _describe(path, m)
    for f in result.counter_failures:
        lines.append(_describe_counter(path, f))
    lines.append(summary_line(result))
    return "\n".join(lines)
