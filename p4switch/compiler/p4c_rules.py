"""Rules p4c imposes on a v1model program beyond its types, kept as p4c applies them so that
inaemu refuses what real p4c refuses (scripts/p4c_acceptance.py finds where they differ): which
table keys p4c can name from their text, whether a parser can end, and the control-plane names
of a table's actions, what a `@p4runtime_translation` says. Each is a pure function of the
checked tree; `checker.Checker` reports.
"""

from __future__ import annotations

from typing import Callable

from . import ast as A
from .constfold import fold
from .types import NamedT


def parser_can_end(states: dict) -> bool:
    """Whether accept or reject is reachable from start as p4c sees it: by a transition,
    a state without one (it rejects), or a select without a default case (no match rejects);
    an extract's failure does not count."""
    seen, todo = set(), ["start"]
    while todo:
        name = todo.pop()
        if name in ("accept", "reject"):
            return True
        if name in seen:
            continue
        seen.add(name)
        tr = states[name].transition
        if tr is None:
            return True
        if tr.select is None:
            todo.append(tr.state)
            continue
        if not any(isinstance(c.keyset, (A.Default, A.DontCare)) for c in tr.cases):
            return True
        todo.extend(c.state for c in tr.cases)
    return False


def nameable_key(e: A.Expr) -> bool:
    """A table key p4c names from its text (it refuses any other without a @name): a name, a
    field, a slice or an element of one, a number, `x & constant` and `x.isValid()` (not an
    enum member or an error constant)."""
    if isinstance(e, (A.Name, A.IntLit, A.BoolLit)):
        return True
    base = getattr(getattr(e, "expr", None), "type", None)
    if isinstance(e, A.Member) and isinstance(base, NamedT) and \
            base.category in ("type", "namespace"):     # E.A, error.NoError: p4c names neither
        return False
    if isinstance(e, (A.Member, A.Slice, A.Index)):     # (any index, as p4c)
        return nameable_key(e.expr)
    if isinstance(e, A.Binary) and e.op == "&":
        return (fold(e.right) is not None and nameable_key(e.left)) or \
            (fold(e.left) is not None and nameable_key(e.right))
    if isinstance(e, A.Call) and not e.args and isinstance(e.func, A.Member) and \
            e.func.name == "isValid":
        return nameable_key(e.func.expr)
    return fold(e) is not None


def control_plane_clash(action_decls: list, is_top: Callable[[A.ActionDecl], bool]):
    """Two actions of one table with one control-plane name (BMv2 and P4Runtime give a name one
    id): (the first, the second, its reference, the name as written), or None. A name written
    with a leading dot is global; any other is the control's unless the action is top-level."""
    named = {}
    for act, ref in action_decls:
        ann = A.find_annotation(act.annotations, "name")
        cp = ann.args[0].value if ann and ann.args and isinstance(ann.args[0], A.StrLit) \
            else act.name
        full = cp[1:] if cp.startswith(".") else cp if is_top(act) else f"(this control).{cp}"
        other = named.setdefault(full, act)
        if other is not act:
            return other, act, ref, cp
    return None


def runtime_translation(ann: A.Annotation) -> tuple | None:
    """`@p4runtime_translation("uri", W)`, `("uri", bit<W>)` or `("uri", string)` on a `type`
    as (uri, W) or (uri, "string"): the controller's view of the type, which P4Info gives.
    None when malformed (p4c refuses it when it makes P4Info)."""
    args = [a for a in ann.args if a != ","]   # expressions, or token texts for `string`
    if len(args) != 2:
        return None
    uri = args[0].value if isinstance(args[0], A.StrLit) else \
        args[0] if isinstance(args[0], str) else None
    sdn = args[1]
    if isinstance(sdn, A.TypeExpr) and isinstance(sdn.type_ref, A.BitTypeRef) and \
            not sdn.type_ref.signed:
        sdn = sdn.type_ref.width
    if uri is None:
        return None
    if isinstance(sdn, A.IntLit) and sdn.value > 0:
        return (uri, sdn.value)
    if isinstance(sdn, str) and sdn.isdigit() and int(sdn) > 0:
        return (uri, int(sdn))
    if sdn == "string" or isinstance(sdn, A.Name) and sdn.name == "string":
        return (uri, "string")
    return None
