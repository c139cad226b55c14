"""Stage 3 (continued): typing expressions and calls.

Every expression gets `.type`, names get `.decl`; unsized integer literals take the width their
context gives them; operands must agree in type (P4 has no implicit widening); calls are matched
against actions, functions, extern functions and methods (arity, overloads, type parameters,
directions).

`ExpressionChecker` is the base class of `checker.Checker`, not a separate concept: typing an
expression and checking a statement are one recursion over one set of state (the scopes, the
type parameters in force, the control being checked, the statements hoisted before the current
one), so it uses the checker's state and methods directly. It is a file of its own for length
only; the separable parts (loops, rewrites, structs inside headers) are objects the checker holds.
"""

from __future__ import annotations

from . import ast as A
from .constfold import fold
from .desugar import has_call
from .types import (BOOL, DONTCARE, ERROR, INT, MATCH_KIND, STRING, VOID, ApplyResultT, BitT,
                    EnumT, IntT, MethodT, NamedT, StackT, StructT, TupleT, Type, TypeVarT,
                    VarbitT, NewBoolT, NEW_TYPES)

ARITH = {"+", "-", "*", "/", "%", "&", "|", "^", "|+|", "|-|"}
COMPARE = {"<", ">", "<=", ">="}
HEADER_METHODS = {"isValid": BOOL, "setValid": VOID, "setInvalid": VOID}
SIZE_METHODS = {"minSizeInBits", "minSizeInBytes", "maxSizeInBits", "maxSizeInBytes"}
STACK_METHODS = {"push_front", "pop_front"}


