"""Matching packets that came out of the switch against `expect` lines, port by port.

The rules are p4c's BMv2 STF driver's: on each port the n-th packet out is compared with the n-th
`expect` for that port; `*` nibbles match anything; a packet shorter than its pattern fails; a
longer one passes unless the pattern ends in `$`; `expect PORT` without data accepts any number of
packets on that port; any packet without an `expect` fails the test. Pure functions and data: the
runner feeds them, the report prints them.
"""

from __future__ import annotations

from dataclasses import dataclass

from .commands import ExpectPacket


@dataclass(frozen=True, kw_only=True)
class OutputPacket:
    """A packet that left the switch, and the `packet` line whose processing emitted it."""

    port: int
    data: bytes
    packet_line: int


@dataclass(frozen=True, kw_only=True)
class Mismatch:
    """One way the outputs disagree with the expectations."""

    kind: str                       # "differs" | "missing" | "unexpected"
    port: int
    position: int                   # 1 for the first packet on this port, 2 for the next...
    expect: ExpectPacket | None     # None for "unexpected"
    output: OutputPacket | None     # None for "missing"
    reason: str = ""


def packet_matches(pattern: str, exact_length: bool, data: bytes) -> tuple[bool, str]:
    """Whether `data` matches the hex `pattern`; the second item says why not."""
    actual = data.hex().upper()
    if len(actual) < len(pattern):
        return False, f"packet too short: {len(data)} bytes, expected {len(pattern) // 2}"
    for expected_nibble, actual_nibble in zip(pattern, actual):
        if expected_nibble != "*" and expected_nibble != actual_nibble:
            return False, "contents differ"
    if exact_length and len(actual) > len(pattern):
        return False, f"packet too long: {len(data)} bytes, expected exactly {len(pattern) // 2}"
    return True, ""


def difference_marks(pattern: str, actual_hex: str) -> str:
    """A line with `^` under every nibble where `actual_hex` breaks `pattern` (incl. length)."""
    width = max(len(pattern), len(actual_hex))
    marks = []
    for i in range(width):
        e = pattern[i] if i < len(pattern) else None
        a = actual_hex[i] if i < len(actual_hex) else None
        if e is None:
            marks.append(" ")          # trailing bytes: only wrong with `$`, reported in reason
        elif a is None or (e != "*" and e != a):
            marks.append("^")
        else:
            marks.append(" ")
    return "".join(marks).rstrip()


def compare_outputs(expects: list[ExpectPacket], outputs: list[OutputPacket]) -> list[Mismatch]:
    """Every disagreement between the `expect` lines and the packets out, ports in order."""
    expected_by_port: dict[int, list[ExpectPacket]] = {}
    any_count_ports: set[int] = set()
    for e in expects:
        if e.pattern is None:
            any_count_ports.add(e.port)
        else:
            expected_by_port.setdefault(e.port, []).append(e)
    actual_by_port: dict[int, list[OutputPacket]] = {}
    for out in outputs:
        actual_by_port.setdefault(out.port, []).append(out)

    mismatches: list[Mismatch] = []
    for port in sorted(set(expected_by_port) | set(actual_by_port)):
        wanted = expected_by_port.get(port, [])
        got = actual_by_port.get(port, [])
        if port in any_count_ports and not wanted:
            continue
        for i in range(max(len(wanted), len(got))):
            e = wanted[i] if i < len(wanted) else None
            out = got[i] if i < len(got) else None
            if e is None:
                if port not in any_count_ports:
                    mismatches.append(Mismatch(kind="unexpected", port=port, position=i + 1,
                                               expect=None, output=out))
            elif out is None:
                mismatches.append(Mismatch(kind="missing", port=port, position=i + 1,
                                           expect=e, output=None))
            else:
                ok, why = packet_matches(e.pattern or "", e.exact_length, out.data)
                if not ok:
                    mismatches.append(Mismatch(kind="differs", port=port, position=i + 1,
                                               expect=e, output=out, reason=why))
    return mismatches
