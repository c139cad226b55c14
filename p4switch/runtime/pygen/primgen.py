"""Translating BMv2 action primitives (and parser `primitive` ops) into Python statements.

Each primitive becomes a few lines over `f`/`v`/`p`; stores truncate to the field width unless the
value is already known to fit (p4c usually masks explicitly). An action that uses `_jump` /
`_jump_if_zero` becomes a small program-counter loop; every other action is straight-line code
that the control generator inlines at each table that can run it.
"""

from __future__ import annotations

import re

from ..config import ConfigError, Node
from ..phv import layout as L
from ..phv.vheaders import zero_lines
from . import lanes
from .exprgen import CodeScope, Expr, HeaderRef, compile_expr, data, boolean
from .localize import localize_fields, pack_simple_stores
from .primexterns import EXTERN_HELPERS, ExternCompiler
from .stores import Target, compile_target, const_param, int_param, need, store

DROP_PORT = 511

__all__ = ["PrimitiveCompiler", "Target", "compile_target", "store", "DROP_PORT", "PRIM_HELPERS"]


class PrimitiveCompiler:
    """Compiles primitive calls of one action (or parser state) into lines of Python; the
    extern primitives through its `ExternCompiler` (primexterns.py)."""

    def __init__(self, scope: CodeScope, traced: bool):
        self.scope = scope
        self.layout = scope.layout
        self.traced = traced
        self._tmp = 0
        self.externs = ExternCompiler(scope, self.tmp)

    def tmp(self) -> str:
        self._tmp += 1
        return f"_t{self._tmp}"

    # --------------------------------------------------------------------------- entry points
    def compile_body(self, prims: list[Node]) -> tuple[list[str], bool]:
        """Lines for a whole primitive list, and whether it may execute `exit`."""
        ops = [p["op"].str() for p in prims]
        has_exit = "exit" in ops
        groups = {} if self.traced or not lanes.ENABLED else {
            g.start: g for g in lanes.find_groups(prims, self.layout,
                                                  self.scope.namespace["__registers__"])}
        jumps = [i for i, op in enumerate(ops) if op in ("_jump", "_jump_if_zero")]
        outside = [i for i in jumps if not any(g.start <= i < g.end for g in groups.values())]
        segments = _jump_segments(prims, groups, outside, self.scope) if outside else {}
        if segments is None:
            return self._compile_with_jumps(prims), has_exit
        # (jumps inside lane groups stay inside their copy: the groups' code has no jumps;
        # jumps between groups stay inside their stretch, which runs as a jump loop of its own)
        lines: list[str] = []
        externs = self.externs
        externs.start_run()
        at = 0
        while at < len(prims):
            end = segments.get(at)
            if end is not None:
                externs.end_run()
                lines += self._compile_with_jumps(prims[at:end], base=at)
                externs.start_run()
                at = end
                continue
            group = groups.get(at)
            if group is not None:   # lane-parallel primitives as numpy code (lanes.py)
                body = lanes.VectorCompiler(group, self.scope, self.tmp).compile()
                if body is None and jumps:
                    return self._compile_with_jumps(prims), has_exit
                if body is not None:
                    lines += body
                    externs.forget_all()
                    at = group.end
                    continue
            prim = prims[at]
            at += 1
            # `exit` only marks the packet (BMv2): the action's later primitives still run,
            # the control ends after the action (controlgen)
            body = self.compile_primitive(prim)
            lines += externs.take_prelude() + body
            externs.forget_written(body)
        externs.end_run()
        lines = _split_on_guard(_merge_guards(lines))
        if not self.traced:  # trace events read fields by their slots: leave them exact
            lines = pack_simple_stores(localize_fields(lines))
        return lines, has_exit

    def _compile_with_jumps(self, prims: list[Node], base: int = 0) -> list[str]:
        """Primitives with p4c's jumps as a loop over a program counter; `base`: the index of
        prims[0] in the action (jump targets are absolute; one to the end leaves the loop)."""
        pc = self.tmp()
        lines = [f"{pc} = {base}", "while True:"]
        for i, prim in enumerate(prims, start=base):
            op = prim["op"].str()
            params = prim.get("parameters").items()
            lines.append(f"    if {pc} == {i}:")
            if op == "_jump":
                target = const_param(params[0] if params else prim, self.scope)
                lines += [f"        {pc} = {target}", "        continue"]
                continue
            if op == "_jump_if_zero":
                if len(params) != 2:
                    raise prim.error("_jump_if_zero takes 2 parameters")
                cond = int_param(params[0], self.scope)
                target = const_param(params[1], self.scope)
                lines += [f"        if not {boolean(cond)}:", f"            {pc} = {target}",
                          "            continue"]
            else:  # `exit` included: it marks the packet, the action goes on
                lines += ["        " + line for line in self.compile_primitive(prim)]
            lines.append(f"        {pc} = {i + 1}")
        lines.append("    break")
        return lines

    # ----------------------------------------------------------------------------- primitives
    def compile_primitive(self, prim: Node) -> list[str]:
        op = prim["op"].str()
        params = prim.get("parameters").items()
        name = op.lstrip("_")
        handler = getattr(self, "_p_" + name, None) or self.externs.handler(name)
        if handler is None:
            raise prim["op"].error(f"unsupported primitive '{op}'")
        return handler(prim, params)

    def _p_assign(self, prim, params):
        need(prim, params, 2)
        kind = params[0].type_value()[0]
        if kind == "header":
            return self._p_assign_header(prim, params)
        if kind == "header_union":
            return self._p_assign_union(prim, params)
        if kind == "header_stack":
            return self._p_assign_header_stack(prim, params)
        return [store(compile_target(params[0], self.scope), int_param(params[1], self.scope))]

    _p_modify_field = _p_assign

    def _p_assign_VL(self, prim, params):
        need(prim, params, 2)
        dst = compile_target(params[0], self.scope)
        src = compile_target(params[1], self.scope)
        lines = [f"{dst.code} = {src.code}"]
        if dst.varbit_len and src.varbit_len:
            lines.append(f"{dst.varbit_len} = {src.varbit_len}")
        return lines

    def _header(self, node: Node):
        expr = compile_expr(node, self.scope)
        if expr.kind != "header":
            raise node.error(f"expected a header, got a {expr.kind}")
        return expr.ref

    def _copy_header_lines(self, dst, src) -> list[str]:
        """simple_switch's assign_header: a valid source is copied, field by field; an invalid
        one only makes the destination invalid (its fields keep their values)."""
        n = len(dst.htype.fields)
        lines = [f"if v[{src.valid}]:", f"    v[{dst.valid}] = 1"]
        if n:
            lines.append(f"    f[{dst.base}:{dst.base} + {n}] = f[{src.base}:{src.base} + {n}]")
        if dst.static is not None and src.static is not None and dst.static.varbit_len_slot:
            lines.append(f"    f[{dst.static.varbit_len_slot}] = "
                         f"f[{src.static.varbit_len_slot}]")
        return lines + ["else:", f"    v[{dst.valid}] = 0"]

    def _p_assign_header(self, prim, params):
        need(prim, params, 2)
        dst, src = self._header(params[0]), self._header(params[1])
        if dst.htype is not src.htype and [f[1:] for f in dst.htype.fields] != \
                [f[1:] for f in src.htype.fields]:
            raise prim.error("assign_header needs two headers of the same type")
        return self._copy_header_lines(dst, src)

    def _union(self, node: Node):
        expr = compile_expr(node, self.scope)
        if expr.kind != "union":
            raise node.error(f"expected a header union, got a {expr.kind}")
        return expr.ref

    def _p_assign_union(self, prim, params):
        need(prim, params, 2)
        dst, src = self._union(params[0]), self._union(params[1])
        if len(dst.members) != len(src.members):
            raise prim.error("assign_union needs two unions of the same type")
        lines = []
        for d, s in zip(dst.members.values(), src.members.values()):
            lines += self._copy_header_lines(HeaderRef(d.htype, str(d.index), str(d.base), d),
                                             HeaderRef(s.htype, str(s.index), str(s.base), s))
        return lines

    def _stack(self, node: Node):
        expr = compile_expr(node, self.scope)
        if expr.kind != "stack":
            raise node.error(f"expected a header stack, got a {expr.kind}")
        return expr.ref

    def _p_assign_header_stack(self, prim, params):
        need(prim, params, 2)
        dst, src = self._stack(params[0]), self._stack(params[1])
        if dst.size != src.size:
            raise prim.error("assign_header_stack needs two stacks of the same size")
        d0, s0 = dst.headers[0], src.headers[0]
        lines = [f"f[{dst.next_slot}] = f[{src.next_slot}]"]
        for k in range(dst.size):   # each element as assign_header copies it (above)
            dv, sv = d0.index + k, s0.index + k
            db, sb = d0.base + k * dst.stride, s0.base + k * src.stride
            lines += [f"if v[{sv}]:", f"    v[{dv}] = 1",
                      f"    f[{db}:{db + dst.stride}] = f[{sb}:{sb + dst.stride}]",
                      "else:", f"    v[{dv}] = 0"]
        for d, s in zip(_varbit_length_slots(dst), _varbit_length_slots(src)):
            lines.append(f"f[{d}] = f[{s}]")   # varbit lengths live outside the stride
        return lines

    def _p_assign_union_stack(self, prim, params):
        need(prim, params, 2)
        dst, dst_shape = self._union_stack_layout(params[0])
        src, src_shape = self._union_stack_layout(params[1])
        if self.scope.namespace[dst_shape] != self.scope.namespace[src_shape] and \
                [[n for _, _, n in u] for u in self.scope.namespace[dst_shape]] != \
                [[n for _, _, n in u] for u in self.scope.namespace[src_shape]]:
            raise prim.error("assign_union_stack needs two union stacks of the same type")
        return [f"_union_stack_copy(f, v, {dst_shape}, {src_shape})",
                f"f[{dst.next_slot}] = f[{src.next_slot}]"]

    def _p_add_header(self, prim, params):
        need(prim, params, 1)
        ref = self._header(params[0])
        n = len(ref.htype.fields)
        lines = [f"if not v[{ref.valid}]:", f"    v[{ref.valid}] = 1"]
        runs = None if ref.static is None or self.traced else \
            self.scope.namespace.get("__vector_runs__", {}).get(ref.static.index)
        if runs:   # vector runs (vheaders.py): the int 0 stands for a run of zeros
            lines += ["    " + line for line in zero_lines(runs)]
        elif n:
            lines.append(f"    f[{ref.base}:{ref.base} + {n}] = {[0] * n!r}")
        inst = ref.static
        if inst is not None and inst.union:
            for other in self.layout.unions[inst.union].members.values():
                if other is not inst:
                    lines.append(f"    v[{other.index}] = 0")
        return lines

    _p_setValid = _p_add_header

    def _p_remove_header(self, prim, params):
        need(prim, params, 1)
        return [f"v[{self._header(params[0]).valid}] = 0"]

    _p_setInvalid = _p_remove_header

    def _union_stack_layout(self, node: Node):
        expr = compile_expr(node, self.scope)
        if expr.kind != "union_stack":
            raise node.error(f"expected a header union stack, got a {expr.kind}")
        ustack = expr.ref
        shape = tuple(tuple((m.index, m.base, len(m.htype.fields)) for m in u.members.values())
                      for u in ustack.unions)
        return ustack, self.scope.bind("ushape", shape)

    def _stack_shift(self, prim, params, helper: str):
        need(prim, params, 2)
        kind = params[0].type_value()[0]
        if kind == "header_union_stack":
            ustack, shape = self._union_stack_layout(params[0])
            count = int_param(params[1], self.scope)
            return [f"_union_stack_shift(f, v, {shape}, {ustack.next_slot}, "
                    f"{'' if helper == '_stack_push' else '-'}({data(count)}))"]
        stack = self._stack(params[0])
        count = int_param(params[1], self.scope)
        first = stack.headers[0]
        lines = [f"{helper}(f, v, {first.index}, {first.base}, {stack.stride}, {stack.size}, "
                 f"{stack.next_slot}, {data(count)})"]
        lengths = _varbit_length_slots(stack)
        if lengths:   # each element's varbit length moves with it
            sign = "" if helper == "_stack_push" else "-"
            lines.append(f"_shift_varbit_lengths(f, {lengths!r}, {sign}({data(count)}))")
        return lines

    def _p_push(self, prim, params):
        return self._stack_shift(prim, params, "_stack_push")

    def _p_pop(self, prim, params):
        return self._stack_shift(prim, params, "_stack_pop")

    def _std(self, prim, name: str) -> int:
        slot = self.layout.std(name)
        if slot is None:
            raise prim.error(f"needs standard_metadata.{name}, which the program does not declare")
        return slot

    def _p_mark_to_drop(self, prim, params):
        spec, mcast = self.layout.drop_slots(params, prim)
        if spec is None:
            raise prim.error("needs an egress_spec field, which the header has not")
        lines = [f"f[{spec}] = {DROP_PORT}"]
        if mcast is not None:
            lines.append(f"f[{mcast}] = 0")
        return lines

    _p_drop = _p_mark_to_drop

    def _p_no_op(self, prim, params):
        return []

    def _p_exit(self, prim, params):
        return [f"f[{L.EXIT}] = 1"]

    def _clone(self, prim, params):
        need(prim, params, 1, 2)
        session = int_param(params[0], self.scope)
        field_list = const_param(params[1], self.scope) if len(params) > 1 else 0
        self._check_field_list(params[1] if len(params) > 1 else prim, field_list)
        return [f"f[{L.CLONE}] = {data(session)} + 1", f"f[{L.CLONE_FL}] = {field_list}"]

    _p_clone_ingress_pkt_to_egress = _clone
    _p_clone_egress_pkt_to_egress = _clone

    def _check_field_list(self, where: Node, field_list: int) -> None:
        if field_list and field_list not in self.scope.namespace["__field_lists__"]:
            raise where.error(f"unknown field list id {field_list}")

    def _flagged(self, slot: int):
        def handler(prim, params):
            need(prim, params, 0, 1)
            field_list = const_param(params[0], self.scope) if params else 0
            self._check_field_list(params[0] if params else prim, field_list)
            return [f"f[{slot}] = {field_list + 1}"]
        return handler

    def _p_resubmit(self, prim, params):
        return self._flagged(L.RESUBMIT)(prim, params)

    _p_resubmit_preserving_field_list = _p_resubmit

    def _p_recirculate(self, prim, params):
        return self._flagged(L.RECIRCULATE)(prim, params)

    _p_recirculate_preserving_field_list = _p_recirculate

    def _p_truncate(self, prim, params):
        need(prim, params, 1)
        return [f"f[{L.TRUNCATE}] = {data(int_param(params[0], self.scope))} + 1"]

    def _p_log_msg(self, prim, params):
        need(prim, params, 1, 2)
        if not self.traced:
            return []
        fmt = compile_expr(params[0], self.scope)
        values = compile_expr(params[1], self.scope).code if len(params) > 1 else "()"
        return [f"T.log_msg({fmt.code}, {values})"]

    def _p_assert(self, prim, params):
        need(prim, params, 1)
        cond = int_param(params[0], self.scope)
        where = self.scope.bind("where", prim.path)
        return [f"if not {boolean(cond)}:", f"    raise _AssertionFailure({where})"]

    _p_assume = _p_assert

    def _p_generate_digest(self, prim, params):
        need(prim, params, 2)
        list_id = const_param(params[1], self.scope)
        if list_id not in self.scope.namespace["__learn_lists__"]:
            raise params[1].error(f"unknown learn list id {list_id}")
        return [f"f[{L.LEARN}] = {list_id}"]

    _p_digest = _p_generate_digest

    def _p_add_to_field(self, prim, params):
        need(prim, params, 2)
        dst = compile_target(params[0], self.scope)
        value = int_param(params[1], self.scope)
        return [store(dst, Expr(f"({dst.code} + {data(value)})", "data"))]

    def _binary(self, prim, params, operator: str):
        need(prim, params, 3)
        dst = compile_target(params[0], self.scope)
        a, b = int_param(params[1], self.scope), int_param(params[2], self.scope)
        return [store(dst, Expr(f"({data(a)} {operator} {data(b)})", "data"))]

    def _p_add(self, prim, params):
        return self._binary(prim, params, "+")

    def _p_subtract(self, prim, params):
        return self._binary(prim, params, "-")

    def _p_bit_and(self, prim, params):
        return self._binary(prim, params, "&")

    def _p_bit_or(self, prim, params):
        return self._binary(prim, params, "|")

    def _p_bit_xor(self, prim, params):
        return self._binary(prim, params, "^")

    def _p_shift_left(self, prim, params):
        need(prim, params, 3)
        dst = compile_target(params[0], self.scope)
        a, b = int_param(params[1], self.scope), int_param(params[2], self.scope)
        return [store(dst, Expr(f"_shift_left({data(a)}, {data(b)})", "data"))]

    def _p_shift_right(self, prim, params):
        need(prim, params, 3)
        dst = compile_target(params[0], self.scope)
        a, b = int_param(params[1], self.scope), int_param(params[2], self.scope)
        return [store(dst, Expr(f"_shift_right({data(a)}, {data(b)})", "data"))]

    def _p_modify_field_with_shift(self, prim, params):
        """P4_14: dst = (dst & ~mask) | ((src >> shift) & mask)."""
        need(prim, params, 4)
        dst = compile_target(params[0], self.scope)
        src, shift, mask = (int_param(p, self.scope) for p in params[1:])
        value = (f"(({dst.code} & ~{data(mask)}) | (_shift_right({data(src)}, {data(shift)}) "
                 f"& {data(mask)}))")
        return [store(dst, Expr(value, "data"))]

    _p_copy_header = _p_assign_header

    def _p_subtract_from_field(self, prim, params):
        need(prim, params, 2)
        dst = compile_target(params[0], self.scope)
        value = int_param(params[1], self.scope)
        return [store(dst, Expr(f"({dst.code} - {data(value)})", "data"))]


