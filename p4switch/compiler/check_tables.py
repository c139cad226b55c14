"""Stage 3 (continued): tables and keysets, as p4c checks them.

A table's properties (keys, the actions list, the default action, const entries, priorities,
size) and every keyset: a select case's or an entry's value must have its key's type
(`types.key_compatible`), masks and ranges included, and a value set must fit the select's keys.
"""

from __future__ import annotations

from . import ast as A
from .p4c_rules import control_plane_clash, nameable_key
from .priorities import assign_priorities
from .types import (BOOL, DONTCARE, ERROR, NEW_TYPES, BitT, EnumT, StructT, TupleT, is_bool,
                    key_compatible)


class TableChecker:
    """Tables and keysets for one `checker.Checker`, which holds it and calls `check_table` for
    each table declaration and `keyset` for each select case. Expressions, scopes, errors and
    action calls are the checker's; this keeps no state of its own."""

    def __init__(self, checker):
        self.checker = checker

    def check_table(self, d: A.TableDecl, s) -> None:
        props = {}
        for p in d.properties:
            if p.name in props:
                raise self.checker.fail(p, f"table property '{p.name}' is given twice")
            props[p.name] = p
        d.props = props
        keys = props.get("key")
        for k in (keys.value if keys else []):
            self.checker.expr(k.expr, s)
            if not A.find_annotation(k.annotations, "name") and not nameable_key(k.expr):
                raise self.checker.fail(k.expr, "this key expression needs a @name annotation (p4c names "
                                        "only fields, slices, elements, constant masks, "
                                        "constants and isValid() itself)")
            f = k.expr.func if isinstance(k.expr, A.Call) else None
            if isinstance(f, A.Member) and f.name == "isValid" and \
                    getattr(f.expr.type, "kind", None) == "header_union":
                self.checker.desugarer.expand_union_valid(k.expr, f.expr.type, s)
            if k.match_kind not in self.checker.match_kinds:
                raise self.checker.fail(k, f"unknown match kind '{k.match_kind}'")
            if not isinstance(k.expr.type, (BitT, EnumT)) and k.expr.type not in (BOOL, ERROR):
                raise self.checker.fail(k.expr, f"cannot match on {k.expr.type.describe()}")
        actions = props.get("actions")
        if actions is None:
            raise self.checker.fail(d, f"table '{d.name}' has no 'actions' property")
        d.action_decls = []
        for ref in actions.value:
            call = ref.name
            name = call.func if isinstance(call, A.Call) else call
            if not isinstance(name, A.Name):
                raise self.checker.fail(ref, "expected an action name")
            act = s.lookup(name.name)
            if not isinstance(act, A.ActionDecl):
                raise self.checker.fail(name, f"'{name.name}' is not an action")
            name.decl = act
            if isinstance(call, A.Call):
                self.checker.action_call_args(act, call, s, partial=True)
            for p in act.params:
                if not p.direction and (is_bool(p.type) or p.type == ERROR):
                    raise self.checker.fail(ref, f"action '{act.name}' takes '{p.name}' of type "
                                         f"{p.type.describe()} from the control plane; BMv2's "
                                         "action data must be bit<> or int<> (as p4c requires)")
            d.action_decls.append((act, ref))
        listed = {a for a, _ in d.action_decls}
        clash = control_plane_clash(d.action_decls, lambda a: self.checker.top.names.get(a.name) is a)
        if clash is not None:
            other, act, ref, cp = clash
            raise self.checker.fail(ref, f"table '{d.name}' lists actions '{other.name}' and "
                                 f"'{act.name}', which have the same control-plane name '{cp}'")
        marked = {a: {n for n in ("defaultonly", "tableonly") if A.find_annotation(r.annotations, n)}
                  for a, r in d.action_decls}
        default = props.get("default_action")
        if default is not None:
            self.table_action_call(default.value, s, listed, "default_action", full=True)
            self.not_marked(default.value, marked, "tableonly", "the default action")
        entries = props.get("entries")
        if entries is not None:
            key_exprs = [k.expr for k in keys.value] if keys else []
            for e in entries.value:
                if len(e.keys) != len(key_exprs):
                    raise self.checker.fail(e, f"entry has {len(e.keys)} keys, table '{d.name}' has "
                                       f"{len(key_exprs)}")
                for kexpr, kv in zip(key_exprs, e.keys):
                    self.keyset(kv, [kexpr], s, in_select=False)
                    if kexpr.type == ERROR and not isinstance(kv, (A.DontCare, A.Default)):
                        raise self.checker.fail(kv, "an entry cannot match an error value: p4c's BMv2 "
                                            "back end does not support it (match in an if, or "
                                            "add the entry from the control plane)")
                self.table_action_call(e.action, s, listed, "entry", full=True)
                self.not_marked(e.action, marked, "defaultonly", "an entry")
        assign_priorities(d, props, lambda e, what: self.checker.const_int(e, s, what),
                          lambda e, what: self.checker.const_bool(e, s, what), self.checker.fail,
                          lambda node, message: self.checker.r.warn(node.loc, message))
        for name in ("size", "counters", "meters", "implementation", "support_timeout"):
            p = props.get(name)
            if p is not None:
                self.checker.expr(p.value, s)
        if "size" in props:
            d.size_value = self.checker.const_int(props["size"].value, s, "a table size")
        for name in props:
            if name not in ("key", "actions", "default_action", "entries", "size", "counters",
                            "meters", "implementation", "support_timeout", "idle_timeout_with_auto_delete",
                            "largest_priority_wins", "priority_delta"):
                self.checker.r.warn(props[name].loc, f"unknown table property '{name}': ignored "
                                             "(as p4c does)")
        s.names[d.name] = d

    def not_marked(self, e: A.Expr, marked: dict, mark: str, use: str) -> None:
        """p4c: an action listed @defaultonly is no entry's, one listed @tableonly is not the
        default action."""
        name = e.func if isinstance(e, A.Call) else e
        if mark in marked.get(name.decl, ()):
            raise self.checker.fail(name, f"action '{name.name}' is listed @{mark}: it cannot be {use}")

    def table_action_call(self, e: A.Expr, s, listed, what: str, full: bool) -> None:
        call = e if isinstance(e, A.Call) else None
        name = call.func if call else e
        if not isinstance(name, A.Name):
            raise self.checker.fail(e, f"{what}: expected an action call")
        act = s.lookup(name.name)
        if not isinstance(act, A.ActionDecl):
            raise self.checker.fail(name, f"'{name.name}' is not an action")
        name.decl = act
        if act not in listed:
            raise self.checker.fail(name, f"{what} action '{name.name}' is not in the table's actions list")
        if call is None:
            if any(not p.direction for p in act.params):
                raise self.checker.fail(e, f"action '{act.name}' needs arguments here")
            return
        self.checker.action_call_args(act, call, s, partial=False)

    def keyset(self, k: A.Expr, keys: list, s, in_select: bool = True) -> None:
        if isinstance(k, (A.Default, A.DontCare)):
            k.type = DONTCARE
            return
        if isinstance(k, A.ListExpr):
            if len(k.items) != len(keys):
                raise self.checker.fail(k, f"keyset has {len(k.items)} values, the select has {len(keys)}")
            for item, key in zip(k.items, keys):
                self.keyset(item, [key], s, in_select)
            k.type = TupleT(tuple(i.type for i in k.items))
            return
        expected = keys[0].type if len(keys) == 1 else None
        if isinstance(expected, NEW_TYPES) and isinstance(k, (A.Mask, A.Range)):
            raise self.checker.fail(k, f"'{'&&&' if isinstance(k, A.Mask) else '..'}' is not defined on "
                               f"{expected.describe()}, a type made by 'type' (as in p4c)")
        if isinstance(k, (A.Mask, A.Range)):
            a, b = (k.value, k.mask) if isinstance(k, A.Mask) else (k.low, k.high)
            self.checker.expr(a, s, expected=expected)
            self.checker.expr(b, s, expected=expected)
            self.matches_key(a, expected, in_select)
            self.matches_key(b, expected, in_select or isinstance(k, A.Mask))  # 0xff00 masks an enum
            k.type = expected
            return
        self.checker.expr(k, s, expected=expected)
        if isinstance(k, A.Name) and isinstance(k.decl, A.ValueSetDecl):
            fields = k.type.fields if isinstance(k.type, StructT) else []
            if len(keys) == 1 and not fields:
                self.matches_key(k, expected, in_select)
                return
            if len(fields) != len(keys) or not all(
                    key_compatible(key.type, ft) for key, (_, ft, _) in zip(keys, fields)):
                raise self.checker.fail(k, f"value set '{k.name}' of {k.type.describe()} does not match "
                                   f"the select's {len(keys)} keys of types "
                                   + ", ".join(key.type.describe() for key in keys))
            return
        if len(keys) > 1:
            raise self.checker.fail(k, f"keyset needs {len(keys)} values")
        self.matches_key(k, expected, in_select)

    def matches_key(self, value: A.Expr, key_type, in_select: bool) -> None:
        """A select case's or a table entry's value must have its key's type, as p4c checks
        (a literal without a width takes the key's; a select, not an entry, also lets an enum
        key match its underlying bits)."""
        if key_type is None or key_compatible(key_type, value.type, in_select):
            return
        if isinstance(key_type, NEW_TYPES):
            raise self.checker.fail(value, f"a key of type {key_type.describe()} needs a value of that "
                                   f"type, not {value.type.describe()} (cast it: "
                                   f"({key_type.describe()})...)")
        raise self.checker.fail(value, f"a value of type {value.type.describe()} cannot match a key of "
                               f"type {key_type.describe()} (as p4c refuses it)")
