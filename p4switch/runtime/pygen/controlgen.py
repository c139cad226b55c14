"""A pipeline (ingress or egress control) compiled into one Python function plus helpers.

The JSON control graph (tables, conditionals, action calls, linked by next pointers) is a DAG.
A node reached from exactly one place is inlined there; a node reached from several places
becomes its own function, called where needed, so code size stays linear. A table is: build the
packed key, one lookup, unpack `(action, params, entry)`, then the matching action's body inlined
(`if a == 0: ... elif a == 1: ...`), then the next node chosen by action or by hit/miss.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from ..config import Node
from ..phv.layout import EXIT
from ..state.tables import Table
from .exprgen import CodeScope, compile_expr, boolean
from .primgen import PrimitiveCompiler


MAX_INLINE_DEPTH = 24  # blocks; each level can add ~3 indents (dispatch, if, action code)
SMALL_NODE_LINES = 6   # a node used in several places but this short is copied, not called


@dataclass
class ActionDef:
    node: Node
    name: str
    action_id: int
    param_widths: list[int]


class ControlCompiler:
    def __init__(self, pipeline: Node, tables: dict[str, Table], actions: dict[int, ActionDef],
                 scope: CodeScope, traced: bool):
        self.pipeline = pipeline
        self.tables = tables
        self.actions = actions
        self.scope = scope
        self.traced = traced
        self.nodes: dict[str, tuple[str, Node]] = {}
        for kind, key in (("table", "tables"), ("conditional", "conditionals"),
                          ("action_call", "action_calls")):
            for node in pipeline.get(key).items():
                name = node["name"].str()
                if name in self.nodes:
                    raise node["name"].error(f"duplicate control node '{name}'")
                self.nodes[name] = (kind, node)
        self.functions: dict[str, str] = {}   # node name -> generated function name
        self.bodies: dict[str, list[str]] = {}   # node name -> its function's body
        self.sources: list[str] = []
        self.plen = scope.layout.ingress_length   # counters and meters count this length
        self._depth = 0  # blocks of nesting at the point being generated

    def compile(self, fn_name: str) -> str:
        init = self.pipeline.get("init_table").opt_str()
        self.refs = self._count_references(init)
        body = self._emit(init, self.pipeline.get("init_table"))
        self.sources.insert(0, "\n".join([f"def {fn_name}(f, v):"] + _indent(body)))
        return "\n\n".join(self.sources)

    # ---------------------------------------------------------------------- graph structure
    def _next_sites(self, name: str) -> list[str | None]:
        """Where control can go after node `name`, one item per emission site."""
        kind, node = self.nodes[name]
        if kind == "conditional":
            return [node.get("true_next").opt_str(), node.get("false_next").opt_str()]
        if kind == "action_call":
            return [node.get("next_node").opt_str()]
        nexts = self._table_nexts(node)
        if isinstance(nexts, tuple):
            return list(nexts)
        distinct = set(nexts)
        if len(distinct) <= 1:
            return list(distinct) or [node.get("base_default_next").opt_str()]
        return list(nexts) + [node.get("base_default_next").opt_str()]

    def _table_nexts(self, node: Node):
        """(hit_next, miss_next) for hit/miss tables, else the next node per table action."""
        nt_node = node.get("next_tables")
        if nt_node.value is not None and not isinstance(nt_node.value, dict):
            raise nt_node.error("must be an object")
        next_tables = {key: nt_node[key].opt_str() for key in (nt_node.value or {})}
        base = node.get("base_default_next").opt_str()
        if "__HIT__" in next_tables or "__MISS__" in next_tables:
            return (next_tables.get("__HIT__", base), next_tables.get("__MISS__", base))
        table = self.tables[node["name"].str()]
        return [next_tables.get(a.name, base) for a in table.actions]

    def _count_references(self, init: str | None) -> dict[str, int]:
        refs: dict[str, int] = {}
        seen: set[str] = set()
        todo = [init]
        if init is not None:
            refs[init] = 1
        while todo:
            name = todo.pop()
            if name is None or name in seen:
                continue
            if name not in self.nodes:
                raise self.pipeline.error(f"unknown control node '{name}'")
            seen.add(name)
            for nxt in self._next_sites(name):
                if nxt is not None:
                    refs[nxt] = refs.get(nxt, 0) + 1
                    todo.append(nxt)
        return refs

    def _emit(self, name: str | None, where: Node, nested: bool = False) -> list[str]:
        """Code that continues at node `name`: inlined, or a call to the node's function.

        `nested`: the code goes one block deeper. Python limits indentation to 100 levels, so
        past MAX_INLINE_DEPTH levels a node gets its own function even if used once."""
        if name is None:
            return ["return"]
        if name not in self.nodes:
            raise where.error(f"unknown control node '{name}'")
        depth = self._depth + nested
        if self.refs.get(name, 0) <= 1 and depth < MAX_INLINE_DEPTH:
            self._depth, outer = depth, self._depth
            try:
                return self._node(name)
            finally:
                self._depth = outer
        fn = self.functions.get(name)
        if fn is None:
            fn = f"n{len(self.functions)}_{re.sub(r'[^0-9A-Za-z_]', '_', name)}"
            self.functions[name] = fn
            self._depth, outer = 0, self._depth
            try:
                body = self._node(name)
            finally:
                self._depth = outer
            self.sources.append("\n".join([f"def {fn}(f, v):"] + _indent(body)))
            self.bodies[name] = body
        body = self.bodies[name]
        if len(body) <= SMALL_NODE_LINES and depth < MAX_INLINE_DEPTH:
            # a Python call costs as much as a few short lines; the site is a tail call, so
            # the copy may use the function's local names, and ends as the call would
            return body + ([] if body[-1].startswith("return") else ["return"])
        return [f"return {fn}(f, v)"]

    def _node(self, name: str) -> list[str]:
        kind, node = self.nodes[name]
        if kind == "conditional":
            return self._conditional(name, node)
        if kind == "action_call":
            return self._action_call(node)
        return self._table(name, node)

    # ---------------------------------------------------------------------------- node kinds
    def _conditional(self, name: str, node: Node) -> list[str]:
        cond = boolean(compile_expr(node["expression"], self.scope))
        lines = []
        if self.traced:
            lines += [f"c = bool({cond})", f"T.condition({name!r}, c)"]
            cond = "c"
        lines.append(f"if {cond}:")
        lines += _indent(self._emit(node.get("true_next").opt_str(), node, nested=True))
        lines.append("else:")
        lines += _indent(self._emit(node.get("false_next").opt_str(), node, nested=True))
        return lines

    def _action_call(self, node: Node) -> list[str]:
        action = self.actions.get(node["action_id"].int())
        if action is None:
            raise node["action_id"].error(f"unknown action id {node['action_id'].int()}")
        lines = ["p = ()"] + self._action_body(action)
        return lines + self._emit(node.get("next_node").opt_str(), node)

    def _action_body(self, action: ActionDef) -> list[str]:
        prims = PrimitiveCompiler(self.scope.for_action(action.param_widths), self.traced)
        body, has_exit = prims.compile_body(action.node.get("primitives").items())
        if self.traced:
            body.insert(0, f"T.action({action.name!r}, p)")
        if has_exit:
            body += [f"if f[{EXIT}]:", "    return"]
        return body or ["pass"]

    def _key_code(self, table: Table, node: Node) -> str:
        parts = []
        for kf, source, mask in key_parts(table, node, self.scope.layout):
            if kf.match_type == "valid":
                code = f"v[{source.index}]"
            else:
                ref = source
                code = f"v[{ref.header.index}]" if ref.is_valid_bit else f"f[{ref.slot}]"
                if ref.signed:
                    code = f"({code} & {(1 << kf.width) - 1})"
                if not ref.is_valid_bit and not ref.header.metadata:
                    # BMv2 builds the lookup key with 0 for a field of an invalid header,
                    # whatever the field holds
                    code = f"({code} if v[{ref.header.index}] else 0)"
            if mask is not None:
                code = f"({code} & {mask})"
            parts.append(f"({code} << {kf.shift})" if kf.shift else code)
        return " | ".join(parts)

    def _table(self, name: str, node: Node) -> list[str]:
        table = self.tables[name]
        bind = self.scope.bind
        default = bind("dflt", table.default)
        lines = []
        nexts = self._table_nexts(node)
        hit_miss = isinstance(nexts, tuple)
        if table.kind == "keyless" and self._fixed_default(table) and not self.traced:
            index, params = table.initial_default
            body = self._action_body(self.actions[table.actions[index].action_id])
            lines = ([f"p = {params!r}"] if params else []) + [b for b in body if b != "pass"]
            return lines + self._emit(self._fixed_default_next(table, nexts), node)
        if self._only_hit_matters(table, nexts):
            # no action does anything and nothing counts: the lookup only picks hit or miss
            # (and not even that when both go on to the same node)
            hit_next, miss_next = nexts if hit_miss else (nexts[0], nexts[0]) if nexts \
                else (node.get("base_default_next").opt_str(),) * 2
            if hit_next == miss_next:
                return self._emit(hit_next, node)
            lookup = self._lookup(table, self._key_code(table, node))
            return [f"if {lookup} is not None:"] + \
                _indent(self._emit(hit_next, node, nested=True)) + \
                ["else:"] + _indent(self._emit(miss_next, node, nested=True))
        if table.kind == "keyless":
            lines.append(f"a, p, e = {default}[0]")
            if hit_miss or self.traced:
                lines.append("hit = False")
        else:
            key = self._key_code(table, node)
            if self.traced:
                lines.append(f"k = {key}")
                key = "k"
            lines.append(f"r = {self._lookup(table, key)}")
            lines += ["if r is None:", f"    a, p, e = {default}[0]"]
            if hit_miss or self.traced:
                lines += ["    hit = False", "else:", "    hit = True"]
            else:
                lines.append("else:")
            if table.profile is not None:
                lines.append(f"    a, p, e = {bind('prof', table.profile)}.resolve("
                             f"{bind('tbl', table)}, r, f, v)")
            else:
                lines.append("    a, p, e = r")
        if self.traced:
            key_text = "''" if table.kind == "keyless" else f"{bind('tbl', table)}.describe_key(k)"
            lines.append(f"T.table({name!r}, hit, e, {bind('tbl', table)}.action_name(a), p, "
                         f"{key_text})")
        if table.with_counters:
            lines += ["if e is not None:", "    c = e.counter", "    c[0] += 1",
                      f"    c[1] += f[{self.plen}]"]
        if table.support_timeout:
            lines += ["if e is not None:", "    e.last_hit = _now()"]
        meters = table.direct_meters
        if meters is not None and meters.result_slot is not None:
            units = "1" if meters.unit == "packets" else f"f[{self.plen}]"
            lines += ["if e is not None:",
                      f"    f[{meters.result_slot}] = e.meter.execute({units}, _now_us())"]
        lines += self._dispatch(table, node, nexts)
        return lines

    def _lookup(self, table: Table, key: str) -> str:
        bind = self.scope.bind
        if table.kind == "exact":
            return f"{bind('exact', table.exact)}.get({key})"
        if table.kind == "lpm":
            return f"{bind('tbl', table)}.lookup_lpm({key})"
        return f"{bind('tbl', table)}.lookup_generic({key})"

    def _only_hit_matters(self, table: Table, nexts) -> bool:
        """A keyed table none of whose actions does anything, with no counters, meters or
        profile, whose next node does not depend on the action: only hit/miss can matter."""
        if self.traced or table.kind == "keyless" or table.profile is not None or \
                table.with_counters or table.direct_meters is not None or \
                table.support_timeout:
            return False
        if not isinstance(nexts, tuple) and len(set(nexts)) > 1:
            return False
        return all(self._action_body(self.actions[spec.action_id]) == ["pass"]
                   for spec in table.actions)

    @staticmethod
    def _fixed_default(table: Table) -> bool:
        """A compiler-made table whose one action and its data can never change."""
        return (table.initial_default is not None and table.default_const
                and table.default_entry_const)

    @staticmethod
    def _fixed_default_next(table: Table, nexts) -> str | None:
        """The node after such a keyless table: its miss's (a keyless table never hits), or
        its action's."""
        return nexts[1] if isinstance(nexts, tuple) else nexts[table.initial_default[0]]

    def _dispatch(self, table: Table, node: Node, nexts) -> list[str]:
        per_action_next = not isinstance(nexts, tuple) and len(set(nexts)) > 1
        lines = []
        always_set = table.initial_default is not None or table.kind == "keyless"
        for i, spec in enumerate(table.actions):
            body = self._action_body(self.actions[spec.action_id])
            if per_action_next:
                body = [b for b in body if b != "pass"] + self._emit(nexts[i], node,
                                                                      nested=True)
            if len(table.actions) == 1 and always_set and not per_action_next:
                lines += body
            else:
                lines.append(f"{'if' if i == 0 else 'elif'} a == {i}:")
                lines += _indent(body)
        if per_action_next:
            base = node.get("base_default_next").opt_str()
            lines.append("else:" if lines else "if True:")
            lines += _indent(self._emit(base, node, nested=True))
            return lines
        if isinstance(nexts, tuple):
            hit_next, miss_next = nexts
            if hit_next == miss_next:
                return lines + self._emit(hit_next, node)
            return lines + ["if hit:"] + _indent(self._emit(hit_next, node, nested=True)) + \
                ["else:"] + _indent(self._emit(miss_next, node, nested=True))
        target = nexts[0] if nexts else node.get("base_default_next").opt_str()
        return lines + self._emit(target, node)


def key_parts(table: Table, node: Node, layout):
    """Per element of a table's key: (its KeyField, what it reads: the HeaderInstance of a
    `valid` match, else the FieldRef, its static mask or None). The packed key is these
    elements, first most significant, each shifted by `KeyField.shift`."""
    for i, knode in enumerate(node.get("key").items()):
        kf = table.key_fields[i]
        target = knode["target"]
        if kf.match_type == "valid":
            source = layout.header(target.str(), target)
        else:
            source = layout.field(target[0].str(), target[1].str(), target)
        mask = knode["mask"].hexstr() & ((1 << kf.width) - 1) if knode.has("mask") else None
        yield kf, source, mask


def _indent(lines: list[str]) -> list[str]:
    return ["    " + line for line in lines] or ["    pass"]
