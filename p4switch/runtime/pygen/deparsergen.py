"""The deparser (with checksum updates) compiled into `deparse(f, v, payload) -> bytes`.

Each valid header in the deparser's order is packed into one int and turned into bytes; the
payload (the bytes the parser did not consume) follows. Checksum updates run first, as in BMv2's
deparser.
"""

from __future__ import annotations

import struct

from ..config import Node
from ..phv.layout import HeaderInstance
from ..phv.vheaders import bytes_code
from ..phv.wordplan import word_plan
from ..phv.writes import code_writes
from .calcgen import SUM_TERMS
from .exprgen import CodeScope, compile_expr, boolean
from .primgen import PrimitiveCompiler


def header_bytes_code(inst: HeaderInstance, scope: CodeScope) -> str:
    """Code for the bytes of a (fixed-size) header instance."""
    runs = scope.namespace.get("__vector_runs__", {}).get(inst.index)
    if runs:
        return bytes_code(runs, scope, header_bytes_code)
    plan = word_plan(inst.htype)
    if plan is not None:
        pack = scope.bind("pack", struct.Struct(plan.fmt).pack)
        if plan.direct:
            return f"{pack}(*f[{inst.base}:{inst.base + len(inst.htype.fields)}])"
        fields = [f"f[{inst.base + i}]" for i in range(len(inst.htype.fields))]
        return f"{pack}({', '.join(plan.word_codes(fields))})"
    total = inst.htype.fixed_bits
    parts = []
    shift = total
    for i, (_, width, signed) in enumerate(inst.htype.fields):
        shift -= width
        code = f"f[{inst.base + i}]"
        if signed:
            code = f"({code} & {(1 << width) - 1})"
        parts.append(f"({code} << {shift})" if shift else code)
    if not parts:
        return "b''"
    return f"({' | '.join(parts)}).to_bytes({total // 8}, 'big')"


