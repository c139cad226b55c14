"""Typed random expressions: `ExprGen.expr(ty, scope)` returns P4 text of exactly type `ty`.

Every rule here is one p4c's type checker accepts: operands of a binary operator share a type,
casts change either the width or the signedness (never both), shift amounts are unsigned,
concatenation and slices are of unsigned values, and no division (p4c-bm2-ss refuses it at run
time). Everything is parenthesised, so the text means what the generator built.
"""

from __future__ import annotations

import random

from .ptypes import BOOL, Ty, bit, literal, random_scalar, random_width, sint
from .scope import Scope

_ARITH = ["+", "-", "*", "&", "|", "^", "+", "-", "&", "|"]
_SAT = ["|+|", "|-|"]
_CMP = ["==", "!=", "<", ">", "<=", ">="]


class ExprGen:
    def __init__(self, rng: random.Random, max_depth: int = 3):
        self.rng = rng
        self.max_depth = max_depth

    # --- entry points ---
    def expr(self, ty: Ty, scope: Scope, depth: int = 0) -> str:
        if ty.is_bool:
            return self._bool(scope, depth)
        return self._scalar(ty, scope, depth)

    def leaf(self, ty: Ty, scope: Scope) -> str:
        """A variable of `ty` if there is one, else a literal."""
        var = scope.pick(self.rng, ty)
        if var is not None and self.rng.random() < 0.8:
            return var.name
        return literal(self.rng, ty)

    def some_type(self, scope: Scope, low: int = 1, kind: str | None = None) -> Ty:
        """Mostly the type of a variable in scope (so expressions read variables), at least
        `low` bits wide and of `kind` if given; otherwise a random one."""
        pool = [v.ty for v in scope.vars if not v.ty.is_bool and v.ty.width >= low
                and (kind is None or v.ty.kind == kind)]
        if pool and self.rng.random() < 0.8:
            return self.rng.choice(pool)
        if kind == "bit":
            return bit(random_width(self.rng, low))
        if kind == "int":
            return sint(random_width(self.rng, max(low, 2)))
        return random_scalar(self.rng, low=low)

    # --- bit<W> / int<W> ---
    def _scalar(self, ty: Ty, scope: Scope, depth: int) -> str:
        rng = self.rng
        if depth >= self.max_depth or rng.random() < 0.25 + 0.15 * depth:
            return self.leaf(ty, scope)
        kinds = ["arith", "arith", "cast", "unary", "shift", "ternary", "sat"]
        if not ty.signed:
            kinds += ["slice", "slice"]
            if ty.width >= 2:
                kinds.append("concat")
        kind = rng.choice(kinds)
        return getattr(self, "_" + kind)(ty, scope, depth + 1)

    def _arith(self, ty: Ty, scope: Scope, depth: int) -> str:
        left = self._scalar(ty, scope, depth)
        # an untyped literal on the right exercises the compiler's width inference
        if self.rng.random() < 0.2:
            right = str(self.rng.randrange(0, min(1 << min(ty.width - ty.signed, 16), 300)))
        else:
            right = self._scalar(ty, scope, depth)
        return f"({left} {self.rng.choice(_ARITH)} {right})"

    def _sat(self, ty: Ty, scope: Scope, depth: int) -> str:
        return (f"({self._scalar(ty, scope, depth)} {self.rng.choice(_SAT)} "
                f"{self._scalar(ty, scope, depth)})")

    def _unary(self, ty: Ty, scope: Scope, depth: int) -> str:
        return f"({self.rng.choice(['~', '-'])}{self._scalar(ty, scope, depth)})"

    def _shift(self, ty: Ty, scope: Scope, depth: int) -> str:
        rng = self.rng
        value = self._scalar(ty, scope, depth)
        if rng.random() < 0.5:
            amount = str(rng.randrange(0, ty.width + 3))
        else:
            amount = self._scalar(bit(rng.choice([2, 3, 4, 5, 8])), scope, depth + 1)
        return f"({value} {rng.choice(['<<', '>>'])} {amount})"

    def _ternary(self, ty: Ty, scope: Scope, depth: int) -> str:
        return (f"({self._bool(scope, depth)} ? {self._scalar(ty, scope, depth)} : "
                f"{self._scalar(ty, scope, depth)})")

    def _cast(self, ty: Ty, scope: Scope, depth: int) -> str:
        rng = self.rng
        w = ty.width
        if w == 1 and not ty.signed and rng.random() < 0.3:
            return f"((bit<1>){self._bool(scope, depth)})"
        if rng.random() < 0.5 and w >= 2:      # same width, other signedness
            other = bit(w) if ty.signed else sint(w)
        else:                                  # same signedness, other width
            other = self.some_type(scope, 2 if ty.signed else 1, ty.kind)
        return f"(({ty.p4()}){self._scalar(other, scope, depth)})"

    def _slice(self, ty: Ty, scope: Scope, depth: int) -> str:
        rng = self.rng
        source_ty = self.some_type(scope, low=ty.width)
        if source_ty.width < ty.width:
            return self.leaf(ty, scope)
        low = rng.randrange(0, source_ty.width - ty.width + 1)
        high = low + ty.width - 1
        source = self._scalar(source_ty, scope, depth)
        return f"({source}[{high}:{low}])"

    def _concat(self, ty: Ty, scope: Scope, depth: int) -> str:
        cut = self.rng.randrange(1, ty.width)
        return (f"({self._scalar(bit(cut), scope, depth)} ++ "
                f"{self._scalar(bit(ty.width - cut), scope, depth)})")

    # --- bool ---
    def _bool(self, scope: Scope, depth: int) -> str:
        rng = self.rng
        if depth >= self.max_depth or rng.random() < 0.2:
            headers = sorted({v.header for v in scope.vars if v.header})
            if headers and rng.random() < 0.4:
                return f"{rng.choice(headers)}.isValid()"
            var = scope.pick(rng, BOOL)
            if var is not None and rng.random() < 0.7:
                return var.name
            return self._compare(scope, self.max_depth)
        kind = rng.choice(["cmp", "cmp", "cmp", "and", "or", "not"])
        if kind == "cmp":
            return self._compare(scope, depth + 1)
        if kind == "not":
            return f"(!{self._bool(scope, depth + 1)})"
        op = "&&" if kind == "and" else "||"
        return f"({self._bool(scope, depth + 1)} {op} {self._bool(scope, depth + 1)})"

    def _compare(self, scope: Scope, depth: int) -> str:
        rng = self.rng
        ty = self.some_type(scope)
        op = rng.choice(_CMP)
        left = self._scalar(ty, scope, depth)
        if rng.random() < 0.3:
            right = literal(rng, ty)
        else:
            right = self._scalar(ty, scope, depth)
        return f"({left} {op} {right})"
