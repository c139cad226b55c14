"""Writing fields from generated code: assignment targets and the truncating store; the
checks of a primitive's parameters (`need`, `int_param`, `const_param`).

BMv2 truncates a value to the field's width whenever it is stored; `store` emits exactly that,
leaving the mask out when the value is already known to fit (p4c usually masks explicitly).
"""

from __future__ import annotations

from dataclasses import dataclass

from ..config import Node
from .exprgen import CodeScope, Expr, compile_expr, data, mask_of


@dataclass
class Target:
    """A field that can be written: code for its `f[...]` slot, its width and sign."""

    code: str
    width: int | None
    signed: bool
    varbit_len: str | None = None  # code of the slot holding a varbit field's length


def compile_target(node: Node, scope: CodeScope) -> Target:
    kind, value = node.type_value()
    if kind == "field":
        ref = scope.layout.field(value[0].str(), value[1].str(), value)
        if ref.is_valid_bit:
            raise value.error("'$valid$' is read-only")
        vl = f"f[{ref.header.varbit_len_slot}]" if ref.width is None else None
        return Target(f"f[{ref.slot}]", ref.width, ref.signed, vl)
    if kind in ("expression", "stack_field"):
        expr = compile_expr(node, scope)
        if expr.kind != "data" or not expr.code.startswith("f["):
            raise node.error("the destination must be a field")
        return Target(expr.code, expr.width, expr.signed)
    raise node.error(f"cannot write to a '{kind}'")


def store(target: Target, expr: Expr) -> str:
    """`target = expr`, truncated to the target's width as BMv2 does on every field write."""
    value = data(expr)
    width = target.width
    if width is None:
        return f"{target.code} = {value}"
    if target.signed:
        half = 1 << (width - 1)
        if (expr.signed_bits is not None and expr.signed_bits <= width) or \
                (expr.masked_to is not None and expr.masked_to < width):
            return f"{target.code} = {value}"
        if expr.const is not None:
            return f"{target.code} = {((expr.const + half) & mask_of(width)) - half}"
        return f"{target.code} = (({value}) + {half} & {mask_of(width)}) - {half}"
    if expr.const is not None:
        return f"{target.code} = {expr.const & mask_of(width)}"
    if expr.masked_to is not None and expr.masked_to <= width:
        return f"{target.code} = {value}"
    return f"{target.code} = ({value}) & {mask_of(width)}"


def int_param(node: Node, scope: CodeScope) -> Expr:
    expr = compile_expr(node, scope)
    if expr.kind not in ("data", "bool"):
        raise node.error(f"expected a value, got a {expr.kind}")
    return expr


def const_param(node: Node, scope: CodeScope) -> int:
    expr = int_param(node, scope)
    if expr.const is None:
        raise node.error("must be a constant")
    return expr.const


def need(prim: Node, params: list[Node], low: int, high: int | None = None) -> None:
    """A ConfigError unless the primitive has `low` to `high` parameters (default: `low`)."""
    high = low if high is None else high
    if not low <= len(params) <= high:
        want = str(low) if low == high else f"{low} to {high}"
        raise prim.error(f"'{prim['op'].str()}' takes {want} parameters, got {len(params)}")
