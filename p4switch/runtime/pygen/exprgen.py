"""Translating BMv2 JSON expressions into Python expression source.

BMv2 evaluates with unbounded precision and truncates only when a value is stored into a field;
p4c makes every wrap-around explicit (`& 0xff`, `two_comp_mod`). Python ints have the same
semantics, so an expression becomes a plain Python expression over `f` (fields), `v` (validity),
`p` (action data) and constants. Booleans are Python truthy values; `b2d` turns them into 0/1.
"""

from __future__ import annotations

import operator
from dataclasses import dataclass
from typing import Any

from ..config import MAX_WIDTH, Node
from ..phv.layout import HeaderStack, HeaderType, Layout
from ..state.regbanks import python_cells


@dataclass
class HeaderRef:
    """A header chosen statically or by a run-time stack index."""

    htype: HeaderType
    valid: str          # code: index into `v`
    base: str           # code: slot of the first field in `f`
    static: Any = None  # the HeaderInstance when known at load time


@dataclass
class Expr:
    code: str
    kind: str                 # "data" | "bool" | "header" | "stack" | "union" | "string" | "list"
    width: int | None = None  # bit width when it is a plain field or action-data read
    signed: bool = False
    const: int | None = None
    ref: Any = None           # HeaderRef, HeaderStack, HeaderUnion, or list of Expr
    masked_to: int | None = None  # the value is known to be < 2**masked_to and >= 0
    signed_bits: int | None = None  # the value is known to fit a signed int of this width


def _const(value: int) -> Expr:
    masked = value.bit_length() if value >= 0 else None
    return Expr(repr(value), "data", const=value, masked_to=masked)


def mask_of(width: int) -> int:
    return (1 << width) - 1


class CodeScope:
    """What expressions may refer to where they are compiled, and the shared namespace.

    `namespace` maps generated global names to Python objects (tables, registers, helpers);
    `param_widths` is the action's runtime data (None outside actions); `in_parser` enables
    `lookahead`, which needs the packet bytes `d` and the byte position `pos`.
    """

    def __init__(self, layout: Layout, namespace: dict, param_widths: list[int] | None = None,
                 in_parser: bool = False):
        self.layout = layout
        self.namespace = namespace
        self.param_widths = param_widths
        self.in_parser = in_parser

    def bind(self, prefix: str, obj: Any) -> str:
        """Give `obj` a global name in the generated code (reusing one if already bound)."""
        ids = self.namespace.setdefault("__ids__", {})
        name = ids.get(id(obj))
        if name is not None and self.namespace.get(name) is obj:
            return name
        counter = self.namespace.setdefault("__counter__", [0])
        counter[0] += 1
        name = f"{prefix}_{counter[0]}"
        self.namespace[name] = obj
        ids[id(obj)] = name
        return name

    def for_action(self, param_widths: list[int]) -> CodeScope:
        return CodeScope(self.layout, self.namespace, param_widths, self.in_parser)


