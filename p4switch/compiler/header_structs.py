"""Stage 3 (continued): struct-typed fields inside headers (P4_16 §7.2.2), flattened.

A BMv2 header is a flat list of fields, so a header with a struct field keeps its logical shape
for checking (`StructT.logical`) and gets flat fields for code generation, named as p4c names
them: every leaf `_<path joined by _><position>` (`header k_t { s_t s; bit<8> z; }` has fields
`_s_p0`, `_s_q1`, `_z2`). `h.s.p` becomes the flat field `h._s_p0`; `h.s` used whole becomes the
list of its leaves (read) or one assignment per leaf (written).
"""

from __future__ import annotations

from . import ast as A
from .types import BitT, EnumT, StructT, is_bool


class HeaderStructs:
    """Struct fields inside headers for one `checker.Checker`, which holds it and calls it when
    a header type is declared (`flatten_header`), when a member of one is checked
    (`header_member`) and after each statement (`header_struct_uses`). The rewritten nodes are
    checked by that checker (`fail`, `expr`, `stmt`); this keeps no state of its own (what it
    learns lives on the header's StructT: `logical`, `flat`)."""

    def __init__(self, checker):
        self.checker = checker

    def fail(self, node, message: str):
        """The error to raise: reported through the checker's reporter."""
        return self.checker.fail(node, message)

    def flatten_header(self, t: StructT) -> None:
        """Called once t.fields holds the logical fields of a header with a struct field."""
        leaves = []

        def walk(path, ft, anns):
            if isinstance(ft, StructT) and ft.kind == "struct":
                for n, sub, sub_anns in ft.fields:
                    walk(path + (n,), sub, sub_anns)
            elif isinstance(ft, BitT) or is_bool(ft) or (isinstance(ft, EnumT) and ft.underlying):
                leaves.append((path, ft, anns))
            else:
                raise self.fail(t.decl, f"header {t.name}: a struct inside a header may only hold "
                                        f"bit<>, int<>, bool and serializable enums, not "
                                        f"{ft.describe()} ('{'.'.join(path)}')")
        for name, ft, anns in t.fields:
            walk((name,), ft, anns)
        t.logical = list(t.fields)
        t.flat = {path: f"_{'_'.join(path)}{i}" for i, (path, _, _) in enumerate(leaves)}
        t.fields = [(t.flat[path], ft, anns) for path, ft, anns in leaves]

    def header_member(self, e: A.Member, base: StructT):
        """The type of `e` (a member of a flattened header or of a struct inside one), rewriting
        a leaf access to the flat field; None when `e` is not such an access."""
        if getattr(base, "flat", None) is not None:
            header, path = e.expr, (e.name,)
        else:
            view = getattr(e.expr, "header_view", None)
            if view is None:
                return None
            header, path = view[0], view[1] + (e.name,)
            base = view[2]
        ft = _logical_type(base, path)
        if ft is None:
            return None
        if path in base.flat:
            source = A.Member(e.loc, e.expr, e.name)  # for key names: `hdr.k.s.p`, as p4c
            A.become(e, A.Member(e.loc, header, base.flat[path]))
            e.display = source
            return ft
        e.header_view = (header, path, base)
        return ft

    def header_struct_uses(self, st, s, in_action, in_parser):
        """After a statement is checked: a whole struct inside a header that is still used as
        such is expanded. Returns a replacement statement or None."""
        if isinstance(st, A.Assign) and getattr(st.lhs, "header_view", None) is not None:
            header, path, t = st.lhs.header_view
            if _has_call(st.rhs):
                raise self.fail(st.rhs, "assigning a struct inside a header: the value contains a "
                                        "call; assign it to a variable first")
            block = A.Block(st.loc, [])
            for leaf, flat in t.flat.items():
                if leaf[:len(path)] != path:
                    continue
                src = A.clone(st.rhs)
                for depth in range(len(path), len(leaf)):
                    src = _part(st.loc, src, leaf[depth], _logical_type(t, leaf[:depth]))
                block.stmts.append(A.Assign(st.loc, A.Member(st.loc, A.clone(header), flat), src))
            self.checker.stmt(block, s, in_action, in_parser)
            return block
        for node in A.walk(st):
            view = getattr(node, "header_view", None)
            if view is not None:
                header, path, t = view
                value = _as_list(node.loc, header, path, t)
                self.checker.expr(value, s, expected=node.type)
                A.become(node, value)
        return None


def _logical_type(t: StructT, path):
    fields = t.logical
    ft = None
    for name in path:
        ft = next((f for n, f, _ in fields if n == name), None)
        if ft is None:
            return None
        fields = ft.fields if isinstance(ft, StructT) else []
    return ft


def _part(loc, value: A.Expr, name: str, struct: StructT) -> A.Expr:
    """Field `name` of a struct-typed `value`: an element of a `{...}` list (by the field's
    position) or of a `{name = ...}` expression, else a member access."""
    if isinstance(value, A.ListExpr):
        return value.items[[n for n, _, _ in struct.fields].index(name)]
    if isinstance(value, A.StructExpr):
        return next(v for n, v in value.fields if n == name)
    return A.Member(loc, value, name)


def _as_list(loc, header, path, t: StructT) -> A.Expr:
    ft = _logical_type(t, path)
    if path in t.flat:
        return A.Member(loc, A.clone(header), t.flat[path])
    return A.ListExpr(loc, [_as_list(loc, header, path + (n,), t) for n, _, _ in ft.fields])


def _has_call(e) -> bool:
    return any(isinstance(n, A.Call) for n in A.walk(e))