class ExpressionChecker:
    """Expression and call typing: `checker.Checker`'s base class (its scopes, type resolution,
    hoisting and components: `desugarer`, `header_structs`)."""

    # ---- expressions ------------------------------------------------------------------------
    def expr(self, e: A.Expr, s: Scope, expected: Type | None = None) -> Type:
        t = self._expr(e, s, expected)
        if isinstance(t, IntT) and isinstance(expected, BitT) and \
                not isinstance(expected, NEW_TYPES):
            t = expected
            self._retype_literal(e, t)
        e.type = t
        return t

    def _retype_literal(self, e: A.Expr, t: Type) -> None:
        e.type = t
        if hasattr(e, "folded"):
            del e.folded
        if isinstance(e, A.Binary) and e.op not in ("<<", ">>") and isinstance(e.left.type, IntT):
            self._retype_literal(e.left, t)
            self._retype_literal(e.right, t)
        elif isinstance(e, A.Unary) and isinstance(e.expr.type, IntT):
            self._retype_literal(e.expr, t)
        elif isinstance(e, A.Ternary):
            for x in (e.then, e.other):
                if isinstance(x.type, IntT):
                    self._retype_literal(x, t)

    def _expr(self, e, s: Scope, expected):
        if isinstance(e, A.IntLit):
            if e.width is not None:
                if e.width <= 0:
                    raise self.fail(e, "a literal's width must be positive")
                return BitT(e.width, e.signed)
            return INT
        if isinstance(e, A.BoolLit):
            return BOOL
        if isinstance(e, A.StrLit):
            return STRING
        if isinstance(e, (A.DontCare, A.Default)):
            return DONTCARE
        if isinstance(e, A.DefaultValue):
            if expected is None or expected == DONTCARE:
                raise self.fail(e, "cannot tell which type's default value '...' stands for "
                                   "here: it takes its type from an assignment, a declaration, "
                                   "an argument, a return or a list or struct around it (p4c "
                                   "takes no cast of it either)")
            A.become(e, self.defaults.default_of(expected, e))
            return self._expr(e, s, expected)
        if isinstance(e, A.InvalidValue):
            if not (isinstance(expected, StructT) and expected.kind in ("header", "header_union")
                    or isinstance(expected, StackT)):
                raise self.fail(e, "'{#}' is an invalid header or header union, and the type "
                                   "here is " + ("not known: cast it, e.g. (H){#}" if expected in
                                                 (None, DONTCARE) else expected.describe()))
            if not getattr(e, "typed_by_context", False):
                raise self.fail(e, f"'{{#}}' here needs a cast to say its type, as p4c "
                                   f"requires: ({expected.describe().split()[-1]}){{#}} (it "
                                   "takes its type only from an assignment, declaration, "
                                   "return or comparison)")
            if not self.can_hoist():
                return expected     # checked again where it is used (lowering refuses it)
            A.become(e, self.defaults.invalid_local(e, expected, s))
            return self._expr(e, s, expected)
        if isinstance(e, (A.ListExpr, A.StructExpr)) and expected not in (None, DONTCARE):
            self.defaults.expand(e, expected)
        if isinstance(e, A.Name):
            return self.name(e, s)
        if isinstance(e, A.Member):
            return self.member(e, s)
        if isinstance(e, A.Index):
            base = self.expr(e.expr, s)
            if isinstance(base, StackT) and isinstance(e.expr, A.Call) and self.can_hoist():
                e.expr = self.desugarer.hoisted_value(e.expr, base, s, "result")  # f()[0]
            it = self.expr(e.index, s)
            if isinstance(base, StackT) and self.can_hoist() and has_call(e.index):
                e.index = self.desugarer.hoisted_value(e.index, it, s, "index")
            if isinstance(base, StackT):
                idx = fold(e.index)
                if idx is not None and not 0 <= idx < base.size:
                    raise self.fail(e.index, f"index {idx} is out of bounds for a stack of {base.size}")
                return base.element
            if isinstance(base, TupleT):
                idx = fold(e.index)
                if idx is None or not 0 <= idx < len(base.items):
                    raise self.fail(e.index, "tuple index must be a constant in range")
                if isinstance(e.expr, A.ListExpr):  # {a, b}[1] is b
                    A.become(e, e.expr.items[idx])
                    return e.type
                return base.items[idx]
            raise self.fail(e, f"cannot index {base.describe()}")
        if isinstance(e, A.Slice):
            base = self.expr(e.expr, s)
            hi = self.const_int(e.hi, s, "a slice bound")
            lo = self.const_int(e.lo, s, "a slice bound")
            if not isinstance(base, (BitT, IntT)) or isinstance(base, NEW_TYPES):
                raise self.fail(e, f"cannot slice {base.describe()}")
            if isinstance(base, BitT) and not (0 <= lo <= hi < base.width):
                raise self.fail(e, f"slice [{hi}:{lo}] is out of range for {base.describe()}")
            inner = e.expr
            if isinstance(inner, A.Slice) and fold(inner) is None:
                # x[h1:l1][h:l] is x[h+l1:l+l1], also as an lvalue
                offset = fold(inner.lo)
                e.expr = inner.expr
                e.hi, e.lo = A.IntLit(e.hi.loc, hi + offset), A.IntLit(e.lo.loc, lo + offset)
                e.hi.type = e.lo.type = INT
            return BitT(hi - lo + 1)
        if isinstance(e, A.Unary):
            t = self.expr(e.expr, s, expected if e.op != "!" else BOOL)
            if e.op == "!":
                if t != BOOL:
                    raise self.fail(e, f"'!' needs a bool, not {t.describe()}")
                return BOOL
            if not isinstance(t, (BitT, IntT)) or isinstance(t, NEW_TYPES):
                raise self.fail(e, f"'{e.op}' needs a number, not {t.describe()}")
            return t
        if isinstance(e, A.Binary):
            return self.binary(e, s, expected)
        if isinstance(e, A.Ternary):
            c = self.expr(e.cond, s, BOOL)
            if c != BOOL:
                raise self.fail(e.cond, "the condition of '?:' must be bool")
            a = self.expr(e.then, s, expected)
            b = self.expr(e.other, s, expected)
            return self.unify(e, e.then, e.other, a, b)
        if isinstance(e, A.Cast):
            target = self.resolve_type(e.type_ref, s)
            if isinstance(target, StackT) and isinstance(e.expr, A.ListExpr):
                # `(H[3]){ {1}, {2}, (H){#} }`, a header stack expression (P4_16 1.2.4): the
                # list, which an assignment or declaration gives the stack element by element
                A.become(e, e.expr)
                return self._expr(e, s, target)
            if isinstance(e.expr, A.DefaultValue):
                raise self.fail(e, "'...' cannot be cast (as in p4c): it takes its type from "
                                   "its context, or write the default value itself")
            if isinstance(e.expr, A.InvalidValue) or \
                    isinstance(e.expr, (A.ListExpr, A.StructExpr)) and \
                    isinstance(target, (StructT, TupleT)):
                # `(H){#}`, `(S){f = 1, ...}`: the cast gives the value its type
                # (and is then gone: `(H){f = 1}` is the header value `{f = 1}` is where an H
                # is expected)
                inner = e.expr
                inner.typed_by_context = True
                t = self.expr(inner, s, target)
                if t is target or isinstance(inner, A.InvalidValue):
                    A.become(e, inner)
                    return t
                self.check_cast(e, t, target)
                return target
            src = self.expr(e.expr, s)
            if src is target or src == target and not isinstance(src, IntT):
                A.become(e, e.expr)     # a cast to its own type (P4_16 1.2.4) changes nothing
                return src
            self.check_cast(e, src, target)
            return target
        if isinstance(e, A.ListExpr):
            items = []
            exp_items = None
            if isinstance(expected, StructT) and len(expected.fields) == len(e.items):
                exp_items = [ft for _, ft, _ in expected.fields]
            elif isinstance(expected, TupleT) and len(expected.items) == len(e.items):
                items = [self.expr(item, s, it) for item, it in zip(e.items, expected.items)]
                return TupleT(tuple(items))
            for i, item in enumerate(e.items):
                items.append(self.expr(item, s, exp_items[i] if exp_items else None))
            if exp_items is not None:
                return expected
            return TupleT(tuple(items))
        if isinstance(e, A.StructExpr):
            for n, v in e.fields:
                self.expr(v, s, expected.field_type(n) if isinstance(expected, StructT) else None)
            return expected if isinstance(expected, StructT) else TupleT(tuple(v.type for _, v in e.fields))
        if isinstance(e, A.Call):
            return self.call(e, s)
        if isinstance(e, A.TypeExpr):
            return NamedT("type", "type", self.resolve_type(e.type_ref, s))
        if isinstance(e, (A.Mask, A.Range)):
            raise self.fail(e, "'&&&' and '..' are only allowed in select cases and table entries")
        raise self.fail(e, f"unsupported expression {type(e).__name__}")

    def size_in_bits(self, e: A.Call, f: A.Member, s: Scope) -> Type:
        """`x.minSizeInBits()` and its three siblings (P4_16 8.23): a compile-time `int`, of an
        expression (not evaluated) or a type's name; the call becomes that literal."""
        t = self.trial_type(f.expr, s)
        if isinstance(t, NamedT) and t.category == "type" and isinstance(t.decl, Type):
            t = t.decl
        bits = _size_in_bits(t, f.name.startswith("max"))
        if bits is None:
            raise self.fail(e, f"{t.describe()} has no size in bits ({f.name})")
        value = (bits + 7) >> 3 if f.name.endswith("Bytes") else bits
        A.become(e, A.IntLit(e.loc, value))
        return INT

    def name(self, e: A.Name, s: Scope) -> Type:
        if e.name == "error":
            e.decl = "error"
            return NamedT("namespace", "error")
        d = (self.top if e.top_level else s).lookup(e.name)
        if d is None:
            raise self.fail(e, f"'{e.name}' is not declared")
        e.decl = d
        if getattr(d, "varbit_box", False) and not getattr(e, "unboxed", False):
            inner = A.Name(e.loc, e.name)
            inner.unboxed = True
            A.become(e, A.Member(e.loc, inner, "value"))  # a varbit variable's header field
            return self._expr(e, s, None)
        if isinstance(d, A.VarDecl) and hasattr(d, "elements"):  # a flattened tuple variable
            A.become(e, A.ListExpr(e.loc, [A.Name(e.loc, n) for n in d.elements]))
            return self._expr(e, s, None)
        if isinstance(d, (A.Param, A.VarDecl, A.ConstDecl)):
            if not hasattr(d, "type"):
                raise self.fail(e, f"'{e.name}' is used before its declaration is checked")
            if isinstance(d, A.ConstDecl) and isinstance(d.value, A.StrLit):
                A.become(e, A.StrLit(e.loc, d.value.value))   # a string constant is its text
                return STRING
            return d.type
        if isinstance(d, A.InstanceDecl):
            return d.type
        if isinstance(d, A.TableDecl):
            return NamedT("table", d.name, d)
        if isinstance(d, A.ActionDecl):
            return NamedT("action", d.name, d)
        if isinstance(d, A.ValueSetDecl):
            return d.type
        if isinstance(d, list):
            return NamedT("function", e.name, d)
        if isinstance(d, A.FunctionDecl):
            return NamedT("function", e.name, [d])
        if isinstance(d, A.EnumDecl):
            return NamedT("type", d.name, self.decl_type(d))
        if isinstance(d, A.MatchKindDecl):
            return MATCH_KIND
        if isinstance(d, (A.StructLikeDecl, A.TypedefDecl)):
            return NamedT("type", d.name, self.decl_type(d))
        if isinstance(d, A.ExternDecl):
            return NamedT("type", d.name, NamedT("extern", d.name, d))
        if isinstance(d, (A.ParserDecl, A.ControlDecl, A.PackageDecl)):
            return NamedT("type", d.name, NamedT(type(d).__name__[:-4].lower(), d.name, d))
        raise self.fail(e, f"'{e.name}' cannot be used here")

    def member(self, e: A.Member, s: Scope) -> Type:
        base = self.expr(e.expr, s)
        where = _NameSite(getattr(e, "name_loc", e.loc))
        if isinstance(base, NamedT) and base.category == "namespace":  # error.X
            if e.name not in self.errors:
                raise self.fail(e, f"unknown error '{e.name}'")
            e.constant_value = self.errors[e.name]
            e.error_name = e.name
            return ERROR
        if isinstance(base, NamedT) and base.category == "type" and isinstance(base.decl, EnumT):
            enum = base.decl
            if e.name not in enum.members:
                raise self.fail(e, f"enum {enum.name} has no member '{e.name}'")
            e.constant_value = enum.members[e.name]
            return enum
        if isinstance(base, StructT) and isinstance(e.expr, A.Call) and self.can_hoist():
            e.expr = self.desugarer.hoisted_value(e.expr, base, s, "result")  # f().field
        if isinstance(base, StructT):
            if base.kind in ("header", "header_union") and e.name in HEADER_METHODS:
                return MethodT("header" if base.kind == "header" else "union", e.name)
            flat = self.header_structs.header_member(e, base)  # a struct inside a header
            if flat is not None:
                return flat
            ft = base.field_type(e.name)
            if ft is None:
                raise self.fail(where, f"{base.describe()} has no field '{e.name}'")
            return ft
        if isinstance(base, StackT):
            if e.name in ("next", "last"):
                return base.element
            if e.name in ("lastIndex", "size", "nextIndex"):
                return BitT(32)
            if e.name in STACK_METHODS:
                return MethodT("stack", e.name)
            raise self.fail(e, f"a header stack has no member '{e.name}'")
        if isinstance(base, NamedT) and base.category == "extern":
            methods = [m for m in base.decl.methods if m.name == e.name and m.return_type is not None]
            if not methods:
                raise self.fail(e, f"extern {base.name} has no method '{e.name}'")
            return MethodT("extern", e.name, (base, methods))
        if isinstance(base, NamedT) and base.category == "type" and e.name == "apply" and \
                isinstance(base.decl, NamedT) and base.decl.category in ("control", "parser") and \
                self.enclosing is not None and isinstance(e.expr, A.Name):
            base = self.desugarer.implicit_instance(e.expr, s, self.enclosing)
        if isinstance(base, NamedT) and base.category in ("table", "control", "parser"):
            if e.name != "apply":
                raise self.fail(e, f"{base.category} '{base.name}' has no member '{e.name}'")
            return MethodT(base.category, "apply", base.decl)
        if isinstance(base, NamedT) and base.category == "instance_of":
            pass
        if isinstance(base, ApplyResultT):
            if e.name in ("hit", "miss"):
                return BOOL
            if e.name == "action_run":
                return NamedT("action_run", base.table.name, base.table)
            raise self.fail(e, f"a table apply result has no member '{e.name}'")
        problem = self.value_problem(e.expr)
        if problem is not None and base.category == "type":
            raise self.fail(e, f"{problem}: it has no member '{e.name}'")
        raise self.fail(e, f"{base.describe()} has no member '{e.name}'")

    @staticmethod
    def value_problem(e: A.Expr) -> str | None:
        """Why `e` (already typed) cannot be used as a value, or None when it can."""
        t = getattr(e, "type", None)
        if not isinstance(t, NamedT) or t.category == "action_run":
            return None
        if isinstance(e, A.TypeExpr):
            ref = e.type_ref
            name = getattr(ref, "name", None) or ("int" if getattr(ref, "signed", False)
                                                  else "varbit" if isinstance(ref, A.VarbitTypeRef)
                                                  else "bit")
        else:
            name = e.name if isinstance(e, A.Name) else t.name
        what = {"type": "a type", "extern": f"an instance of extern {t.name}",
                "control": "a control", "parser": "a parser", "package": "a package",
                "table": "a table (apply it with .apply())",
                "action": "an action (call it as a statement)",
                "function": "a function (call it)", "namespace": "a namespace"}.get(t.category)
        if what is None:
            return None
        return f"'{name}' is {what}, not a value"

    def binary(self, e: A.Binary, s: Scope, expected) -> Type:
        op = e.op
        test = self.defaults.validity_test(e)
        if test is not None:   # `h == {#}`
            A.become(e, test)
            return self._expr(e, s, BOOL)
        for side in (e.left, e.right):
            if isinstance(side, A.DefaultValue):
                raise self.fail(side, f"'...' cannot be an operand of '{op}': it has no type "
                                      "there (as in p4c); write the default value itself")
        if op in ("&&", "||"):
            for side in (e.left, e.right):
                if self.expr(side, s, BOOL) != BOOL:
                    raise self.fail(side, f"'{op}' needs bool operands, not {side.type.describe()}")
            return BOOL
        if op in ("<<", ">>"):
            lt = self.expr(e.left, s, expected)
            rt = self.expr(e.right, s)
            if not isinstance(lt, (BitT, IntT)) or not isinstance(rt, (BitT, IntT)) or \
                    isinstance(lt, NEW_TYPES) or isinstance(rt, NEW_TYPES):
                raise self.fail(e, f"'{op}' needs numbers, not {lt.describe()} and {rt.describe()}")
            if isinstance(rt, BitT) and rt.signed:
                raise self.fail(e.right, "a shift amount must be unsigned")
            amount = fold(e.right)
            if isinstance(amount, int) and not isinstance(amount, bool) and amount < 0:
                raise self.fail(e.right, f"a shift amount must not be negative, not {amount}")
            own = lt if expected is None else self.trial_type(e.left, s)   # (no context)
            if isinstance(own, IntT) and amount is None:
                raise self.fail(e, f"'{op}' of an int without a width by an amount known only at "
                                   "run time: give the left operand a width (e.g. 8w1), as p4c "
                                   "requires")
            return lt
        if op == "++":
            lt = self.expr(e.left, s)
            rt = self.expr(e.right, s)
            if lt == STRING or rt == STRING:
                # compile-time strings (P4_16 1.2.5): "a" ++ "b" is "ab"
                if not (isinstance(e.left, A.StrLit) and isinstance(e.right, A.StrLit)):
                    raise self.fail(e, "'++' of strings needs two string literals (or "
                                       "concatenations of them)")
                A.become(e, A.StrLit(e.loc, e.left.value + e.right.value))
                return STRING
            if isinstance(lt, NEW_TYPES) or isinstance(rt, NEW_TYPES):
                raise self.fail(e, f"'++' needs bit<> or int<> operands, not {lt.describe()} and "
                                   f"{rt.describe()}")
            if not isinstance(lt, BitT) or not isinstance(rt, BitT):
                raise self.fail(e, "'++' needs operands with a width (cast the literal, e.g. 8w1)")
            return BitT(lt.width + rt.width, lt.signed)
        hint = expected if op in ARITH and not isinstance(expected, NEW_TYPES) else None
        lt = self.expr(e.left, s, hint)
        rt = self.expr(e.right, s, lt if isinstance(lt, BitT) else hint)
        if isinstance(lt, NEW_TYPES) or isinstance(rt, NEW_TYPES):
            if op not in ("==", "!="):
                new = lt if isinstance(lt, NEW_TYPES) else rt
                raise self.fail(e, f"'{op}' is not defined on {new.describe()}, a type made by "
                                   "'type' (cast it to its base type first)")
            if lt != rt:
                raise self.fail(e, f"cannot compare {lt.describe()} with {rt.describe()}"
                                   + (" (cast the literal to the type)" if
                                      isinstance(lt, IntT) or isinstance(rt, IntT) else ""))
            return BOOL
        if isinstance(rt, BitT) and isinstance(lt, IntT):
            self.expr(e.left, s, rt)
            lt = rt
        if op in ("==", "!=") and (isinstance(lt, StructT) and lt.kind == "struct" or
                                   isinstance(lt, TupleT)) and \
                isinstance(e.right, (A.ListExpr, A.StructExpr)) and rt != lt:
            rt = self.expr(e.right, s, lt)   # `meta.s == {1, 2}`: the list is an s_t
        if op in ("==", "!="):
            self.comparable(e, lt, rt)
            if isinstance(lt, (StructT, StackT, TupleT)):
                self.desugarer.expand_equality(e, lt, s)
            return BOOL
        if not isinstance(lt, (BitT, IntT)) or not isinstance(rt, (BitT, IntT)):
            for side in (e.left, e.right):
                problem = self.value_problem(side)
                if problem is not None:
                    raise self.fail(side, problem)
            raise self.fail(e, f"'{op}' needs numbers, not {lt.describe()} and {rt.describe()}")
        t = self.unify(e, e.left, e.right, lt, rt)
        if op in COMPARE:
            return BOOL
        return t

    def comparable(self, e, lt, rt) -> None:
        if isinstance(lt, (BitT, IntT)) and isinstance(rt, (BitT, IntT)):
            self.unify(e, e.left, e.right, lt, rt)
            return
        if isinstance(lt, EnumT) and lt.underlying and isinstance(rt, (BitT, IntT)):
            return
        if lt == rt or isinstance(lt, TypeVarT) or isinstance(rt, TypeVarT):
            return
        if isinstance(lt, StructT) and isinstance(rt, StructT) and lt.name == rt.name:
            return
        raise self.fail(e, f"cannot compare {lt.describe()} with {rt.describe()}")

    def unify(self, e, left, right, lt, rt) -> Type:
        if isinstance(lt, IntT) and isinstance(rt, IntT):
            return INT
        if isinstance(lt, IntT) and isinstance(rt, NEW_TYPES) or \
                isinstance(rt, IntT) and isinstance(lt, NEW_TYPES):
            raise self.fail(e, f"operands have different types: {lt.describe()} and "
                               f"{rt.describe()} (cast the literal to the type)")
        if isinstance(lt, IntT):
            self._retype_literal(left, rt)
            return rt
        if isinstance(rt, IntT):
            self._retype_literal(right, lt)
            return lt
        if lt != rt and isinstance(lt, BitT) and isinstance(rt, BitT):
            raise self.fail(e, f"operands have different types: {lt.describe()} and "
                               f"{rt.describe()} (use a cast)")
        if lt != rt and not (isinstance(lt, TypeVarT) or isinstance(rt, TypeVarT)):
            if not (isinstance(lt, StructT) and isinstance(rt, StructT) and lt.name == rt.name):
                raise self.fail(e, f"operands have different types: {lt.describe()} and {rt.describe()}")
        return lt

    def check_cast(self, e, src: Type, target: Type) -> None:
        problem = self.value_problem(e.expr) if isinstance(e, A.Cast) else None
        if problem is not None:
            raise self.fail(e.expr, problem)
        ok = False
        if isinstance(target, NEW_TYPES) or isinstance(src, NEW_TYPES):
            # p4c: only between a type made by `type` and the type it renames, or from a literal
            ok = src == target or isinstance(target, NEW_TYPES) and \
                (src == target.base or isinstance(src, IntT)) or \
                isinstance(src, NEW_TYPES) and target == src.base
        elif isinstance(target, BitT):
            ok = isinstance(src, (BitT, IntT)) or src == BOOL or (isinstance(src, EnumT) and src.underlying)
            if isinstance(src, BitT) and src.signed != target.signed and src.width != target.width:
                # P4_16 8.11.1: a cast changes the width or the signedness, not both
                w = target.width if src.signed else src.width
                hint = f"{'int' if src.signed else 'bit'}<{target.width}>" if src.signed \
                    else f"{'int' if target.signed else 'bit'}<{w}>"
                raise self.fail(e, f"cannot cast {src.describe()} to {target.describe()}: a cast "
                                   "changes either the width or the signedness; cast twice "
                                   f"(e.g. through {hint})")
        elif target == BOOL:
            ok = src == BOOL or (isinstance(src, BitT) and src.width == 1) or isinstance(src, IntT)
        elif isinstance(target, EnumT):
            ok = target.underlying is not None and isinstance(src, (BitT, IntT, EnumT))
        elif isinstance(target, StructT):
            ok = isinstance(src, (TupleT, StructT))
        else:
            ok = src == target or isinstance(src, IntT)
        if not ok:
            raise self.fail(e, f"cannot cast {src.describe()} to {target.describe()}")

    # ---- calls ------------------------------------------------------------------------------
    def call(self, e: A.Call, s: Scope) -> Type:
        f = e.func
        if isinstance(f, A.Member) and f.name in SIZE_METHODS and not e.args and \
                not e.type_args:
            return self.size_in_bits(e, f, s)
        ft = self.expr(e.func, s)
        type_args = [self.resolve_type(t, s) if not isinstance(t, A.TypeExpr) else INT
                     for t in e.type_args]
        e.type_arg_types = type_args
        if isinstance(ft, MethodT):
            return self.method_call(e, ft, s, type_args)
        if isinstance(ft, NamedT) and ft.category == "action":
            act = ft.decl
            self.action_call_args(act, e, s, partial=False)
            return VOID
        if isinstance(ft, NamedT) and ft.category == "function":
            candidates = [d for d in ft.decl if len(d.params) == len(e.args)
                          or len([p for p in d.params if p.default is None]) <= len(e.args) <= len(d.params)]
            if not candidates:
                counts = sorted({len(d.params) for d in ft.decl})
                raise self.fail(e, f"'{ft.name}' takes {' or '.join(map(str, counts))} arguments, "
                                   f"not {len(e.args)}")
            d = candidates[0]
            e.callee = d
            t = self.bind_args(e, d, d.params, d.return_type, d.type_params, s, type_args)
            if isinstance(d, A.ExternFunctionDecl) and d.name == "static_assert":
                self.static_assert(e)
            return t
        if isinstance(ft, NamedT) and ft.category == "type":
            # constructor call in an instantiation argument, e.g. V1Switch(MyParser(), ...)
            if isinstance(ft.decl, NamedT) and ft.decl.category in ("parser", "control"):
                self.constructor_arguments(e, ft.decl.decl, s)
            else:
                for a in e.args:
                    self.expr(a.value, s)
            e.constructs = ft.decl
            return ft.decl if isinstance(ft.decl, NamedT) else VOID
        raise self.fail(e, f"'{_describe_callee(e.func)}' is not callable")

    def argument_count(self, e: A.Call, params: list, what: str) -> None:
        """Refuse a call with more arguments than parameters, or fewer than those without a
        default value."""
        required = sum(p.default is None for p in params)
        if not required <= len(e.args) <= len(params):
            wanted = str(len(params)) if required == len(params) else \
                f"{required} to {len(params)}"
            raise self.fail(e, f"{what} takes {wanted} arguments, not {len(e.args)}")

    def constructor_arguments(self, e, decl, s: Scope) -> None:
        """A parser's or control's constructor arguments (`MyIngress(8w3)`, `Sub(true) sub;`):
        one per parameter or its default, named or positional, each of the parameter's type
        and known at compile time, as p4c requires."""
        params = decl.ctor_params
        if any(a.name for a in e.args):
            order = {p.name: i for i, p in enumerate(params)}
            if not all(a.name for a in e.args):
                raise self.fail(e, "arguments must be all named or all positional")
            for a in e.args:
                if a.name not in order:
                    raise self.fail(a, f"'{decl.name}' has no constructor parameter named "
                                       f"'{a.name}'")
            if len({a.name for a in e.args}) != len(e.args):
                raise self.fail(e, "an argument is named twice")
            e.args.sort(key=lambda a: order[a.name])
            given = {a.name for a in e.args}
            missing = [p.name for p in params if p.name not in given and p.default is None]
            if missing:
                raise self.fail(e, f"no argument for constructor parameter '{missing[0]}' of "
                                   f"'{decl.name}'")
        else:
            self.argument_count(e, params, f"the constructor of '{decl.name}'")
        by_param = {a.name: a for a in e.args} if any(a.name for a in e.args) else \
            dict(zip((p.name for p in params), e.args))
        for p in params:
            a = by_param.get(p.name)
            if a is None:
                continue
            instance = isinstance(p.type, NamedT) and \
                p.type.category in ("parser", "control", "extern", "package")
            self.expr(a.value, s, expected=None if instance else p.type)
            if instance:
                continue
            self.assignable(p.type, a.value, a.value, literal_to_new_type=False)
            passed_on = isinstance(a.value, A.Name) and \
                getattr(getattr(a.value, "decl", None), "is_constructor", False)
            if fold(a.value) is None and not passed_on:
                raise self.fail(a.value, f"constructor argument for '{p.name}' must be a "
                                         "compile-time constant or a constructor parameter")

    def static_assert(self, e: A.Call) -> None:
        """core.p4's `static_assert(check[, message])`: checked here, `true` from then on."""
        check = fold(e.args[0].value)
        if not isinstance(check, bool):
            raise self.fail(e.args[0].value, "static_assert needs a condition known at compile "
                                             "time")
        if not check:
            message = e.args[1].value if len(e.args) > 1 else None
            text = message.value if isinstance(message, A.StrLit) else ""
            raise self.fail(e, "static assertion failed" + (f": {text}" if text else ""))
        e.folded = True

    def method_call(self, e: A.Call, mt: MethodT, s: Scope, type_args) -> Type:
        if mt.owner in ("header", "union"):
            if e.args:
                raise self.fail(e, f"{mt.name}() takes no arguments")
            return HEADER_METHODS[mt.name]
        if mt.owner == "stack":
            if len(e.args) != 1:
                raise self.fail(e, f"{mt.name}() takes one argument (a count)")
            self.const_int(e.args[0].value, s, "the count")
            return VOID
        if mt.owner == "table":
            if e.args:
                raise self.fail(e, "apply() takes no arguments")
            return ApplyResultT(mt.decl)
        if mt.owner in ("control", "parser"):   # its apply parameters, some with defaults
            params = mt.decl.params
            self.argument_count(e, params, f"{mt.owner} '{mt.decl.name}'")
            return self.bind_args(e, mt.decl, params, None, [], s, type_args)
        base, methods = mt.decl
        candidates = [m for m in methods
                      if len([p for p in m.params if p.default is None]) <= len(e.args) <= len(m.params)]
        if not candidates:
            counts = sorted({len(m.params) for m in methods})
            raise self.fail(e, f"{base.name}.{mt.name}() takes {' or '.join(map(str, counts))} "
                               f"arguments, not {len(e.args)}")
        m = candidates[0]
        e.callee = m
        bindings = dict(zip(base.decl.type_params, base.type_args))
        return self.bind_args(e, m, m.params, m.return_type, m.type_params, s, type_args, bindings)

    def bind_args(self, e, decl, params, ret_ref, type_params, s, type_args, bindings=None) -> Type:
        bindings = dict(bindings or {})
        bindings.update(zip(type_params, type_args))
        self.type_params.append(set(type_params) | set(getattr(getattr(decl, "owner", None), "type_params", [])))
        try:
            param_types = [self._param_type(p, s, bindings) for p in params]
            ret = self._param_type_ref(ret_ref, s, bindings) if ret_ref is not None else VOID
        finally:
            self.type_params.pop()
        if any(a.name for a in e.args):
            order = {p.name: i for i, p in enumerate(params)}
            for a in e.args:
                if a.name not in order:
                    raise self.fail(a, f"no parameter named '{a.name}'")
            e.args.sort(key=lambda a: order[a.name])
        for index, (p, pt, a) in enumerate(zip(params, param_types, e.args)):
            if isinstance(a.value, A.DontCare) and self.can_hoist() and \
                    isinstance(pt, (BitT, StructT, EnumT)) or pt == BOOL and \
                    isinstance(a.value, A.DontCare) and self.can_hoist():
                a.value = self.desugarer.dont_care_local(a.value, pt, s)
            generic = _generic_struct(pt)
            self.expr(a.value, s, expected=pt if not (isinstance(pt, TypeVarT) or generic)
                      else None)
            if isinstance(pt, TypeVarT):
                bindings.setdefault(pt.name, a.value.type)
            elif generic:
                # `pair_t<T, bit<16>> p` given a pair_t<bit<8>, bit<16>>: T is bit<8>
                given = a.value.type
                if not (isinstance(given, StructT) and given.decl is pt.decl and
                        getattr(given, "type_args", None) is not None):
                    raise self.fail(a, f"expected {pt.describe()}, not {given.describe()}")
                for want, got in zip(pt.type_args, given.type_args):
                    if isinstance(want, TypeVarT):
                        bound = bindings.setdefault(want.name, got)
                        if bound != got:
                            raise self.fail(a, f"type parameter {want.name} is both "
                                               f"{bound.describe()} and {got.describe()}")
                    elif want != got:
                        raise self.fail(a, f"expected {pt.describe()}, not {given.describe()}")
                param_types[index] = given
            elif not isinstance(a.value, A.DontCare):
                self.assignable(pt, a.value, a.value, literal_to_new_type=False)
            if p.direction in ("out", "inout") and not isinstance(a.value, A.DontCare):
                self.lvalue(a.value)
        if isinstance(ret, TypeVarT) and ret.name in bindings:
            ret = bindings[ret.name]
        e.param_types = param_types
        return ret

    def _param_type(self, p: A.Param, s, bindings) -> Type:
        return self._param_type_ref(p.type_ref, s, bindings)

    def _param_type_ref(self, ref, s, bindings) -> Type:
        if isinstance(ref, A.NamedTypeRef) and ref.name in bindings:
            return bindings[ref.name]
        return self.resolve_type(ref, s if s is not None else self.top)