def compile_expr(node: Node, scope: CodeScope) -> Expr:
    """Compile a type/value object that is read (an rvalue)."""
    kind, value = node.type_value()
    layout = scope.layout
    if kind == "field":
        hdr, fname = value[0].str(), value[1].str()
        ref = layout.field(hdr, fname, value)
        if ref.is_valid_bit:
            return Expr(f"v[{ref.header.index}]", "data", width=1, masked_to=1)
        return Expr(f"f[{ref.slot}]", "data", width=ref.width, signed=ref.signed,
                    masked_to=None if ref.signed else ref.width,
                    signed_bits=ref.width if ref.signed else None)
    if kind == "hexstr":
        return _const(value.hexstr())
    if kind == "bool":
        return Expr("True" if value.bool() else "False", "bool", const=int(value.bool()))
    if kind in ("runtime_data", "local"):
        idx = value.int()
        if scope.param_widths is None or idx >= len(scope.param_widths):
            raise value.error(f"action data index {idx} out of range")
        width = scope.param_widths[idx]
        return Expr(f"p[{idx}]", "data", width=width, masked_to=width)
    if kind == "header":
        inst = layout.header(value.str(), value)
        return Expr(str(inst.index), "header",
                    ref=HeaderRef(inst.htype, str(inst.index), str(inst.base), inst))
    if kind == "header_stack":
        stack = layout.stack(value.str(), value)
        return Expr(value.str(), "stack", ref=stack)
    if kind == "header_union":
        union = layout.union(value.str(), value)
        return Expr(value.str(), "union", ref=union)
    if kind == "header_union_stack":
        if value.str() not in layout.union_stacks:
            raise value.error(f"unknown header union stack '{value.str()}'")
        return Expr(value.str(), "union_stack", ref=layout.union_stacks[value.str()])
    if kind == "stack_field":
        stack = layout.stack(value[0].str(), value)
        offset = _field_offset(stack.htype, value[1].str(), value)
        first = stack.headers[0].base + offset
        _, width, signed = stack.htype.fields[offset]
        code = f"f[{first} + (f[{stack.next_slot}] - 1) * {stack.stride}]"
        return Expr(code, "data", width=width, signed=signed, masked_to=None if signed else width)
    if kind == "lookahead":
        if not scope.in_parser:
            raise node.error("lookahead is only allowed in a parser")
        offset, width = value[0].int(0, MAX_WIDTH), value[1].int(1, MAX_WIDTH)
        return Expr(f"_lookahead(d, pos, {offset}, {width})", "data", masked_to=width)
    if kind == "register":
        name = value[0].str()
        reg = scope.namespace["__registers__"].get(name)
        if reg is None:
            raise value.error(f"unknown register array '{name}'")
        index = compile_expr(value[1], scope)
        cells = scope.bind("reg", python_cells(reg.cells))
        return Expr(f"_reg_get({cells}, {data(index)})", "data", masked_to=reg.bitwidth)
    if kind == "string":
        return Expr(repr(value.str()), "string")
    if kind == "parameters_vector":
        items = [compile_expr(item, scope) for item in value.items()]
        return Expr("(" + "".join(data(i) + ", " for i in items) + ")", "list", ref=items)
    if kind == "expression":
        if isinstance(value.value, dict) and "op" not in value.value and "type" in value.value:
            return compile_expr(value, scope)  # {"type": "expression", "value": {type/value}}
        return _compile_op(value, scope)
    raise node.error(f"unsupported operand type '{kind}'")


def _field_offset(htype: HeaderType, fname: str, where: Node) -> int:
    for i, (name, _, _) in enumerate(htype.fields):
        if name == fname:
            return i
    raise where.error(f"header type '{htype.name}' has no field '{fname}'")


def data(expr: Expr) -> str:
    """Code for `expr` as an integer."""
    if expr.kind == "bool":
        if expr.const is not None:
            return str(expr.const)
        return f"(1 if {expr.code} else 0)"
    return expr.code


def boolean(expr: Expr) -> str:
    """Code for `expr` as a truth value."""
    return expr.code


ARITH = {"+": "+", "-": "-", "*": "*", "&": "&", "|": "|", "^": "^", "<<": "<<", ">>": ">>"}
_FOLD = {"+": operator.add, "-": operator.sub, "*": operator.mul, "&": operator.and_,
         "|": operator.or_, "^": operator.xor, "<<": operator.lshift, ">>": operator.rshift}
COMPARE = {"==": "==", "!=": "!=", ">": ">", "<": "<", ">=": ">=", "<=": "<="}


OP_ALIASES = {"data_to_bool": "d2b", "bool_to_data": "b2d"}