_GUARD = re.compile(r"if _t\d+:$")


def _jump_segments(prims: list[Node], groups: dict, jumps: list[int], scope) -> dict | None:
    """{start: end} of the stretches between lane groups that hold `jumps`, when every such
    jump lands inside its own stretch (or at its end); else None (one jump loop for all)."""
    cuts = sorted({0, len(prims)} | {g.start for g in groups.values()}
                  | {g.end for g in groups.values()})
    segments = {}
    for i in jumps:
        start = max(c for c in cuts if c <= i)
        end = min(c for c in cuts if c > i)
        if start in groups:
            return None
        params = prims[i].get("parameters").items()
        target_param = params[0] if prims[i]["op"].str() == "_jump" else params[-1]
        try:
            target = const_param(target_param, scope)
        except ConfigError:
            return None          # the whole-body jump loop reports it
        if not isinstance(target, int) or not start <= target <= end:
            return None
        segments[start] = end
    return segments


def _merge_guards(lines: list[str]) -> list[str]:
    """Join adjacent `if _tN:` blocks testing the same cached bounds check into one block."""
    out: list[str] = []
    i = 0
    while i < len(lines):
        line = lines[i]
        if _GUARD.match(line) and out and i + 1 < len(lines):
            body = []
            j = i + 1
            while j < len(lines) and lines[j].startswith("    "):
                body.append(lines[j])
                j += 1
            header = _last_guard(out)
            if header == line:
                out += body
                i = j
                continue
        out.append(line)
        i += 1
    return out


