"""Stage 3 (continued): default values (`...`) and invalid headers (`{#}`), P4_16 1.2.2-1.2.3.

Both take their type from the context (a declaration, an assignment's target, a parameter, a
cast, the other side of `==`), so the checker rewrites them once it knows that type, into forms
the rest of the compiler already has:

- `...` of a number is 0, of a bool false, of an error `error.NoError`, of an enum with an
  underlying type its 0, of another enum its first member; of a struct or tuple the list of its
  members' defaults; of a header, a header union or a header stack: invalid.
- `...` as the last item of a list or structure-valued expression (`{1, ...}`, `{f = 2, ...}`)
  stands for the default of every member not given; a header given so is valid (P4_16 8.13:
  "structure-valued expressions that evaluate to a value of some header type are always valid").
- `{#}` (or `...` of a header, union or stack) becomes a local that is made invalid just before
  the statement that uses it (`H invalid; invalid.setInvalid();`), as p4c's mid end does; `h ==
  {#}` is `!h.isValid()`, and `h = {#}` is `h.setInvalid()`.
"""

from __future__ import annotations

from . import ast as A
from .types import (BOOL, ERROR, INT, BitT, EnumT, IntT, NEW_TYPES, StackT, StructT, TupleT,
                    Type)


class DefaultValues:
    """The rewrites of one `checker.Checker` (its `fail`, `fresh_local`, `hoist`,
    `hoist_statement`, `can_hoist`, `stmt`); it keeps no state of its own."""

    def __init__(self, checker):
        self.checker = checker

    # ---- `...` ------------------------------------------------------------------------------
    def expand(self, e: A.Expr, t: Type) -> A.Expr:
        """`e` with every `...` it holds for a value of type `t` written out (a new node where
        `e` itself is `...`; lists and structure-valued expressions are rewritten in place)."""
        if isinstance(e, A.DefaultValue):
            return self.default_of(t, e)
        if isinstance(e, A.ListExpr):
            early = next((item for item in e.items[:-1] if isinstance(item, A.DefaultValue)), None)
            if early is not None:
                raise self.checker.fail(early, "'...' must be the last item of a list (P4_16 "
                                               "7.3.1), as p4c requires")
            members = _member_types(t)
            if members is None:
                if e.items and isinstance(e.items[-1], A.DefaultValue):
                    raise self.checker.fail(e.items[-1], f"'...' in a list needs a struct, header, "
                                                         f"tuple or header stack, not {t.describe()}")
                return e
            given = e.items
            rest = bool(given) and isinstance(given[-1], A.DefaultValue)
            if rest:
                given = given[:-1]
            if len(given) > len(members) or (not rest and len(given) != len(members)):
                return e    # the usual checks say what is wrong
            e.items = [self.expand(item, mt) for item, (_, mt) in zip(given, members)]
            e.items += [self.default_of(mt, e) for _, mt in members[len(given):]]
            return e
        if isinstance(e, A.StructExpr):
            if not isinstance(t, StructT):
                if any(n == "..." for n, _ in e.fields):
                    raise self.checker.fail(e, f"'...' in a structure-valued expression needs a "
                                               f"struct or header, not {t.describe()}")
                return e
            rest = bool(e.fields) and e.fields[-1][0] == "..."
            given = e.fields[:-1] if rest else e.fields
            fields = []
            for name, value in given:
                ft = t.field_type(name)
                fields.append((name, self.expand(value, ft) if ft is not None else value))
            if rest:
                named = {n for n, _ in given}
                fields += [(n, self.default_of(ft, e)) for n, ft, _ in t.fields if n not in named]
            e.fields = fields
            return e
        return e

    def default_of(self, t: Type, where: A.Node) -> A.Expr:
        """An (unchecked) expression for the default value of `t` (P4_16 7.3)."""
        loc = where.loc
        if isinstance(t, NEW_TYPES):   # P4_16 7.3 lists none for them; p4c refuses them too
            raise self.checker.fail(where, f"{t.describe()}, a type made by 'type', has no "
                                           "default value ('...')")
        if isinstance(t, BitT):
            return A.IntLit(loc, 0, t.width, t.signed)
        if isinstance(t, IntT) or t == INT:
            return A.IntLit(loc, 0)
        if t == BOOL:
            return A.BoolLit(loc, False)
        if t == ERROR:
            return A.Member(loc, A.Name(loc, "error"), "NoError")
        if isinstance(t, EnumT) and t.underlying is not None:
            zero = A.IntLit(loc, 0, t.underlying.width, t.underlying.signed)
            return A.Cast(loc, A.NamedTypeRef(loc, t.name), zero)
        if isinstance(t, EnumT):
            first = next(iter(t.members))
            return A.Member(loc, A.Name(loc, t.name, top_level=True), first)
        if isinstance(t, StructT) and t.kind == "struct":
            return A.StructExpr(loc, [(n, self.default_of(ft, where)) for n, ft, _ in t.fields])
        if isinstance(t, TupleT):
            return A.ListExpr(loc, [self.default_of(it, where) for it in t.items])
        if isinstance(t, (StructT, StackT)):   # a header, a header union, a header stack
            invalid = A.InvalidValue(loc)
            invalid.typed_by_context = True
            return invalid
        raise self.checker.fail(where, f"{t.describe()} has no default value ('...')")

    # ---- `{#}` ------------------------------------------------------------------------------
    def invalid_local(self, e: A.InvalidValue, t: Type, s) -> A.Name:
        """A local of header, union or stack type `t`, made invalid just before the current
        statement: what `{#}` (or `...` of such a type) reads."""
        from .desugar import _type_ref
        name = self.checker.fresh_local(s, "invalid")
        self.checker.hoist(A.VarDecl(e.loc, _type_ref(t, e.loc), name, None), s)
        for header in _headers_of(A.Name(e.loc, name), t, e.loc):
            call = A.CallStmt(e.loc, A.Call(e.loc, A.Member(e.loc, header, "setInvalid"), [], []))
            self.checker.stmt(call, s, in_action=True)
            self.checker.hoist_statement(call)
        use = A.Name(e.loc, name)
        return use

    def validity_test(self, e: A.Binary) -> A.Expr | None:
        """`x == {#}` as `!x.isValid()`, `x != {#}` as `x.isValid()` (None: not such a test)."""
        if e.op not in ("==", "!="):
            return None
        if isinstance(e.right, A.InvalidValue):
            other = e.left
        elif isinstance(e.left, A.InvalidValue):
            other = e.right
        else:
            return None
        valid = A.Call(e.loc, A.Member(e.loc, other, "isValid"), [], [])
        return A.Unary(e.loc, "!", valid) if e.op == "==" else valid


def _member_types(t: Type) -> list | None:
    """(name, type) of each member a list for a `t` value gives, in order; None: not a list's."""
    if isinstance(t, StructT) and t.kind in ("struct", "header"):
        return [(n, ft) for n, ft, _ in t.fields]
    if isinstance(t, TupleT):
        return [(str(k), it) for k, it in enumerate(t.items)]
    if isinstance(t, StackT):
        return [(str(k), t.element) for k in range(t.size)]
    return None


def _headers_of(target: A.Expr, t: Type, loc) -> list:
    """The headers to make invalid for `target` of type `t` to be invalid as a whole."""
    if isinstance(t, StackT):
        out = []
        for k in range(t.size):
            out += _headers_of(A.Index(loc, A.clone(target), A.IntLit(loc, k)), t.element, loc)
        return out
    if isinstance(t, StructT) and t.kind == "header_union":
        return [A.Member(loc, A.clone(target), n) for n, _, _ in t.fields]
    return [target]


__all__ = ["DefaultValues"]
