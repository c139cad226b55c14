"""Lane statements rolled back into C loops.

Why: a lane group (pygen/lanegroups.py) is k isomorphic per-lane statements, and the native
code generator writes each lane's C out in full. ina.p4's ingress then compiles to ~140 KB of
straight-line code (364 lanes times each lane action), which a packet streams through the
instruction cache at every switch. Written as a loop over the lanes, the same statements are
a few hundred bytes, and the compiler may vectorize them.

How, and why it is exact: a stretch of lines is rolled only when it is L >= MIN_TRIPS copies
of one group of m lines that differ from the first copy only in decimal integer literals, each
of which grows by the same step from one copy to the next. The loop `for (int j = 0; j < L;
j++)` over the first copy, with each such literal written `(first + step * j)`, runs the
same statements in the same order with the same values, so it does exactly what the copies
did. A group whose braces do not balance, or that says `break`, `continue` or `case` (which
a loop would change), is not rolled; the rolled form is rebuilt for every copy and compared
with it as text before it is used (`_matching`), never assumed. Literals with a suffix
(`4294967295ULL`), identifiers (`RUN141`, `F72`) and everything else must be the same text in
every copy.
"""

from __future__ import annotations

import re

MIN_TRIPS = 8           # fewer copies are left as they are (the loop would save little)
MAX_GROUP_LINES = 12    # the longest group of lines looked for

LOOP_VAR = "lane_j"      # the loop's index: lines that already use the name are not rolled
ROLLED_LOOP = f"for (int {LOOP_VAR} = 0; "     # how a rolled loop's first line starts

_TOKEN = re.compile(r"[A-Za-z_][A-Za-z0-9_]*|\d+[A-Za-z_]*|\s+|.", re.S)


def _shape(line: str) -> tuple[tuple[str, ...], tuple[int, ...]]:
    """(the line with every plain decimal literal as '#', those literals in order)."""
    tokens = _TOKEN.findall(line)
    return (tuple("#" if t.isdigit() else t for t in tokens),
            tuple(int(t) for t in tokens if t.isdigit()))


def _map_literals(line: str, steps: tuple[int, ...], write) -> str:
    """`line` with each plain decimal literal replaced by `write(literal, its step)`."""
    out, index = [], 0
    for token in _TOKEN.findall(line):
        if token.isdigit():
            token = write(token, steps[index])
            index += 1
        out.append(token)
    return "".join(out)


def _rolled_line(line: str, steps: tuple[int, ...], var: str) -> str:
    """`line` with each plain decimal literal whose step is not 0 written first + step * var."""
    def rolled(token: str, step: int) -> str:
        if not step:
            return token
        first, term = int(token), var if step == 1 else f"{step} * {var}"
        return f"({first} + {term})" if first else f"({term})"
    return _map_literals(line, steps, rolled)


_LOOP_WORDS = frozenset(("break", "continue", "case", "default"))


def _loop_body(skeletons: list[tuple[str, ...]]) -> bool:
    """Whether lines of these skeletons may be a loop's body: their braces balance without
    closing a block opened before them, and no `break`, `continue` or `case` would change
    its meaning inside the loop."""
    depth = 0
    for skeleton in skeletons:
        for token in skeleton:
            if token in _LOOP_WORDS:
                return False
            depth += (token == "{") - (token == "}")
            if depth < 0:
                return False
    return depth == 0


def _copies(shapes: list, at: int, m: int) -> tuple[int, list]:
    """(how many consecutive copies of lines [at, at + m) start at `at`, their steps)."""
    n = len(shapes)
    if at + 2 * m > n:
        return 0, []
    steps = []
    for t in range(m):
        (skeleton, first), (skeleton2, second) = shapes[at + t], shapes[at + m + t]
        if skeleton != skeleton2:
            return 0, []
        steps.append(tuple(b - a for a, b in zip(first, second)))
    if not any(any(s) for s in steps):
        return 0, []            # the same lines again: not a lane loop
    if not _loop_body([shapes[at + t][0] for t in range(m)]):
        return 0, []
    count = 2
    while at + (count + 1) * m <= n:
        base = at + count * m
        if not all(shapes[base + t][0] == shapes[at + t][0] and all(
                x == a + count * s for x, a, s in zip(shapes[base + t][1], shapes[at + t][1],
                                                      steps[t]))
                   for t in range(m)):
            break
        count += 1
    return count, steps


def _instance(line: str, steps: tuple[int, ...], j: int) -> str:
    """Copy `j`'s text as the rolled line gives it: each stepped literal first + step * j."""
    return _map_literals(line, steps, lambda token, step: str(int(token) + step * j))


def _matching(lines: list[str], at: int, m: int, count: int, steps: list) -> int:
    """How many of the `count` copies from `at` on are, as text, the first copy with its
    literals stepped (a literal C reads otherwise, such as octal `010`, ends them)."""
    for j in range(count):
        if any(_instance(lines[at + t], steps[t], j) != lines[at + j * m + t] for t in range(m)):
            return j
    return count


def reroll(lines: list[str]) -> list[str]:
    """`lines` (C statements, one or more per line) with every stretch of at least MIN_TRIPS
    copies of a group of lines that differ only in evenly stepped integer literals written as
    one loop over the first copy (module docstring)."""
    var = LOOP_VAR
    if len(lines) < MIN_TRIPS or any(var in line for line in lines):
        return list(lines)
    shapes = [_shape(line) for line in lines]
    out: list[str] = []
    at = 0
    while at < len(lines):
        best = None
        for m in range(1, MAX_GROUP_LINES + 1):
            count, steps = _copies(shapes, at, m)
            if count >= MIN_TRIPS and (best is None or count * m > best[0] * best[1]):
                best = (count, m, steps)
        if best is None:
            out.append(lines[at])
            at += 1
            continue
        count, m, steps = best
        count = _matching(lines, at, m, count, steps)
        if count < MIN_TRIPS:
            out.append(lines[at])
            at += 1
            continue
        out.append(f"for (int {var} = 0; {var} < {count}; {var}++) {{")
        out += ["    " + _rolled_line(lines[at + t], steps[t], var) for t in range(m)]
        out.append("}")
        at += count * m
    return out