class _NameSite:
    def __init__(self, loc):
        self.loc = loc


def _describe_callee(e) -> str:
    if isinstance(e, A.Name):
        return e.name
    if isinstance(e, A.Member):
        return _describe_callee(e.expr) + "." + e.name
    return "expression"


def _size_in_bits(t: Type, maximum: bool) -> int | None:
    """The least (or greatest) number of bits a value of `t` takes (P4_16 8.23's table);
    None for a type without one."""
    if isinstance(t, BitT):
        return t.width
    if t == BOOL or isinstance(t, NewBoolT):
        return 1
    if isinstance(t, EnumT):
        return t.underlying.width if t.underlying is not None else None
    if isinstance(t, VarbitT):
        return t.max_width if maximum else 0
    if isinstance(t, StackT):
        one = _size_in_bits(t.element, maximum)
        return None if one is None else t.size * one
    members = (t.items if isinstance(t, TupleT) else
               [ft for _, ft, _ in t.fields] if isinstance(t, StructT) else None)
    if members is None:
        return None
    sizes = [_size_in_bits(m, maximum) for m in members]
    if any(size is None for size in sizes):
        return None
    if isinstance(t, StructT) and t.kind == "header_union":
        return max(sizes, default=0)
    return sum(sizes)


def _generic_struct(t: Type) -> bool:
    """Whether `t` is a generic struct or header specialized with a type parameter still open
    (`pair_t<T, bit<16>>` in a generic function's parameter list)."""
    args = getattr(t, "type_args", None) if isinstance(t, StructT) else None
    return bool(args) and any(isinstance(a, TypeVarT) for a in args)
