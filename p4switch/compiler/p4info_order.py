"""The order P4Info lists tables, actions and extern instances in, as p4c lists them.

p4c writes P4Info after its mid end has inlined sub-controls: a sub-control instance's locals
(tables, actions, externs) stand where the instance was declared among its caller's locals,
and an instance made by applying a control type directly comes after the declared locals, in
call order. Each package control then lists first the top-level actions it names (p4c copies
them into it), in the order it first names them, and then its own. The places are the
`block_path`s the lowering records (lower_expr.Env.block_path): positions from the program's
top-level instances down, compared in turn.
"""

from __future__ import annotations

from . import ast as A


class ListingOrder:
    """Sort keys for P4Info's lists; `declaration_order(decl)` orders what has no place."""

    def __init__(self, program, ctx, declaration_order):
        self.program = program
        self.ctx = ctx
        self.declaration_order = declaration_order
        self._global_places: dict | None = None

    def rank(self, obj, decl) -> tuple:
        """Where p4c lists `obj` (a table or an extern instance): p4c inlines sub-controls
        before it writes P4Info, each control's locals where its instance was declared, so the
        order is that of the positions from the package down (Env.block_path), compared in
        turn; where that place is unknown, after those, in declaration order."""
        path = getattr(obj, "block_path", None)
        return (0, path, ()) if path is not None else (1, (), self.declaration_order(decl))

    def action_rank(self, name: str, decl) -> tuple:
        """Where p4c lists an action: a control's own action at its position among the
        control's locals; a top-level action copied into the first control (in that order)
        that names it, before that control's own locals, in the order it names them."""
        path = self.ctx.action_places.get(name)
        if path is None:
            path = self.global_action_places().get(id(decl))
        return (0, path, ()) if path is not None else (1, (), self.declaration_order(decl))

    def global_action_places(self) -> dict:
        """id(top-level action) -> its place. p4c inlines sub-controls into the package's
        controls, then copies each top-level action a control names to the start of its
        locals, in the order first named (tables' action lists, then the apply blocks):
        the control's path + (-1, that order), the least over the controls."""
        if self._global_places is not None:
            return self._global_places
        top = {id(d) for d in self.program.decls if isinstance(d, A.ActionDecl)}
        places: dict = {}
        for path, decl in self.ctx.block_paths.values():
            if len(path) != 2:   # a sub-control: named in the control it is inlined into
                continue
            order: dict = {}
            for node in _flattened_names(decl):
                target = getattr(node, "decl", None) if isinstance(node, A.Name) else node
                if id(target) in top:
                    order.setdefault(id(target), len(order))
            for key, index in order.items():
                place = path + (-1, index)
                if key not in places or place < places[key]:
                    places[key] = place
        self._global_places = places
        return places


def _flattened_names(decl):
    """The names under a control as p4c sees them once its sub-controls are inlined: its
    locals in order, a sub-control instance's locals in its place; then the apply blocks, the
    control's first."""
    controls: list = []
    yield from _flattened_locals(decl, set(), controls)
    for control in controls:
        yield from _named_in_order(control.apply)


def _flattened_locals(decl, seen, subs):
    """A control's locals, its sub-controls' in their places; the controls met are collected
    in `subs` (each once), for their apply blocks."""
    if id(decl) in seen:
        return
    seen.add(id(decl))
    subs.append(decl)
    for local in decl.locals:
        t = getattr(local, "type", None)
        if isinstance(local, A.InstanceDecl) and getattr(t, "category", None) == "control":
            yield from _flattened_locals(t.decl, seen, subs)
        else:
            yield from _named_in_order(local)


def _named_in_order(node):
    """The names under a control in source order, a table's implicit NoAction after its
    properties (where p4c's front end adds `default_action = NoAction()`)."""
    return A.walk(node, instead=_table_in_order)


def _table_in_order(node):
    if not isinstance(node, A.TableDecl):
        return None
    implicit = getattr(node, "implicit_noaction", None)
    return [*A.walk(node.properties), *([implicit] if implicit is not None else [])]