_CHECK = re.compile(r"(_t\d+) = .* < \d+$")
SPLIT_MIN_GUARDS = 4


def _split_on_guard(lines: list[str]) -> list[str]:
    """Hoist a repeated bounds check: `if ok: <rest, unguarded> else: <rest, guarded parts cut>`.

    Register-heavy actions test the same cached index check around every read and write; when
    one check guards all of them (and there are enough), the rest of the body is emitted twice
    so the test runs once."""
    checks = [i for i, line in enumerate(lines) if _CHECK.match(line)]
    if len(checks) != 1:
        return lines
    at = checks[0]
    ok = _CHECK.match(lines[at]).group(1)
    rest = lines[at + 1:]
    header = f"if {ok}:"
    if sum(1 for line in rest if line == header) < SPLIT_MIN_GUARDS:
        return lines
    taken, skipped = [], []
    i = 0
    while i < len(rest):
        if rest[i] == header:
            i += 1
            while i < len(rest) and rest[i].startswith("    "):
                taken.append(rest[i][4:])
                i += 1
            continue
        taken.append(rest[i])
        skipped.append(rest[i])
        i += 1
    return (lines[:at + 1] + [header] + ["    " + t for t in taken] +
            ["else:"] + (["    " + t for t in skipped] or ["    pass"]))