def serialize_varbit(f: list, base: int, widths: list, length_slot: int) -> bytes:
    """Bytes of a header with a variable-length field (its width is `None` in `widths`)."""
    value = 0
    total = 0
    for i, width in enumerate(widths):
        if width is None:
            width = f[length_slot]
        value = (value << width) | (f[base + i] & ((1 << width) - 1))
        total += width
    return value.to_bytes(total // 8, "big")


def check_emittable(inst: HeaderInstance, where: Node) -> None:
    if inst.htype.fixed_bits % 8:
        raise where.error(f"header '{inst.name}' is {inst.htype.fixed_bits} bits, not a whole "
                          "number of bytes")


def deparse_order(deparser: Node, scope: CodeScope) -> list[HeaderInstance]:
    order = []
    for item in deparser["order"].items():
        inst = scope.layout.header(item.str(), item)
        check_emittable(inst, item)
        order.append(inst)
    return order


def compile_deparser(deparser: Node, checksums: list[tuple[Node, str]], scope: CodeScope,
                     traced: bool) -> str:
    order = deparse_order(deparser, scope)
    lines = _deparse_function("deparse(f, v, payload)", order, deparser, checksums, scope,
                              traced, {})
    return "\n".join(lines)


def compile_replica_deparser(deparser: Node, checksums: list[tuple[Node, str]],
                             scope: CodeScope, shared: list[int]) -> str:
    """`deparse_replica(f, v, payload, memo)`: `deparse` for multicast replicas, where the
    headers in `shared` (validity indices; nothing after ingress can change them) are
    serialised by the first replica into `memo` (a list of None, one per shared header) and
    reused by the others."""
    order = deparse_order(deparser, scope)
    memo = {index: position for position, index in enumerate(shared)}
    partial = _replica_checksum_parts(checksums, scope, len(shared))
    return "\n".join(_deparse_function("deparse_replica(f, v, payload, memo)", order, deparser,
                                       checksums, scope, False, memo, partial))


REPLICA_EXTRA = "__replica_memo_extra__"   # namespace key: memo slots beyond shared headers


def _replica_checksum_parts(checksums: list[tuple[Node, str]], scope: CodeScope,
                            first: int) -> dict[str, tuple[int, list, list]]:
    """For checksums that are plain sums of terms (calcgen), the terms no code after ingress
    can change (their fields and header validity) are summed once per multicast, into memo
    slot `first + j`; the replicas add only the others. calc -> (memo slot, [(validity index,
    [invariant terms])], [(validity index, [other terms])])."""
    structures = scope.namespace.get(SUM_TERMS, {})
    sources = scope.namespace.get("__source__", [])
    after = [src for src in sources if src.startswith(("def egress(", "def deparse("))]
    if len(after) != 2:
        return {}
    writes = code_writes("\n".join(after))
    if writes.anything:
        return {}
    parts: dict[str, tuple[int, list, list]] = {}
    for _, calc in checksums:
        structure = structures.get(calc)
        if structure is None or calc in parts:
            continue
        fixed, varying = [], []
        for index, terms in structure:
            steady = index is None or index not in writes.valid
            keep = [t for t in terms if steady and not _touches(t, writes)]
            rest = [t for t in terms if t not in keep]
            if keep:
                fixed.append((index, keep))
            if rest:
                varying.append((index, rest))
        if fixed:
            parts[calc] = (first + len(parts), fixed, varying)
    scope.namespace[REPLICA_EXTRA] = len(parts)
    return parts


def _touches(term: str, writes) -> bool:
    import re
    slots = {int(x) for x in re.findall(r"\bf\[(\d+)\]", term)}
    flags = {int(x) for x in re.findall(r"\bv\[(\d+)\]", term)}
    if re.search(r"\bf\[(?!\d+\])", term) or re.search(r"\bv\[(?!\d+\])", term):
        return True                  # a computed index: anything
    return bool(slots & writes.fields or flags & writes.valid)


def _sum_code(groups: list, indent: str, target: str) -> list[str]:
    lines = []
    for index, terms in groups:
        if index is None:
            lines.append(f"{indent}{target} += {' + '.join(terms)}")
        else:
            lines += [f"{indent}if v[{index}]:", f"{indent}    {target} += {' + '.join(terms)}"]
    return lines


def _deparse_function(signature: str, order: list[HeaderInstance], deparser: Node,
                      checksums: list[tuple[Node, str]], scope: CodeScope, traced: bool,
                      memo: dict[int, int], partial: dict | None = None) -> list[str]:
    layout = scope.layout
    lines = [f"def {signature}:"]
    for node, calc in checksums:
        target = layout.field(node["target"][0].str(), node["target"][1].str(), node["target"])
        if target.width is None or target.is_valid_bit:
            raise node["target"].error("a checksum target must be a fixed-width field")
        mask = (1 << target.width) - 1
        indent = "    "
        if node.has("if_cond"):
            cond = compile_expr(node["if_cond"], scope)
            lines.append(f"    if {boolean(cond)}:")
            indent = "        "
        split = (partial or {}).get(calc)
        if split is None:
            lines.append(f"{indent}f[{target.slot}] = {calc}(f, v, payload) & {mask}")
        else:
            position, fixed, varying = split
            lines += [f"{indent}s = memo[{position}]", f"{indent}if s is None:",
                      f"{indent}    s = 0"] + _sum_code(fixed, indent + "    ", "s") + \
                [f"{indent}    memo[{position}] = s"] + _sum_code(varying, indent, "s") + \
                [f"{indent}f[{target.slot}] = (65535 if not s else "
                 f"~(s % 65535 or 65535) & 65535) & {mask}"]
        if traced:
            lines.append(f"{indent}T.checksum_update({node['name'].value!r}, f[{target.slot}])")
    if deparser.has("primitives"):
        prims = PrimitiveCompiler(scope, traced)
        for prim in deparser["primitives"].items():
            lines += ["    " + line for line in prims.compile_primitive(prim)]
    if memo:
        return lines + _replica_emission(order, scope, memo)
    lines.append("    out = []")
    for inst in order:
        lines.append(f"    if v[{inst.index}]:")
        if traced:
            lines.append(f"        T.emit({inst.name!r})")
        lines.append(f"        out.append({_bytes_code(inst, scope)})")
    lines.append("    out.append(payload)")
    lines.append("    return b''.join(out)")
    return lines


def _replica_emission(order: list[HeaderInstance], scope: CodeScope,
                      memo: dict[int, int]) -> list[str]:
    """A replica's bytes: each run of consecutive shared headers (and the payload, after a
    shared last header) is joined into one bytes by the first replica (memo[0] holds them
    all), the other headers are packed per replica; one join of those few pieces. ~10 lines
    of Python per replica where one `if`/append per header took ~25 for ina.p4."""
    groups: list[list[HeaderInstance]] = []
    pieces: list[str] = []          # per-replica code, a group as `g<i>`
    for inst in order:
        if inst.index in memo:
            if not pieces or not pieces[-1].startswith("g"):
                groups.append([])
                pieces.append(f"g{len(groups) - 1}")
            groups[-1].append(inst)
        else:
            pieces.append(f"({_bytes_code(inst, scope)} if v[{inst.index}] else b'')")
    with_payload = bool(pieces) and pieces[-1].startswith("g")
    if not with_payload:
        pieces.append("payload")
    names = [f"g{i}" for i in range(len(groups))]
    lines = ["    m = memo[0]", "    if m is None:"]
    for i, group in enumerate(groups):
        lines.append("        out = []")
        for inst in group:
            lines += [f"        if v[{inst.index}]:",
                      f"            out.append({_bytes_code(inst, scope)})"]
        if with_payload and i == len(groups) - 1:
            lines.append("        out.append(payload)")
        lines.append(f"        g{i} = b''.join(out)")
    lines += [f"        m = memo[0] = ({', '.join(names)},)",
              f"    {', '.join(names)}, = m",
              f"    return b''.join(({', '.join(pieces)},))"]
    return lines


def _bytes_code(inst: HeaderInstance, scope: CodeScope) -> str:
    if inst.varbit_len_slot is None:
        return header_bytes_code(inst, scope)
    widths = [w for _, w, _ in inst.htype.fields]
    return f"_serialize_varbit(f, {inst.base}, {widths!r}, {inst.varbit_len_slot})"
