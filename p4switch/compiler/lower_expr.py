"""Lowering, part 2: P4 expressions to BMv2 JSON expressions.

BMv2 evaluates with unbounded integers and separates booleans from data, so every fixed-width
result is masked (`& 0xff..`) or wrapped (`two_comp_mod`) and booleans cross into data with
`b2d`/`d2b`, the way p4c's output does it. Constant sub-expressions are folded first.
"""

from __future__ import annotations

from dataclasses import dataclass

from . import ast as A
from .bmv2_forms import operand
from .constfold import fold
from .storage import (DynamicElement, DynamicField, FieldRef, HeaderInst, RuntimeData,
                      StackStore, StructStore, UnionStore)
from .types import BitT, EnumT, IntT, StructT, bit_width, is_bool


@dataclass(eq=False)
class Bound:
    """A parameter bound to an argument expression of the caller (inlining)."""
    expr: A.Expr
    env: "Env"


def bind_constructor_arguments(decl, args: list, arg_env: "Env", inner: "Env") -> None:
    """Bind a parser's or control's constructor parameters in `inner` to what its instance
    was given (`args`, read in `arg_env`; named or positional, a missing one its default):
    another instance (a control applied through the parameter, an extern) or a constant."""
    named = {a.name: a for a in args if a.name}
    for i, p in enumerate(decl.ctor_params):
        given = named.get(p.name) if named else (args[i] if i < len(args) else None)
        value = given.value if given is not None else p.default
        if value is None:
            raise Unsupported(decl, f"no constructor argument for '{p.name}'")
        instance = arg_env.lookup(value.decl) if isinstance(value, A.Name) and isinstance(
            getattr(value, "decl", None), (A.InstanceDecl, A.Param)) else None
        if instance is not None:   # an instance, or a constant the caller was given
            inner.bind(p, instance)
        elif fold(value) is not None:
            inner.bind(p, Bound(value, arg_env))
        else:
            raise Unsupported(value, "a constructor argument must be an instance declared "
                                     "before it or a compile-time constant")


def fold_in(e: A.Expr, env: "Env"):
    """The constant value of `e`, as `fold`, where a name may be a constructor parameter bound
    to a constant in `env` (a select case `tag_type` of `parser P(...)(bit<16> tag_type)`)."""
    value = fold(e)
    if value is None and isinstance(e, A.Name):
        bound = env.lookup(getattr(e, "decl", None))
        if isinstance(bound, Bound):
            return fold_in(bound.expr, bound.env)
    return value


def instance_of(e: A.Expr, env: "Env"):
    """What a name passed as an argument stands for (an extern instance, a control's or
    parser's instance), through parameters bound to the caller's names; None if not a name."""
    while isinstance(e, A.Name):
        value = env.lookup(getattr(e, "decl", None))
        if not isinstance(value, Bound):
            return value
        e, env = value.expr, value.env
    return None


def is_extern_param(p) -> bool:
    t = getattr(p, "type", None)
    return getattr(t, "category", None) == "extern" and t.name != "packet_in"


class Env:
    def __init__(self, parent: "Env | None" = None):
        self.parent = parent
        self.bindings: dict = {}

    def bind(self, decl, value) -> None:
        self.bindings[decl] = value

    def block_path(self) -> tuple | None:
        """Where the block this scope belongs to sits in p4c's tree of evaluated blocks (the
        positions of its instance from the program down), set where a control is entered;
        P4Info lists things in the order p4c walks that tree (breadth first)."""
        env = self
        while env is not None:
            path = getattr(env, "path", None)
            if path is not None:
                return path
            env = env.parent
        return None

    def lookup(self, decl):
        env = self
        while env is not None:
            if decl in env.bindings:
                return env.bindings[decl]
            env = env.parent
        return None