def _compile_op(node: Node, scope: CodeScope) -> Expr:
    op = node["op"].str()
    op = OP_ALIASES.get(op, op)
    left_node, right_node = node.get("left"), node.get("right")

    def side(n: Node) -> Expr:
        if n.value is None:
            raise node.error(f"operator '{op}' is missing an operand")
        return compile_expr(n, scope)

    if op in ARITH:
        if left_node.value is None and op == "-":
            r = side(right_node)
            return Expr(f"(-{data(r)})", "data")
        l, r = side(left_node), side(right_node)
        if l.const is not None and r.const is not None and not (op in ("<<", ">>") and
                                                                 not 0 <= r.const < 4096):
            return _const(_FOLD[op](l.const, r.const))
        if op in ("<<", ">>") and r.const is None and not (
                r.masked_to is not None and (1 << r.masked_to) - 1 <= MAX_SHIFT):
            # a run-time shift amount comes from the packet: keep it sane (no huge ints, no
            # negative counts, which Python refuses) unless its width proves it small
            helper = "_shift_left" if op == "<<" else "_shift_right"
            masked = l.masked_to if op == ">>" else None
            return Expr(f"{helper}({data(l)}, {data(r)})", "data", masked_to=masked)
        code = f"({data(l)} {ARITH[op]} {data(r)})"
        masked = None
        if op == "&":
            bounds = [e.masked_to for e in (l, r) if e.masked_to is not None]
            masked = min(bounds) if bounds else None
        elif op in ("|", "^") and l.masked_to is not None and r.masked_to is not None:
            masked = max(l.masked_to, r.masked_to)
        elif op == ">>" and l.masked_to is not None:
            masked = l.masked_to
        return Expr(code, "data", masked_to=masked)
    if op in ("/", "%"):
        l, r = side(left_node), side(right_node)
        return Expr(f"_divmod_{'div' if op == '/' else 'mod'}({data(l)}, {data(r)})", "data")
    if op in COMPARE:
        l, r = side(left_node), side(right_node)
        return Expr(f"({data(l)} {COMPARE[op]} {data(r)})", "bool")
    if op == "~":
        r = side(right_node)
        return Expr(f"(~{data(r)})", "data")
    if op in ("and", "or"):
        l, r = side(left_node), side(right_node)
        return Expr(f"({boolean(l)} {op} {boolean(r)})", "bool")
    if op == "not":
        r = side(right_node)
        return Expr(f"(not {boolean(r)})", "bool")
    if op == "d2b":
        r = side(right_node)
        if r.kind == "bool":
            return r
        return Expr(f"({r.code} != 0)", "bool")
    if op == "b2d":
        r = side(right_node)
        return Expr(data(r), "data", masked_to=1)
    if op == "valid":
        r = side(right_node)
        if r.kind != "header":
            raise node.error("'valid' needs a header operand")
        return Expr(f"v[{r.ref.valid}]", "bool")
    if op == "valid_union":
        r = side(right_node)
        if r.kind != "union":
            raise node.error("'valid_union' needs a header union operand")
        members = [f"v[{m.index}]" for m in r.ref.members.values()] or ["0"]
        return Expr("(" + " or ".join(members) + ")", "bool")
    if op in ("two_comp_mod", "sat_cast", "usat_cast"):
        l, r = side(left_node), side(right_node)
        if r.const is None:
            width_code = data(r)
            return Expr(f"_{op}({data(l)}, {width_code})", "data")
        width = r.const
        if width <= 0:
            raise node.error(f"'{op}' needs a positive width")
        if op == "two_comp_mod":
            half = 1 << (width - 1)
            return Expr(f"((({data(l)} + {half}) & {mask_of(width)}) - {half})", "data",
                        signed_bits=width)
        if op == "usat_cast":
            return Expr(f"_usat({data(l)}, {mask_of(width)})", "data", masked_to=width)
        half = 1 << (width - 1)
        return Expr(f"_ssat({data(l)}, {-half}, {half - 1})", "data", signed_bits=width)
    if op == "?":
        cond = compile_expr(node["cond"], scope)
        l, r = side(left_node), side(right_node)
        kind = "bool" if l.kind == r.kind == "bool" else "data"
        if kind == "data":
            masked = (max(l.masked_to, r.masked_to)
                      if l.masked_to is not None and r.masked_to is not None else None)
            return Expr(f"({data(l)} if {boolean(cond)} else {data(r)})", "data",
                        masked_to=masked)
        return Expr(f"({l.code} if {boolean(cond)} else {r.code})", "bool")
    if op == "dereference_header_stack":
        l, r = side(left_node), side(right_node)
        if l.kind != "stack":
            raise node.error("'dereference_header_stack' needs a header stack on the left")
        return stack_element(l.ref, data(r), r.const)
    if op == "last_stack_index":
        r = side(right_node)
        if r.kind != "stack":
            raise node.error("'last_stack_index' needs a header stack")
        return Expr(f"(f[{r.ref.next_slot}] - 1)", "data")
    if op == "size_stack":
        r = side(right_node)
        if r.kind != "stack":
            raise node.error("'size_stack' needs a header stack")
        return Expr(f"f[{r.ref.next_slot}]", "data")
    if op == "access_field":
        l = side(left_node)
        if l.kind != "header":
            raise node.error("'access_field' needs a header on the left")
        offset = right_node.int()
        if offset >= len(l.ref.htype.fields):
            raise right_node.error(f"field offset {offset} out of range")
        _, width, signed = l.ref.htype.fields[offset]
        return Expr(f"f[{_add(l.ref.base, offset)}]", "data", width=width, signed=signed,
                    masked_to=None if signed else width)
    if op == "dereference_union_stack":
        l, r = side(left_node), side(right_node)
        if l.kind != "union_stack" or r.const is None:
            raise node.error("only constant indices into header union stacks are supported")
        if not 0 <= r.const < l.ref.size:
            raise node.error(f"union stack index {r.const} out of range")
        union = l.ref.unions[r.const]
        return Expr(union.name, "union", ref=union)
    if op == "access_union_header":
        l = side(left_node)
        if l.kind != "union":
            raise node.error("'access_union_header' needs a header union on the left")
        members = list(l.ref.members.values())
        offset = right_node.int()
        if offset >= len(members):
            raise right_node.error(f"union member offset {offset} out of range")
        inst = members[offset]
        return Expr(str(inst.index), "header",
                    ref=HeaderRef(inst.htype, str(inst.index), str(inst.base), inst))
    raise node.error(f"unknown expression operator '{op}'")


