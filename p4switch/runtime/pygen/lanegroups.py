"""Recognising lane groups: runs of isomorphic primitives over parallel fields and registers.

P4 has no loops, so a program that works on k values per packet repeats the same statements k
times (ina.p4's lane macros): `R_i.read(t, idx); h.v_i = h.v_i + t; R_i.write(idx, h.v_i)` for
i = 0..k-1. `lanes.py` runs such a group as a few numpy operations; this module finds them.

Recognition is structural, on an action's BMv2 JSON primitives, never by name: a run of r >=
MIN_LANES copies of a template of p primitives (assign/modify_field, register_read,
register_write, and p4c's `_jump_if_zero`/`_jump`, compared with targets relative to the copy)
whose JSON trees are identical except for *lane operands*, which differ in every copy: fields
(the copies' fields must sit in consecutive PHV slots, same width and sign) and register arrays
(same size and width; they become the columns of one `regbanks.RegisterBank`). Every other
operand is *shared* and identical in every copy. The copies must be independent, so running
statement by statement over all lanes is the same as copy after copy:

- a lane operand belongs to one copy only (no field or register in two lanes or two roles);
- a shared field written in the copies (a scratch variable, ina.p4's `lane`) is written before
  it is read in each copy; it ends with the last copy's value;
- every register index is the same expression, reading nothing the copies write;
- a branch (a jump diamond) holds only assignments, and a shared field it assigns is assigned
  on both sides;
- the one exception to "written before read": an *accumulator*, a shared field whose only use
  in a copy is `a = a | e` (or `&`, `^`; e not reading a), as ina.p4's packed add collects
  overflow bits. Those operators are order-free and commute with truncation to a width, so the
  copies' e values can be reduced first and combined into a once.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field

from ..config import ConfigError, Node
from ..state.regbanks import MAX_BANK_WIDTH, BankColumn, RegisterBank

MIN_LANES = 16        # fewer copies run faster as plain Python statements (measured)
MAX_PERIOD = 8        # primitives per lane template
JUMPS = ("_jump", "_jump_if_zero")
OPS = ("assign", "modify_field", "register_read", "register_write") + JUMPS


@dataclass
class LaneGroup:
    start: int                       # index of the first primitive of the run
    period: int                      # primitives per copy
    lanes: int                       # copies
    template: list[dict]             # the first copy's primitives (raw JSON)
    lane_fields: dict[tuple, list[int]] = field(default_factory=dict)  # copy-0 field -> slots
    lane_regs: dict[str, list[str]] = field(default_factory=dict)      # copy-0 reg -> registers
    accumulators: dict[tuple, str] = field(default_factory=dict)       # shared field -> op

    @property
    def end(self) -> int:
        return self.start + self.period * self.lanes


# ------------------------------------------------------------------------------ recognition
def _shape(value, leaves: list) -> object:
    """A hashable skeleton of a JSON operand tree; field and register leaves go to `leaves`."""
    if isinstance(value, dict):
        kind = value.get("type")
        if kind == "field" and isinstance(value.get("value"), list):
            leaves.append(("field", tuple(value["value"])))
            return "F"
        if kind == "register_array":
            leaves.append(("reg", value.get("value")))
            return "R"
        return tuple(sorted((k, _shape(v, leaves)) for k, v in value.items()
                            if k != "source_info"))
    if isinstance(value, list):
        return tuple(_shape(v, leaves) for v in value)
    return json.dumps(value)


def _copy_shape(prims: list[dict], base: int = 0) -> tuple[object, list]:
    """Skeleton and leaves of one copy; jump targets relative to the copy's first primitive
    (p4c's `?:` in an action is `_jump_if_zero`/`_jump` with absolute targets)."""
    leaves: list = []
    return tuple(_shape(_relative_jump(p, base), leaves) for p in prims), leaves


def _jump_target(prim: dict) -> int | None:
    """The absolute target of a `_jump`/`_jump_if_zero`, None for other primitives."""
    params = prim.get("parameters") or []
    op = prim.get("op")
    node = params[0] if op == "_jump" and params else params[1] if op == "_jump_if_zero" and \
        len(params) == 2 else None
    if node is None or node.get("type") != "hexstr":
        return None
    try:
        return Node(node.get("value"), "lanes").hexstr()
    except ConfigError:
        return None


def _relative_jump(prim: dict, base: int) -> dict:
    if prim.get("op") not in JUMPS:
        return prim
    target = _jump_target(prim)
    params = list(prim.get("parameters") or [])
    at = 0 if prim["op"] == "_jump" else 1
    if target is None or len(params) <= at:
        return {**prim, "op": "?bad-jump"}
    params[at] = {"type": "relative", "value": target - base}
    return {**prim, "parameters": params}


def find_groups(prims: list[Node], layout, registers: dict) -> list[LaneGroup]:
    """Non-overlapping lane groups of an action's primitive list, in order."""
    raw = [p.value for p in prims]
    if any(not isinstance(p, dict) for p in raw):
        return []
    groups = []
    s = 0
    while s < len(raw):
        best = None
        for period in range(1, MAX_PERIOD + 1):
            if s + period * MIN_LANES > len(raw):
                break
            if any(p.get("op") not in OPS for p in raw[s:s + period]):
                break
            lanes = _run_length(raw, s, period)
            if lanes >= MIN_LANES and (best is None or period * lanes > best[0] * best[1]):
                best = (period, lanes)
        if best is None:
            s += 1
            continue
        group = _trimmed(raw, s, best[0], best[1], layout, registers)
        if group is None:
            s += best[0] * best[1]   # a shifted run would fail the same way: stay linear
            continue
        groups.append(group)
        s = group.end
    return groups


def _run_length(raw, start: int, period: int) -> int:
    """How many copies of the `period` primitives at `start` follow each other."""
    shape, _ = _copy_shape(raw[start:start + period], start)
    lanes = 1
    while start + (lanes + 1) * period <= len(raw) and _copy_shape(
            raw[start + lanes * period:start + (lanes + 1) * period], start + lanes * period)[0] \
            == shape:
        lanes += 1
    return lanes


def _trimmed(raw, start, period, lanes, layout, registers) -> LaneGroup | None:
    """The run as a group; else the same run rotated (started 1..period-1 primitives later)
    or without its first and/or last copy. A statement next to the lanes with their shape
    (ina.p4's block exponent: read, max-combined and written like a value lane, but 8 bits
    wide through its own scratch field) can make the longest run start one copy early or
    mid-copy; that must not cost the lanes their vector code."""
    for shift in range(period):
        run = lanes if shift == 0 else _run_length(raw, start + shift, period)
        for drop_first, drop_last in ((0, 0), (1, 0), (0, 1), (1, 1)):
            kept = run - drop_first - drop_last
            if kept < MIN_LANES:
                break
            group = _checked(raw, start + shift + drop_first * period, period, kept, layout,
                             registers)
            if group is not None:
                return group
    return None


def _checked(raw, start, period, lanes, layout, registers) -> LaneGroup | None:
    """The group if its copies are provably independent and vectorisable, else None."""
    copies = [_copy_shape(raw[start + i * period:start + (i + 1) * period],
                          start + i * period)[1] for i in range(lanes)]
    template = [_relative_jump(p, start) for p in raw[start:start + period]]
    if _diamonds(template) is None:
        return None
    group = LaneGroup(start, period, lanes, template)
    shared: set[tuple] = set()
    seen_lane: set = set()
    for position, leaf in enumerate(copies[0]):
        column = [copy[position] for copy in copies]
        if all(c == leaf for c in column):
            if leaf[0] == "reg":
                return None            # one register in every copy: copies would interfere
            shared.add(leaf[1])
            continue
        if len(set(column)) != lanes:
            return None                # neither shared nor one per lane
        values = [c[1] for c in column]
        table = group.lane_fields if leaf[0] == "field" else group.lane_regs
        if leaf[1] in table:
            if table[leaf[1]] != _lane_values(leaf[0], values, layout, registers):
                return None
            continue
        if any(v in seen_lane for v in values):
            return None                # the same field or register in two lane roles
        seen_lane.update(values)
        resolved = _lane_values(leaf[0], values, layout, registers)
        if resolved is None:
            return None
        table[leaf[1]] = resolved
    if shared & seen_lane:
        return None
    try:
        shared_slots = {_slot(layout, key) for key in shared}
    except ConfigError:
        return None
    lane_slots = {s for slots in group.lane_fields.values() for s in slots}
    if None in shared_slots or shared_slots & lane_slots:
        return None
    if not _independent(group, layout):
        return None
    return group


def _slot(layout, key: tuple) -> int | None:
    ref = layout.field(key[0], key[1], Node(list(key), "lanes"))
    return None if ref.is_valid_bit or ref.width is None else ref.slot


def _lane_values(kind: str, values: list, layout, registers: dict):
    """Slots of lane fields (consecutive, same width and sign) or names of lane registers."""
    if kind == "reg":
        regs = [registers.get(name) for name in values]
        if None in regs or not (RegisterBank.fits(regs) or _same_bank(regs)):
            return None
        return values
    try:
        refs = [layout.field(v[0], v[1], Node(list(v), "lanes")) for v in values]
    except (ConfigError, IndexError):
        return None
    first = refs[0]
    if first.is_valid_bit or first.width is None or first.width > MAX_BANK_WIDTH:
        return None
    for i, ref in enumerate(refs):
        if ref.is_valid_bit or ref.slot != first.slot + i or ref.width != first.width or \
                ref.signed != first.signed:
            return None
    return [ref.slot for ref in refs]


def _same_bank(regs: list) -> bool:
    """Registers already banked (by an earlier group) in this order, as consecutive columns."""
    cells = [r.cells for r in regs]
    if not all(isinstance(c, BankColumn) for c in cells):
        return False
    array = cells[0].array
    return all(c.array is array and c.column == cells[0].column + i for i, c in enumerate(cells))


def _fields_in(value) -> set[tuple]:
    leaves: list = []
    _shape(value, leaves)
    return {leaf[1] for leaf in leaves if leaf[0] == "field"}


REDUCTIONS = ("|", "&", "^")   # order-free, and they commute with truncation to a width


def _op_node(node):
    """The operator dict inside a primitive parameter's `expression` wrappers, or None."""
    while isinstance(node, dict) and node.get("type") == "expression":
        node = node.get("value")
        if isinstance(node, dict) and "op" in node:
            return node
    return None


def reduction(prim: dict):
    """(field, op, e) when `prim` is `field = field op e` or `field = e op field` with op in
    REDUCTIONS and e not reading the field; else None."""
    params = prim.get("parameters") or []
    if prim.get("op") not in ("assign", "modify_field") or len(params) != 2 or \
            params[0].get("type") != "field":
        return None
    key = tuple(params[0]["value"])
    node = _op_node(params[1])
    if node is None or node.get("op") not in REDUCTIONS:
        return None
    for mine, other in (("left", "right"), ("right", "left")):
        side = node.get(mine)
        if isinstance(side, dict) and side.get("type") == "field" and \
                tuple(side.get("value") or ()) == key and key not in _fields_in(node.get(other)):
            return key, node["op"], node[other]
    return None


def _accumulators(template: list[dict], lane_fields: dict) -> dict[tuple, str]:
    """Shared fields a copy only combines into, once, outside any branch (module docstring)."""
    if any(p.get("op") in JUMPS for p in template):
        return {}
    found = {}
    for i, prim in enumerate(template):
        parts = reduction(prim)
        if parts is None or parts[0] in lane_fields:
            continue
        key = parts[0]
        if any(key in _fields_in(p.get("parameters")) for j, p in enumerate(template) if j != i):
            continue                       # read or written elsewhere in the copy
        found[key] = parts[1]
    return found


def _independent(group: LaneGroup, layout) -> bool:
    """Shared fields are written before read in a copy (accumulators aside); one index
    expression, never written."""
    written: set[tuple] = set()
    index = None
    group.accumulators = _accumulators(group.template, group.lane_fields)
    for prim in group.template:
        params = prim.get("parameters") or []
        op = prim["op"]
        if op in ("assign", "modify_field"):
            if len(params) != 2 or params[0].get("type") != "field":
                return False
            reads, target = _fields_in(params[1]), tuple(params[0]["value"])
            reads.discard(target if target in group.accumulators else None)
        elif op == "_jump_if_zero":
            reads, target = _fields_in(params[0]), None
        elif op == "_jump":
            reads, target = set(), None
        elif op == "register_read":
            if len(params) != 3 or params[0].get("type") != "field":
                return False
            reads, target = set(), tuple(params[0]["value"])
            index = _same_index(index, params[2])
        else:
            if len(params) != 3:
                return False
            reads, target = _fields_in(params[2]), None
            index = _same_index(index, params[1])
        if index is False:
            return False
        for key in reads:
            if key not in group.lane_fields and key not in written and \
                    _written_later(group.template, key):
                return False       # read before this copy writes it: the previous copy's value
        if target is not None:
            written.add(target)
    if index is not None:
        index_reads = _fields_in(index)
        if index_reads & written or index_reads & set(group.lane_fields):
            return False
    if group.lane_regs and index is None:
        return False
    return _branches_write_shared_both_ways(group)


def _diamonds(template: list[dict]):
    """The template as a list of primitives and (condition, then, else) diamonds, or None.

    `_jump_if_zero(c, T)` skips to T when c is 0; a `_jump(U)` just before T ends the then
    part and makes T..U-1 the else part. Only forward jumps inside the copy, no nesting, and
    only assignments inside the branches (register accesses stay unconditional)."""
    items: list = []
    i = 0
    n = len(template)
    while i < n:
        prim = template[i]
        op = prim["op"]
        if op == "_jump":
            return None
        if op != "_jump_if_zero":
            items.append(prim)
            i += 1
            continue
        target = prim["parameters"][1]["value"]
        if not i < target <= n:
            return None
        then = template[i + 1:target]
        other: list = []
        end = target
        if then and then[-1]["op"] == "_jump":
            end = then[-1]["parameters"][0]["value"]
            if not target <= end <= n:
                return None
            then, other = then[:-1], template[target:end]
        if any(p["op"] not in ("assign", "modify_field") for p in then + other):
            return None
        items.append((prim["parameters"][0], then, other))
        i = end
    return items


def _branches_write_shared_both_ways(group: LaneGroup) -> bool:
    """A shared field assigned on one side of a diamond only keeps, on the other side, its
    value from before: the previous copy's, unless this copy wrote it earlier. Refused."""
    written: set[tuple] = set()
    for item in _diamonds(group.template) or []:
        if isinstance(item, dict):
            params = item.get("parameters") or []
            if item["op"] in ("assign", "modify_field", "register_read"):
                written.add(tuple(params[0]["value"]))
            continue
        _, then, other = item
        sides = [{tuple(p["parameters"][0]["value"]) for p in side} for side in (then, other)]
        for key in sides[0] ^ sides[1]:
            if key not in group.lane_fields and key not in written:
                return False
        written |= sides[0] | sides[1]
    return True


def _same_index(current, node):
    if current is None:
        return node
    return current if json.dumps(current, sort_keys=True) == json.dumps(node, sort_keys=True) \
        else False


def _written_later(template: list[dict], key: tuple) -> bool:
    for prim in template:
        params = prim.get("parameters") or []
        if prim["op"] in ("assign", "modify_field", "register_read") and params and \
                params[0].get("type") == "field" and tuple(params[0]["value"]) == key:
            return True
    return False
