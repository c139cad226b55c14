"""Keeping fields that an action body rewrites in Python locals instead of PHV list slots.

Register-heavy actions write the same scratch field once per lane (`lane = R.read(idx)`) and
read every freshly written field back at once (`R.write(idx, hdr.v)`). A PHV slot costs a list
load/store each time; a local costs one bytecode. Within a straight run of simple statements
this pass renames such fields to locals (`f[84]` -> `_l84`) and writes each one back once,
where the run ends, consecutive slots as one slice assignment. A long stretch of slots read
before being written comes in as one unpacked slice (`_r90, _r91, ... = f[90:122]`); a pure
temporary used once is folded into its use and a fresh local stored at once is chained, so a
lane `lane = R.read(i); v = v + lane; R.write(i, v)` becomes `R[i] = _l90 = (_r90 + R[i]) & M`.

It works on the generated lines of one action body and is purely textual, so it only touches
statements whose every PHV access is a constant slot (`f[<digits>]`). Any other line is a
barrier: block openers (`if ...:`), returns, helper calls that receive `f`, computed or sliced
slots. Every local is written back before a barrier and the barrier itself is left untouched;
the body of a block is a run of its own, processed the same way. The result is the same
PHV after every run, so semantics cannot change, only the number of list accesses.
"""

from __future__ import annotations

import re

_SLOT = re.compile(r"\bf\[(\d+)\]")
_SIMPLE = re.compile(r"^(?P<lhs>f\[\d+\]|[A-Za-z_]\w*(?:\[[^=]*\])?) (?P<op>=|\+=) (?P<rhs>.+)$")
_FIELD_LHS = re.compile(r"^f\[(\d+)\]$")
_BARE_F = re.compile(r"\bf\b")
_EXITS = ("return", "raise", "break", "continue", "yield")
_LOCAL_ASSIGN = re.compile(r"^(?P<name>_l\d+) = (?P<rhs>.+)$")
_SIMPLE_LOCAL = re.compile(r"^(?P<lhs>[A-Za-z_]\w*(?:\[[^=]*\])?) (?P<op>=|\+=) (?P<rhs>.+)$")
_CALL = re.compile(r"[\w\])]\(")
_ATOM = re.compile(r"^[\w\[\]]+$")
MIN_SLICE = 2  # consecutive dirty slots written back as one slice assignment
MIN_PREFETCH = 8  # consecutive slots read before written, fetched as one slice
FOLD_WINDOW = 8  # a folded temporary must be assigned again within this many lines


def local_name(slot: int) -> str:
    return f"_l{slot}"


def prefetch_name(slot: int) -> str:
    return f"_r{slot}"


def localize_fields(lines: list[str]) -> list[str]:
    """The same statements with rewritten fields kept in locals within each straight run."""
    out: list[str] = []
    run: list[str] = []
    i = 0
    while i < len(lines):
        line = lines[i]
        if line.startswith(" "):  # stray indented line without an opener: keep as is
            out += _localize_run(run) + [line]
            run = []
            i += 1
            continue
        if _is_simple(line):
            run.append(line)
            i += 1
            continue
        out += _localize_run(run)
        run = []
        out.append(line)
        i += 1
        if line.endswith(":"):
            body = []
            while i < len(lines) and lines[i].startswith("    "):
                body.append(lines[i][4:])
                i += 1
            out += ["    " + b for b in localize_fields(body)]
    return out + _localize_run(run)


def _is_simple(line: str) -> bool:
    if line.endswith(":") or line.split(" ", 1)[0] in _EXITS:
        return False
    if _SIMPLE.match(line) is None:
        return False
    return _BARE_F.search(_SLOT.sub("#", line)) is None


def _localize_run(run: list[str]) -> list[str]:
    if not run:
        return []
    chosen = _worth_localizing(run)
    prefetched = _worth_prefetching(run)
    if not chosen and not prefetched:
        return run
    out: list[str] = _prefetch_lines(prefetched)
    live: set[int] = set()
    for line in run:
        m = _SIMPLE.match(line)
        lhs, op, rhs = m["lhs"], m["op"], m["rhs"]
        rhs = _rename(rhs, live, prefetched)
        field = _FIELD_LHS.match(lhs)
        if field is not None and int(field[1]) in chosen:
            slot = int(field[1])
            if op != "=" and slot not in live:
                current = prefetch_name(slot) if slot in prefetched else f"f[{slot}]"
                out.append(f"{local_name(slot)} = {current}")
            live.add(slot)
            prefetched.discard(slot)
            lhs = local_name(slot)
        elif field is not None:
            # A store into a slot that stays in the PHV: never into its prefetched copy
            # (that copy is not written back); later reads of the slot see the PHV again.
            prefetched.discard(int(field[1]))
        else:
            lhs = _rename(lhs, live, prefetched)
        out.append(f"{lhs} {op} {rhs}")
    return _chain(_forward(out)) + write_back(live)


def _worth_prefetching(run: list[str]) -> set[int]:
    """Slots read before any write in the run that form long consecutive stretches: read with
    one slice unpacked into locals (`_r5, _r6, ... = f[5:...]`) instead of a subscript each."""
    written: set[int] = set()
    early: set[int] = set()
    for line in run:
        m = _SIMPLE.match(line)
        field = _FIELD_LHS.match(m["lhs"])
        reads = _SLOT.findall(m["rhs"]) + ([] if field else _SLOT.findall(m["lhs"]))
        early.update(int(s) for s in reads if int(s) not in written)
        if field is not None:
            written.add(int(field[1]))
    return {slot for group in _consecutive(early) if len(group) >= MIN_PREFETCH
            for slot in group}