def _last_guard(out: list[str]) -> str | None:
    """The `if _tN:` header whose block ends the lines so far, if there is one."""
    for line in reversed(out):
        if not line.startswith("    "):
            return line if _GUARD.match(line) else None
    return None


# ------------------------------------------------------------------ run-time helpers for the code

def _varbit_length_slots(stack) -> list[int]:
    """The slots holding each element's varbit length, in element order ([] without varbit)."""
    slots = [h.varbit_len_slot for h in stack.headers]
    return [] if None in slots else slots


def _shift_order(size: int, count: int) -> tuple[list[int], range]:
    """push_front (count > 0) or pop_front (count < 0) of a stack of `size` as simple_switch
    makes it: the old element each position ends with, and the positions made invalid.
    simple_switch swaps elements (values and validity) instead of copying them, so an element
    made invalid holds the values of one shifted out, in the order its swaps leave them."""
    order = list(range(size))
    n = abs(count)
    if count > 0:
        for i in range(size - 1, n - 1, -1):
            order[i], order[i - n] = order[i - n], order[i]
        return order, range(0, min(size, n))
    for i in range(size - n):
        order[i], order[i + n] = order[i + n], order[i]
    return order, range(max(size - n, 0), size)


def _shift_varbit_lengths(f, slots, count):
    """Move the elements' varbit lengths as push_front (count > 0) or pop_front (count < 0)
    moved the elements (`_shift_order`)."""
    if count == 0:
        return
    old = [f[s] for s in slots]
    order, _ = _shift_order(len(slots), count)
    for slot, src in zip(slots, order):
        f[slot] = old[src]