def hexstr(value: int, width: int | None = None) -> str:
    if value < 0:
        return "-" + hexstr(-value, width)
    digits = max(1, ((width or 8) + 7) // 8 * 2)
    return "0x" + format(value, f"0{digits}x")


def const(value, width: int | None = None) -> dict:
    if isinstance(value, bool):
        value = int(value)
    return {"type": "hexstr", "value": hexstr(value, width)}


def op(name: str, left, right, **extra) -> dict:
    """An expression node; action data inside it is read as `local` (BMv2's form)."""
    value = {"op": name, "left": operand(left), "right": operand(right)}
    value.update({k: operand(v) for k, v in extra.items()})
    return {"type": "expression", "value": value}


def mask_of(width: int) -> int:
    return (1 << width) - 1


class Unsupported(Exception):
    def __init__(self, node, message):
        super().__init__(message)
        self.node = node
        self.message = message


class ExprLowerer:
    def __init__(self, ctx):
        self.ctx = ctx  # the program lowering context: .layout, .errors

    # ---- l-values ---------------------------------------------------------------------------
    def resolve(self, e: A.Expr, env: Env):
        """The storage an l-value-like expression designates, or None if it is not a location."""
        if isinstance(e, A.Name):
            v = env.lookup(e.decl)
            if isinstance(v, Bound):
                return self.resolve(v.expr, v.env)
            return v
        if isinstance(e, A.Member):
            base = self.resolve(e.expr, env)
            if isinstance(base, StructStore):
                return base.fields.get(e.name)
            if isinstance(base, HeaderInst):
                if e.name in ("isValid", "setValid", "setInvalid"):
                    return None
                return base.field(e.name)
            if isinstance(base, UnionStore):
                return base.members.get(e.name)
            if isinstance(base, StackStore) and e.name == "last":
                return ("last", base)
            if isinstance(base, tuple) and base[0] == "last":
                return ("last_field", base[1], e.name)
            if isinstance(base, DynamicElement) and e.name not in ("isValid", "setValid",
                                                                   "setInvalid"):
                elem_type = base.stack.type.element
                names = [n for n, _, _ in elem_type.fields]
                return DynamicField("", e.name, elem_type.field_type(e.name), base.stack,
                                    base.index, names.index(e.name))
            return None
        if isinstance(e, A.Index):
            base = self.resolve(e.expr, env)
            if isinstance(base, StackStore):
                idx = fold(e.index)
                if idx is None:
                    return DynamicElement(base, self.data(e.index, env))
                return base.elements[idx]
            return None
        return None

    # ---- data values ------------------------------------------------------------------------
    def data(self, e: A.Expr, env: Env) -> dict:
        t = e.type
        hoisted = getattr(self.ctx, "call_results", {}).get(e)
        if hoisted is not None:
            return hoisted.json()
        v = fold(e)
        if v is not None and not is_bool(t):
            return const(v, bit_width(t) if not isinstance(t, IntT) else None)
        if is_bool(t):
            if v is not None:
                return const(int(v), 1)
            if self._is_bool_location(e, env):
                return self._location_json(e, env)
            return op("b2d", None, self.boolean(e, env))
        return self._data(e, env)

    def _is_bool_location(self, e, env) -> bool:
        if isinstance(e, (A.Name, A.Member, A.Index)):
            s = self.resolve(e, env)
            return isinstance(s, (FieldRef, RuntimeData)) or isinstance(s, tuple)
        return False

    def _location_json(self, e, env) -> dict:
        s = self.resolve(e, env)
        if isinstance(s, (FieldRef, RuntimeData)):
            return s.json()
        if isinstance(s, tuple) and s[0] == "last_field":
            return {"type": "stack_field", "value": [s[1].name, s[2]]}
        if isinstance(e, A.Name) and isinstance(env.lookup(e.decl), Bound):
            b = env.lookup(e.decl)
            return self.data(b.expr, b.env)
        raise Unsupported(e, "this expression is not supported here")

    def _data(self, e: A.Expr, env: Env) -> dict:
        t = e.type
        if isinstance(e, A.Member) and e.name in ("lastIndex", "nextIndex", "size"):
            stack = self.resolve(e.expr, env)
            if isinstance(stack, StackStore):
                if e.name == "size":
                    return const(len(stack.elements), 32)
                ref = {"type": "header_stack", "value": stack.name}
                if e.name == "nextIndex":
                    return op("size_stack", None, ref)
                return self.wrap(op("last_stack_index", None, ref), t)
        if isinstance(e, (A.Name, A.Member, A.Index)):
            if isinstance(e, A.Name) and isinstance(env.lookup(e.decl), Bound):
                b = env.lookup(e.decl)
                return self.data(b.expr, b.env)
            s = self.resolve(e, env)
            if s is None:
                raise Unsupported(e, "this value cannot be used in an expression here")
            if isinstance(s, (HeaderInst, StackStore, StructStore, UnionStore)):
                raise Unsupported(e, "a whole header/struct cannot be used as a value here")
            return self._location_json(e, env)
        if isinstance(e, A.Cast):
            return self.cast(self.data(e.expr, env), e.expr.type, t)
        if isinstance(e, A.Slice):
            hi, lo = fold(e.hi), fold(e.lo)
            inner = self.data(e.expr, env)
            if lo:
                inner = op(">>", inner, const(lo))
            return op("&", inner, const(mask_of(hi - lo + 1), bit_width(t)))
        if isinstance(e, A.Unary):
            inner = self.data(e.expr, env)
            if e.op == "+":
                return inner
            if e.op == "~":
                return self.wrap(op("~", None, inner), t)
            if e.op == "-":
                return self.wrap(op("-", const(0), inner), t)
        if isinstance(e, A.Binary):
            return self.binary_data(e, env)
        if isinstance(e, A.Ternary):
            return op("?", self.data(e.then, env), self.data(e.other, env),
                      cond=self.boolean(e.cond, env))
        if isinstance(e, A.Call) and e in getattr(self.ctx, "call_results", {}):
            return self.ctx.call_results[e].json()
        if isinstance(e, A.Call):
            raise Unsupported(e, "a call cannot be used inside an expression here "
                                 "(assign its result to a variable first)")
        raise Unsupported(e, f"unsupported expression ({type(e).__name__})")

    def wrap(self, j: dict, t) -> dict:
        if isinstance(t, BitT):
            if t.signed:
                return op("two_comp_mod", j, const(t.width))
            return op("&", j, const(mask_of(t.width), t.width))
        return j

    def cast(self, j: dict, src, dst) -> dict:
        if is_bool(dst):
            return j  # data form of a bool is 0/1 already
        if is_bool(src):
            return j
        if isinstance(dst, BitT):
            sw = bit_width(src) if not isinstance(src, IntT) else None
            if dst.signed:
                if isinstance(src, BitT) and src.signed and sw <= dst.width:
                    return j
                return op("two_comp_mod", j, const(dst.width))
            if isinstance(src, BitT) and not src.signed and sw <= dst.width:
                return j
            if isinstance(src, EnumT) and sw <= dst.width:
                return j
            return op("&", j, const(mask_of(dst.width), sw or dst.width))
        return j

    def binary_data(self, e: A.Binary, env: Env) -> dict:
        t = e.type
        if is_bool(t):
            return op("b2d", None, self.boolean(e, env))
        l, r = self.data(e.left, env), self.data(e.right, env)
        if e.op == "++":
            rw = bit_width(e.right.type)
            lw = bit_width(e.left.type)
            left = op("&", op("<<", op("&", l, const(mask_of(lw))), const(rw)),
                      const(mask_of(lw + rw)))
            return op("|", left, op("&", r, const(mask_of(rw))))
        if e.op in ("|+|", "|-|"):
            name = "sat_cast" if isinstance(t, BitT) and t.signed else "usat_cast"
            return op(name, op("+" if e.op == "|+|" else "-", l, r), const(t.width))
        if e.op in ("&", "|", "^", ">>", "/", "%") and not (isinstance(t, BitT) and t.signed):
            return op(e.op, l, r)
        if e.op == "-" and isinstance(e.right, A.IntLit) is False and fold(e.right) is not None:
            pass
        return self.wrap(op(e.op, l, r), t)

    # ---- booleans ---------------------------------------------------------------------------
    def boolean(self, e: A.Expr, env: Env) -> dict:
        hoisted = getattr(self.ctx, "call_results", {}).get(e)
        if hoisted is not None:
            return op("d2b", None, hoisted.json())
        v = fold(e)
        if v is not None:
            return {"type": "bool", "value": bool(v)}
        if isinstance(e, A.Unary) and e.op == "!":
            return op("not", None, self.boolean(e.expr, env))
        if isinstance(e, A.Binary):
            if e.op in ("&&", "||"):
                return op("and" if e.op == "&&" else "or", self.boolean(e.left, env),
                          self.boolean(e.right, env))
            if e.op in ("==", "!=", "<", ">", "<=", ">="):
                lt = e.left.type
                if is_bool(lt):
                    l, r = self.data(e.left, env), self.data(e.right, env)
                elif isinstance(lt, StructT) and lt.kind == "header":
                    raise Unsupported(e, "comparing whole headers is not supported")
                else:
                    l, r = self.data(e.left, env), self.data(e.right, env)
                return op(e.op, l, r)
        if isinstance(e, A.Call) and isinstance(e.func, A.Member) and e.func.name == "isValid":
            return self.is_valid(e.func.expr, env)
        if isinstance(e, A.Ternary):
            return op("?", self.boolean(e.then, env), self.boolean(e.other, env),
                      cond=self.boolean(e.cond, env))
        if isinstance(e, A.Cast):
            return op("d2b", None, self.data(e.expr, env))
        if isinstance(e, A.Name) and isinstance(env.lookup(e.decl), Bound):
            b = env.lookup(e.decl)
            return self.boolean(b.expr, b.env)
        if isinstance(e, A.Member) and getattr(e, "table_result", None):
            raise Unsupported(e, "hit/miss can only be used directly as an if condition")
        if is_bool(e.type) and not self._is_bool_location(e, env):   # data() would come back
            raise Unsupported(e, "this boolean value cannot be computed here (a table's hit "
                                 "or miss is read only as an if condition)")
        return op("d2b", None, self.data(e, env))

    def is_valid(self, target: A.Expr, env: Env) -> dict:
        s = self.resolve(target, env)
        if isinstance(s, HeaderInst):
            return op("d2b", None, {"type": "field", "value": [s.name, "$valid$"]})
        if isinstance(s, UnionStore):
            return op("valid_union", None, {"type": "header_union", "value": s.name})
        if isinstance(s, DynamicElement):
            return op("valid", None, s.json())
        raise Unsupported(target, "isValid() needs a header")

    def error_value(self, e: A.Expr) -> int:
        return fold(e)


__all__ = ["Env", "Bound", "bind_constructor_arguments", "fold_in", "instance_of",
           "is_extern_param", "ExprLowerer", "Unsupported", "const", "op", "hexstr", "mask_of"]