def _prefetch_lines(slots: set[int]) -> list[str]:
    lines = []
    for group in _consecutive(slots):
        names = ", ".join(prefetch_name(s) for s in group)
        lines.append(f"{names}, = f[{group[0]}:{group[-1] + 1}]")
    return lines


def _consecutive(slots: set[int]) -> list[list[int]]:
    groups: list[list[int]] = []
    for slot in sorted(slots):
        if groups and groups[-1][-1] == slot - 1:
            groups[-1].append(slot)
        else:
            groups.append([slot])
    return groups


def _forward(lines: list[str]) -> list[str]:
    """Fold `_lN = E` into the next line when that line is E's only use and a line soon after
    (FOLD_WINDOW) assigns `_lN` again (so this value is never written back). E must be pure
    (loads, operators, no calls): moved into the next statement's right side, evaluated before
    that statement stores anything, it reads the same values."""
    out: list[str] = []
    i = 0
    while i < len(lines):
        m = _LOCAL_ASSIGN.match(lines[i])
        if m is not None and i + 1 < len(lines) and _CALL.search(m["rhs"]) is None:
            name = re.compile(rf"\b{m['name']}\b")
            nxt = _SIMPLE_LOCAL.match(lines[i + 1])
            later = lines[i + 2:i + 2 + FOLD_WINDOW]   # bounded: the pass stays linear
            reassigned = next((j for j, line in enumerate(later)
                               if line.startswith(m["name"] + " = ")), None)
            if nxt is not None and reassigned is not None and \
                    len(name.findall(nxt["rhs"])) == 1 and not name.search(nxt["lhs"]) and \
                    not any(name.search(line) for line in later[:reassigned]) and \
                    not name.search(_SIMPLE_LOCAL.match(later[reassigned])["rhs"]):
                value = m["rhs"] if _ATOM.match(m["rhs"]) else f"({m['rhs']})"
                lines[i + 1] = f"{nxt['lhs']} {nxt['op']} {name.sub(value, nxt['rhs'])}"
                i += 1
                continue
        out.append(lines[i])
        i += 1
    return out


def _chain(lines: list[str]) -> list[str]:
    """`_lN = E` then `T = _lN` becomes `T = _lN = E` (one stack copy instead of a load)."""
    out: list[str] = []
    i = 0
    while i < len(lines):
        m = _LOCAL_ASSIGN.match(lines[i])
        if m is not None and i + 1 < len(lines):
            nxt = _SIMPLE_LOCAL.match(lines[i + 1])
            if nxt is not None and nxt["op"] == "=" and nxt["rhs"] == m["name"] and \
                    m["name"] not in nxt["lhs"]:
                out.append(f"{nxt['lhs']} = {m['name']} = {m['rhs']}")
                i += 2
                continue
        out.append(lines[i])
        i += 1
    return out


def _worth_localizing(run: list[str]) -> set[int]:
    """Slots written more than once, or read back after being written, in this run."""
    writes: dict[int, int] = {}
    reads_after: dict[int, int] = {}
    for line in run:
        m = _SIMPLE.match(line)
        field = _FIELD_LHS.match(m["lhs"])
        reads = [int(s) for s in _SLOT.findall(m["rhs"])]
        if field is None:
            reads += [int(s) for s in _SLOT.findall(m["lhs"])]
        for slot in reads:
            if slot in writes:
                reads_after[slot] = reads_after.get(slot, 0) + 1
        if field is not None:
            slot = int(field[1])
            writes[slot] = writes.get(slot, 0) + 1
    return {s for s, n in writes.items() if n > 1 or reads_after.get(s)}


def _rename(code: str, live: set[int], prefetched: set[int]) -> str:
    if not live and not prefetched:
        return code

    def name(m: re.Match) -> str:
        slot = int(m[1])
        if slot in live:
            return local_name(slot)
        return prefetch_name(slot) if slot in prefetched else m[0]
    return _SLOT.sub(name, code)


def write_back(slots: set[int]) -> list[str]:
    """Stores of the locals back into their slots; consecutive slots as one slice."""
    lines = []
    ordered = sorted(slots)
    i = 0
    while i < len(ordered):
        j = i
        while j + 1 < len(ordered) and ordered[j + 1] == ordered[j] + 1:
            j += 1
        first, last = ordered[i], ordered[j]
        if j - i + 1 >= MIN_SLICE:
            names = ", ".join(local_name(s) for s in range(first, last + 1))
            lines.append(f"f[{first}:{last + 1}] = [{names}]")
        else:
            lines.append(f"f[{first}] = {local_name(first)}")
        i = j + 1
    return lines


_SIMPLE_STORE = re.compile(r"f\[(\d+)\] = (p\[\d+\]|-?\d+)")


def pack_simple_stores(lines: list[str], shortest: int = 3) -> list[str]:
    """Runs of top-level stores of action data or constants into consecutive slots
    (`f[7] = p[0]`, `f[8] = p[1]`, `f[9] = 0`) as one slice store: nothing they store reads
    the PHV, so the order does not matter, and one STORE_SLICE costs less than n stores."""
    out: list[str] = []
    run: list[tuple[int, str]] = []

    def flush() -> None:
        if len(run) >= shortest:
            first = run[0][0]
            out.append(f"f[{first}:{first + len(run)}] = ({', '.join(v for _, v in run)},)")
        else:
            out.extend(f"f[{slot}] = {value}" for slot, value in run)
        run.clear()

    for line in lines:
        match = _SIMPLE_STORE.fullmatch(line)
        if match is not None:
            slot = int(match.group(1))
            if run and slot != run[-1][0] + 1:
                flush()
            run.append((slot, match.group(2)))
            continue
        flush()
        out.append(line)
    flush()
    return out
