"""Constant folding over checked expressions.

`fold(expr)` returns the compile-time value of an expression (int, bool or None when it is not
constant), with P4's fixed-width wrap-around for `bit<W>`/`int<W>` results. The checker uses it
for widths and sizes; lowering uses it to emit literals instead of run-time arithmetic.
"""

from __future__ import annotations

from . import ast as A
from .types import BitT, EnumT, ERROR, Type, is_bool


def wrap(value: int, t: Type | None) -> int:
    if isinstance(t, BitT):
        mask = (1 << t.width) - 1
        value &= mask
        if t.signed and value >> (t.width - 1):
            value -= 1 << t.width
    return value


def fold(e: A.Expr):
    """The constant value of `e`, or None."""
    cached = getattr(e, "folded", _MISSING)
    if cached is not _MISSING:
        return cached
    value = _fold(e)
    try:
        e.folded = value
    except AttributeError:
        pass
    return value


_MISSING = object()


def _constant_field(e: A.Member):
    """`C.f` (or `C.s.f`) of a struct or header constant (`const S C = {9w192};` or
    `{f = 9w192}`): the folded value of that field's expression, or None."""
    item = constant_expression(e)
    return fold(item) if item is not None else None


def constant_expression(e: A.Expr):
    """The expression a constant's name, or a member of one, stands for (`C`, `C.s` of `const
    S C = {...}`); None otherwise."""
    if isinstance(e, A.Name):
        decl = getattr(e, "decl", None)
        return decl.value if isinstance(decl, A.ConstDecl) else None
    if not isinstance(e, A.Member):
        return None
    whole = constant_expression(e.expr)
    if isinstance(whole, A.StructExpr):
        return next((v for name, v in whole.fields if name == e.name), None)
    if isinstance(whole, A.ListExpr):
        names = [f[0] for f in getattr(getattr(e.expr, "type", None), "fields", None) or []]
        if e.name in names and len(whole.items) == len(names):
            return whole.items[names.index(e.name)]
    return None


def _fold(e: A.Expr):
    t = getattr(e, "type", None)
    if isinstance(e, A.IntLit):
        return wrap(e.value, t) if isinstance(t, BitT) else e.value
    if isinstance(e, A.BoolLit):
        return e.value
    if isinstance(e, A.Name):
        decl = getattr(e, "decl", None)
        if isinstance(decl, A.ConstDecl):
            v = fold(decl.value)
            return wrap(v, t) if isinstance(v, int) and not isinstance(v, bool) else v
        if isinstance(decl, A.VarDecl) and getattr(decl, "is_const", False):
            return fold(decl.init)
        return None
    if isinstance(e, A.Member):
        member_value = getattr(e, "constant_value", None)
        if member_value is None:
            member_value = _constant_field(e)
        return member_value
    if isinstance(e, A.Cast):
        v = fold(e.expr)
        if v is None:
            return None
        if is_bool(t):
            return bool(v)
        if isinstance(v, bool):
            v = int(v)
        return wrap(v, t) if isinstance(t, BitT) else v
    if isinstance(e, A.Unary):
        v = fold(e.expr)
        if v is None:
            return None
        if e.op == "!":
            return not v
        if e.op == "-":
            return wrap(-v, t)
        if e.op == "+":
            return v
        if e.op == "~":
            if isinstance(t, BitT):
                return wrap(~v, t)
            return None
    if isinstance(e, A.Binary):
        return _fold_binary(e, t)
    if isinstance(e, A.Ternary):
        c = fold(e.cond)
        if c is None:
            return None
        return fold(e.then if c else e.other)
    if isinstance(e, A.Slice):
        v, hi, lo = fold(e.expr), fold(e.hi), fold(e.lo)
        if None in (v, hi, lo):
            return None
        return (v >> lo) & ((1 << (hi - lo + 1)) - 1)
    return None


def _fold_binary(e: A.Binary, t):
    if e.op == "&&":
        a = fold(e.left)
        if a is False:
            return False
        b = fold(e.right)
        return None if a is None or b is None else bool(a and b)
    if e.op == "||":
        a = fold(e.left)
        if a is True:
            return True
        b = fold(e.right)
        return None if a is None or b is None else bool(a or b)
    a, b = fold(e.left), fold(e.right)
    if a is None or b is None:
        return None
    op = e.op
    if op == "==":
        return a == b
    if op == "!=":
        return a != b
    if isinstance(a, bool) or isinstance(b, bool):
        return None
    if op == "<":
        return a < b
    if op == ">":
        return a > b
    if op == "<=":
        return a <= b
    if op == ">=":
        return a >= b
    if op == "++":
        rt = getattr(e.right, "type", None)
        rw = rt.width if isinstance(rt, BitT) else 0
        return wrap((a << rw) | (b & ((1 << rw) - 1)), t)
    if op in ("/", "%") and b == 0:
        return None
    width = t.width if isinstance(t, BitT) else None
    if op == "|+|" or op == "|-|":
        r = a + b if op == "|+|" else a - b
        if isinstance(t, BitT):
            lo, hi = (-(1 << (width - 1)), (1 << (width - 1)) - 1) if t.signed else (0, (1 << width) - 1)
            return max(lo, min(hi, r))
        return r
    r = {
        "+": lambda: a + b, "-": lambda: a - b, "*": lambda: a * b,
        "/": lambda: a // b, "%": lambda: a % b, "&": lambda: a & b, "|": lambda: a | b,
        "^": lambda: a ^ b, "<<": lambda: a << b if b < 4096 else 0, ">>": lambda: a >> b,
    }[op]()
    return wrap(r, t)


def is_enum_or_error(t) -> bool:
    return isinstance(t, EnumT) or t == ERROR
