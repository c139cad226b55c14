"""Lowering, part 6: P4 tables to BMv2 match-action tables.

Keys become field targets (with a static mask for `f & MASK` and low slices), match kinds map to
BMv2's, `default_action` and `const entries` are encoded with byte-padded hex strings, and the
table's implementation, direct counters and direct meters are bound here.
"""

from __future__ import annotations

from . import ast as A
from .constfold import fold
from .lower_expr import Unsupported, hexstr
from .lower_stmt import ExternRef
from .storage import FieldRef, HeaderInst
from .types import BOOL, bit_width

DEFAULT_TABLE_SIZE = 1024


def bmv2_match_kind(kind: str) -> str:
    """BMv2 has no `optional` match: p4c writes it as `ternary` (P4Info keeps OPTIONAL)."""
    return "ternary" if kind == "optional" else kind


class TableBuilder:
    def __init__(self, ctx, control):
        self.ctx = ctx
        self.control = control

    def key_elements(self, ref):
        keys = ref.decl.props.get("key")
        return [k for k in (keys.value if keys else [])]

    def key_target(self, k: A.KeyElement, env):
        """(target, mask, width) of a key element, or None if it needs a temporary."""
        temp = getattr(self, "key_temps", {}).get(k)
        if temp is not None:
            return [temp.header, temp.name], None, bit_width(k.expr.type)
        e = k.expr
        x = self.ctx.exprs
        if isinstance(e, A.Call) and isinstance(e.func, A.Member) and e.func.name == "isValid":
            target = x.resolve(e.func.expr, env)
            if not isinstance(target, HeaderInst):
                raise Unsupported(e, "isValid() key needs a header")
            return [target.name, "$valid$"], None, 1
        mask = None
        if isinstance(e, A.Binary) and e.op == "&" and fold(e.right) is not None:
            mask = fold(e.right)
            e = e.left
        # a slice is computed into a temporary (as p4c does): a masked key would be as wide as
        # the whole field in BMv2, while the control plane gives the slice's width
        target = x.resolve(e, env) if isinstance(e, (A.Name, A.Member, A.Index)) else None
        if not isinstance(target, FieldRef) or type(target) is not FieldRef:
            return None
        return [target.header, target.name], mask, bit_width(target.type)

    def key_temporaries(self, ref, env) -> list:
        """Keys BMv2 cannot match directly (`f[15:8]`, `a + b`) are computed into temporaries
        just before the table, as p4c does; returns the assignments to make."""
        self.key_temps = {}
        assigns = []
        for k in self.key_elements(ref):
            if self.key_target(k, env) is None:
                tmp = self.ctx.layout.scalar("key", k.expr.type)
                assigns.append((tmp, k))
                self.key_temps[k] = tmp
        return assigns

    def build(self, ref, nexts: dict) -> dict:
        ctx, d, env = self.ctx, ref.decl, ref.env
        props = d.props
        keys, selector_inputs = [], []
        kinds = []
        for k in self.key_elements(ref):
            target, mask, width = self.key_target(k, env)
            if k.match_kind == "selector":
                selector_inputs.append({"type": "field", "value": target})
                continue
            kinds.append(k.match_kind)
            if mask is not None:
                mask = hexstr(mask & ((1 << width) - 1), width)
            keys.append({"match_type": bmv2_match_kind(k.match_kind), "name": ctx.key_name(k),
                         "target": target, "mask": mask})
        match_type = "exact"
        if "lpm" in kinds:
            match_type = "lpm"
        if "range" in kinds:
            match_type = "range"
        elif "ternary" in kinds or "optional" in kinds:
            match_type = "ternary"
        actions = []
        for act, aref in d.action_decls:
            bound = aref.name.args if isinstance(aref.name, A.Call) else None
            actions.append(ctx.action_for(act, env, bound_args=bound))
        default_prop = props.get("default_action")
        if default_prop is None:
            noaction = ctx.global_action("NoAction")
            if noaction is None:
                raise Unsupported(d, f"table '{d.name}' has no default_action and NoAction is "
                                     "not declared")
            d.implicit_noaction = noaction
            if noaction not in [a for a, _ in d.action_decls]:
                # BMv2 lists each action once (next_tables has one entry per action)
                actions.append(ctx.action_for(noaction, env))
        action_names = [n for _, n in actions]
        by_decl = {a: ids for (a, _), ids in zip(d.action_decls, actions)}
        next_tables = {}
        if "__HIT__" in nexts:
            next_tables = {"__HIT__": nexts["__HIT__"], "__MISS__": nexts["__MISS__"]}
            base_next = None
        else:
            for (act, _), (_, name) in zip(d.action_decls, actions):
                next_tables[name] = nexts.get(act, nexts["*"])
            for _, name in actions[len(d.action_decls):]:
                next_tables[name] = nexts["*"]
            base_next = nexts["*"]
        entries_prop = props.get("entries")
        size = getattr(d, "size_value", None)
        if size is None:
            size = len(entries_prop.value) if entries_prop else DEFAULT_TABLE_SIZE
        timeout = props.get("support_timeout")
        table = {"name": ref.name, "id": 0,
                 "source_info": ctx.source_info(d, fragment=d.name),
                 "key": keys, "match_type": match_type, "type": "simple", "max_size": size,
                 "with_counters": False,
                 "support_timeout": bool(timeout is not None and fold(timeout.value)),
                 "direct_meters": None,
                 "action_ids": [i for i, _ in actions], "actions": action_names,
                 "base_default_next": base_next, "next_tables": next_tables}
        self.implementation(table, ref, env, selector_inputs)
        self.direct_resources(table, d, env)
        if table["type"] == "simple":
            table["default_entry"] = self.default_entry(d, env, by_decl, actions)
        if entries_prop is not None:
            table["entries"] = self.entries(d, env, entries_prop, by_decl, kinds)
        ctx.built_tables.append((ref, table, list(zip([a for a, _ in d.action_decls], actions))))
        return table

    def implementation(self, table, ref, env, selector_inputs) -> None:
        prop = ref.decl.props.get("implementation")
        if prop is None:
            return
        e = prop.value
        decl = e.decl if isinstance(e, A.Name) else None
        inst = env.lookup(decl) if decl is not None else None
        constructed = getattr(e, "constructs", None)
        if inst is None and constructed is not None and constructed.name in (
                "action_profile", "action_selector"):
            # a profile instantiated in the property: P4Runtime needs a name for it, which
            # only the property's @name gives, used as written (as p4c does)
            named = A.name_annotation(prop.annotations)
            if named is None:
                # p4c's BMv2 JSON names it action_profile_<n> (a selector too), in the order of
                # the tables; only its P4Info, which has no name for it, is refused
                self.ctx.p4runtime_refusals.append(Unsupported(
                    e, f"table '{ref.name}' instantiates its implementation in the property "
                       "without a name, which P4Runtime cannot refer to (p4c refuses it too): "
                       "add @name(\"...\") to the property, or declare the instance"))
                name = self.ctx.anonymous_profile_name()
            else:
                name = named.lstrip(".")
            anon = A.InstanceDecl(e.loc, name, None, e.args,
                                  annotations=[a for a in prop.annotations if a.name != "name"])
            inst = ExternRef(name, constructed.name, anon)
            ref.decl.anonymous_profile = inst
        if inst is None:
            raise Unsupported(e, "implementation must name an action_profile or action_selector "
                                 "instance")
        profile = self.ctx.action_profile(inst, selector_inputs, self.control)
        table["type"] = "indirect_ws" if inst.kind == "action_selector" else "indirect"
        table["action_profile"] = profile

    def direct_resources(self, table, d, env) -> None:
        ext = self.ctx.externs
        prop = d.props.get("counters")
        if prop is not None:
            inst = env.lookup(prop.value.decl) if isinstance(prop.value, A.Name) else None
            if inst is None or inst.kind != "direct_counter":
                raise Unsupported(prop.value, "counters must name a direct_counter instance")
            ext.find(ext.counter_arrays, inst.name)["binding"] = table["name"]
            table["with_counters"] = True
            d.direct_counter = inst
        prop = d.props.get("meters")
        if prop is not None:
            inst = env.lookup(prop.value.decl) if isinstance(prop.value, A.Name) else None
            if inst is None or inst.kind != "direct_meter":
                raise Unsupported(prop.value, "meters must name a direct_meter instance")
            meter = ext.find(ext.meter_arrays, inst.name)
            meter["binding"] = table["name"]
            meter["size"] = table["max_size"]
            table["direct_meters"] = inst.name
            d.direct_meter = inst

    def default_entry(self, d, env, by_decl, actions) -> dict | None:
        prop = d.props.get("default_action")
        if prop is None:
            noaction = getattr(d, "implicit_noaction", None)
            action_id = by_decl[noaction][0] if noaction in by_decl else actions[-1][0]
            return {"action_id": action_id, "action_const": False, "action_data": [],
                    "action_entry_const": False}
        call = prop.value
        name = call.func if isinstance(call, A.Call) else call
        act = name.decl
        action_id = by_decl[act][0]
        args = call.args if isinstance(call, A.Call) else []
        params = [p for p in act.params if not p.direction]
        data_args = args[len(act.params) - len(params):] if len(args) == len(act.params) else args
        data = [self.ctx.action_data(p, a.value) for p, a in zip(params, data_args)]
        return {"action_id": action_id, "action_const": prop.const, "action_data": data,
                "action_entry_const": prop.const}

    def entries(self, d, env, prop, by_decl, kinds) -> list:
        out = []
        key_elems = [k for k in self.key_elements_of(d) if k.match_kind != "selector"]
        for entry, rank in zip(prop.value, d.entry_ranks):  # ranks: see priorities.py
            match_key = []
            for k, v in zip(key_elems, entry.keys):
                match_key.append(self.match_value(k, v))
            call = entry.action
            name = call.func if isinstance(call, A.Call) else call
            act = name.decl
            params = [p for p in act.params if not p.direction]
            args = call.args if isinstance(call, A.Call) else []
            if len(args) == len(act.params):   # the directional ones the actions list binds
                args = args[len(act.params) - len(params):]
            data = [self.ctx.action_data(p, a.value) for p, a in zip(params, args)]
            out.append({"source_info": self.ctx.source_info(entry, fragment=self.ctx.fragment(entry)),
                        "match_key": match_key,
                        "action_entry": {"action_id": by_decl[act][0], "action_data": data},
                        "priority": rank})
        return out

    @staticmethod
    def key_elements_of(d):
        keys = d.props.get("key")
        return keys.value if keys else []

    def match_value(self, k: A.KeyElement, v: A.Expr) -> dict:
        t = k.expr.type
        width = 1 if t == BOOL else bit_width(t)
        full = (1 << width) - 1
        kind = k.match_kind
        if isinstance(v, (A.DontCare, A.Default)):
            value, mask = 0, 0
        elif isinstance(v, A.Mask):
            value, mask = fold(v.value), fold(v.mask)
        elif isinstance(v, A.Range):
            if kind != "range":
                raise Unsupported(v, "a range needs a 'range' key")
            return {"match_type": "range", "start": hexstr(fold(v.low) & full, width),
                    "end": hexstr(fold(v.high) & full, width)}
        else:
            value, mask = fold(v), full
        if value is None or mask is None:
            raise Unsupported(v, "entry keys must be compile-time constants")
        value &= full
        mask &= full
        if kind == "exact":
            if mask != full:
                raise Unsupported(v, "an exact key needs an exact value")
            return {"match_type": "exact", "key": hexstr(value, width)}
        if kind == "lpm":
            plen = bin(mask).count("1")
            if mask != ((1 << plen) - 1) << (width - plen) if plen else mask != 0:
                raise Unsupported(v, "an lpm key needs a prefix mask")
            return {"match_type": "lpm", "key": hexstr(value & mask, width), "prefix_length": plen}
        if kind == "range":
            if mask == 0:
                return {"match_type": "range", "start": hexstr(0, width), "end": hexstr(full, width)}
            return {"match_type": "range", "start": hexstr(value, width), "end": hexstr(value, width)}
        if kind == "optional":
            if mask not in (0, full):
                raise Unsupported(v, "an optional key is either a value or _")
        return {"match_type": "ternary", "key": hexstr(value & mask, width),
                "mask": hexstr(mask, width)}