def _shift_stack(f, v, first_valid, first_base, stride, size, count):
    order, invalid = _shift_order(size, count)
    fields = [f[first_base + j * stride:first_base + (j + 1) * stride] for j in range(size)]
    valid = v[first_valid:first_valid + size]
    for i, src in enumerate(order):
        f[first_base + i * stride:first_base + (i + 1) * stride] = fields[src]
        v[first_valid + i] = 0 if i in invalid else valid[src]


def _stack_push(f, v, first_valid, first_base, stride, size, next_slot, count):
    """push_front(count): elements move up; the `count` front elements are invalid."""
    if count <= 0:
        return
    _shift_stack(f, v, first_valid, first_base, stride, size, count)
    f[next_slot] = min(f[next_slot] + count, size)


def _stack_pop(f, v, first_valid, first_base, stride, size, next_slot, count):
    """pop_front(count): elements move down; the `count` last elements become invalid."""
    if count <= 0:
        return
    _shift_stack(f, v, first_valid, first_base, stride, size, -count)
    f[next_slot] = max(f[next_slot] - count, 0)


def _union_stack_shift(f, v, shape, next_slot, count):
    """push_front (count > 0) or pop_front (count < 0) on a header union stack, its unions
    moved as `_shift_order` moves a stack's elements.

    `shape[i]` lists (validity index, first slot, field count) of union i's members."""
    if count == 0:
        return
    order, invalid = _shift_order(len(shape), count)
    old = [[(v[vidx], f[base:base + n]) for vidx, base, n in union] for union in shape]
    for i, src in enumerate(order):
        for member, (vidx, base, n) in enumerate(shape[i]):
            valid, values = old[src][member]
            v[vidx] = 0 if i in invalid else valid
            f[base:base + n] = values
    f[next_slot] = max(0, min(f[next_slot] + count, len(shape)))


def _union_stack_copy(f, v, dst_shape, src_shape):
    for dst_union, src_union in zip(dst_shape, src_shape):
        for (dv, db, n), (sv, sb, _) in zip(dst_union, src_union):
            if v[sv]:       # as simple_switch's assign_header: an invalid source only
                v[dv] = 1   # makes the destination invalid
                f[db:db + n] = f[sb:sb + n]
            else:
                v[dv] = 0


PRIM_HELPERS = {"_stack_push": _stack_push, "_stack_pop": _stack_pop,
                "_shift_varbit_lengths": _shift_varbit_lengths,
                "_union_stack_shift": _union_stack_shift, "_union_stack_copy": _union_stack_copy,
                **EXTERN_HELPERS, **lanes.LANE_HELPERS}