def stack_element(stack: HeaderStack, index_code: str, const_index: int | None) -> Expr:
    if const_index is not None:
        if not 0 <= const_index < stack.size:
            inst = stack.headers[-1]  # BMv2 would fail at run time; keep the code valid
        else:
            inst = stack.headers[const_index]
        return Expr(str(inst.index), "header",
                    ref=HeaderRef(stack.htype, str(inst.index), str(inst.base), inst))
    first = stack.headers[0]
    valid = f"({first.index} + _clamp_index({index_code}, {stack.size}))"
    base = f"({first.base} + _clamp_index({index_code}, {stack.size}) * {stack.stride})"
    return Expr(valid, "header", ref=HeaderRef(stack.htype, valid, base))


def _add(base_code: str, offset: int) -> str:
    if base_code.isdigit():
        return str(int(base_code) + offset)
    return f"{base_code} + {offset}" if offset else base_code


# ---------------------------------------------------------------- run-time helpers for the code

def _usat(value: int, maximum: int) -> int:
    return 0 if value < 0 else (maximum if value > maximum else value)


def _ssat(value: int, low: int, high: int) -> int:
    return low if value < low else (high if value > high else value)


def _sane_width(width: int) -> int:
    return 1 if width < 1 else min(width, MAX_WIDTH)


def _two_comp_mod(value: int, width: int) -> int:
    width = _sane_width(width)
    half = 1 << (width - 1)
    return ((value + half) & ((1 << width) - 1)) - half


def _sat_cast(value: int, width: int) -> int:
    half = 1 << (_sane_width(width) - 1)
    return _ssat(value, -half, half - 1)


def _usat_cast(value: int, width: int) -> int:
    return _usat(value, (1 << _sane_width(width)) - 1)


def _divmod_div(a: int, b: int) -> int:
    return 0 if b == 0 else abs(a) // abs(b) * (1 if (a < 0) == (b < 0) else -1)


def _divmod_mod(a: int, b: int) -> int:
    return 0 if b == 0 else a - b * _divmod_div(a, b)


def _clamp_index(index: int, size: int) -> int:
    """A run-time stack index; out-of-range indices hit the last element (BMv2 raises there)."""
    return index if 0 <= index < size else size - 1


MAX_SHIFT = 2 * MAX_WIDTH


def _shift_left(value: int, amount: int) -> int:
    """`value << amount`; beyond any field width the bits would be masked away anyway."""
    if amount > MAX_SHIFT:
        return 0
    return value << amount if amount >= 0 else value >> -amount


def _shift_right(value: int, amount: int) -> int:
    return value >> amount if amount >= 0 else _shift_left(value, -amount)


def _reg_get(cells: list, index: int) -> int:
    return cells[index] if 0 <= index < len(cells) else 0


EXPR_HELPERS = {
    "_usat": _usat, "_ssat": _ssat, "_two_comp_mod": _two_comp_mod, "_sat_cast": _sat_cast,
    "_usat_cast": _usat_cast, "_divmod_div": _divmod_div, "_divmod_mod": _divmod_mod,
    "_clamp_index": _clamp_index, "_reg_get": _reg_get, "_shift_left": _shift_left,
    "_shift_right": _shift_right,
}
