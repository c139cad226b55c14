"""Helpers to write BMv2 JSON by hand in the exact shape p4c's BMv2 back end produces.

The fixtures in this folder are hand-written BMv2 programs (not compiler output): each
`programs.py` function describes one with these helpers, and `make_fixtures.py` writes the
`NAME/NAME.json` files that are committed. The shapes follow BMv2's JSON_format.md and what p4c
emits for v1model (standard_metadata layout, error list, dummy `tbl_*` tables for direct action
calls, double-wrapped expressions in primitive arguments).
"""

from __future__ import annotations

STANDARD_METADATA = [
    ("ingress_port", 9), ("egress_spec", 9), ("egress_port", 9), ("instance_type", 32),
    ("packet_length", 32), ("enq_timestamp", 32), ("enq_qdepth", 19), ("deq_timedelta", 32),
    ("deq_qdepth", 19), ("ingress_global_timestamp", 48), ("egress_global_timestamp", 48),
    ("mcast_grp", 16), ("egress_rid", 16), ("checksum_error", 1), ("parser_error", 32),
    ("priority", 3), ("_padding", 3),
]
CORE_ERRORS = ["NoError", "PacketTooShort", "NoMatch", "StackOutOfBounds", "HeaderTooShort",
               "ParserTimeout", "ParserInvalidArgument"]


# --- type-value objects ---------------------------------------------------------------------

def field(header: str, name: str) -> dict:
    return {"type": "field", "value": [header, name]}


def meta(name: str) -> dict:
    return field("standard_metadata", name)


def hexstr(value: int, width: int) -> dict:
    digits = 2 * max(1, (width + 7) // 8)      # p4c pads constants to whole bytes
    return {"type": "hexstr", "value": f"0x{value:0{digits}x}"}


def param(index: int) -> dict:
    return {"type": "runtime_data", "value": index}


def header_ref(name: str) -> dict:
    return {"type": "header", "value": name}


def expr(op: str, left: dict | None, right: dict) -> dict:
    """An expression operand (what `left`/`right`/conditions hold)."""
    return {"type": "expression", "value": {"op": op, "left": left, "right": right}}


def arg(e: dict) -> dict:
    """An expression used as a primitive argument: p4c wraps it once more."""
    return {"type": "expression", "value": e}


def valid(header: str) -> dict:
    return expr("d2b", None, field(header, "$valid$"))


def cast(e: dict, width: int) -> dict:
    """`(bit<width>) e` as p4c writes it: a mask with all ones."""
    return expr("&", e, hexstr((1 << width) - 1, width))


# --- primitives ---------------------------------------------------------------------------

def prim(op: str, *parameters: dict) -> dict:
    return {"op": op, "parameters": list(parameters)}


def assign(dst: dict, src: dict) -> dict:
    return prim("assign", dst, arg(src) if src["type"] == "expression" else src)


def mark_to_drop() -> dict:
    return prim("mark_to_drop", header_ref("standard_metadata"))


def set_port(port: int) -> dict:
    return assign(meta("egress_spec"), hexstr(port, 9))


class Program:
    """Accumulates the top-level sections of a BMv2 JSON document."""

    def __init__(self, name: str):
        self.name = name
        self.scalars: list[list] = []
        self.header_types = [
            {"name": "scalars_0", "id": 0, "fields": self.scalars},
            {"name": "standard_metadata", "id": 1,
             "fields": [[n, w, False] for n, w in STANDARD_METADATA]},
        ]
        self.headers = [
            {"name": "scalars", "id": 0, "header_type": "scalars_0", "metadata": True,
             "pi_omit": True},
            {"name": "standard_metadata", "id": 1, "header_type": "standard_metadata",
             "metadata": True, "pi_omit": True},
        ]
        self.header_stacks: list[dict] = []
        self.errors = [[n, i] for i, n in enumerate(CORE_ERRORS)]
        self.field_lists: list[dict] = []
        self.parse_states: list[dict] = []
        self.parse_vsets: list[dict] = []
        self.deparse_order: list[str] = []
        self.actions: list[dict] = []
        self.pipelines = {p: {"tables": [], "conditionals": [], "action_profiles": [],
                              "init_table": None} for p in ("ingress", "egress")}
        self.calculations: list[dict] = []
        self.checksums: list[dict] = []
        self.counter_arrays: list[dict] = []
        self.meter_arrays: list[dict] = []
        self.register_arrays: list[dict] = []
        self._table_ids = 0
        self._cond_ids = 0

    # --- data ---
    def scalar(self, name: str, width: int) -> dict:
        self.scalars.append([name, width, False])
        return field("scalars", name)

    def header_type(self, name: str, fields: list[tuple], max_length: int | None = None) -> None:
        entry = {"name": name, "id": len(self.header_types),
                 "fields": [[n, w] if w == "*" else [n, w, False] for n, w in fields]}
        if max_length is not None:
            entry["max_length"] = max_length
        self.header_types.append(entry)

    def header(self, name: str, header_type: str) -> int:
        hid = len(self.headers)
        self.headers.append({"name": name, "id": hid, "header_type": header_type,
                             "metadata": False, "pi_omit": True})
        return hid

    def stack(self, name: str, header_type: str, size: int) -> None:
        ids = [self.header(f"{name}[{i}]", header_type) for i in range(size)]
        self.header_stacks.append({"name": name, "id": len(self.header_stacks),
                                   "header_type": header_type, "size": size, "header_ids": ids})

    def error(self, name: str) -> int:
        self.errors.append([name, len(self.errors)])
        return len(self.errors) - 1

    def field_list(self, fields: list[dict]) -> int:
        fid = len(self.field_lists) + 1
        self.field_lists.append({"id": fid, "name": f"field_list{fid}",
                                 "elements": [{"type": "field", "value": f["value"]}
                                              for f in fields]})
        return fid

    # --- parser and deparser ---
    def state(self, name: str, ops: list[dict], key: list[dict] | None = None,
              transitions: list[tuple] | None = None) -> None:
        """transitions: (value_hex|None|("vset", name), mask_hex|None, next_state|None)."""
        out = []
        for value, mask, nxt in transitions or [(None, None, None)]:
            if value is None:
                out.append({"type": "default", "value": None, "mask": None, "next_state": nxt})
            elif isinstance(value, tuple):
                out.append({"type": "parse_vset", "value": value[1], "mask": mask,
                            "next_state": nxt})
            else:
                out.append({"type": "hexstr", "value": value, "mask": mask, "next_state": nxt})
        self.parse_states.append({"name": name, "id": len(self.parse_states), "parser_ops": ops,
                                  "transitions": out, "transition_key": key or []})

    def deparse(self, *headers: str) -> None:
        self.deparse_order.extend(headers)

    # --- actions, tables, conditionals ---
    def action(self, name: str, primitives: list[dict], params: list[tuple] = ()) -> int:
        aid = len(self.actions)
        self.actions.append({"name": name, "id": aid,
                             "runtime_data": [{"name": n, "bitwidth": w} for n, w in params],
                             "primitives": primitives})
        return aid

    def _action_id(self, name: str) -> int:
        return next(a["id"] for a in self.actions if a["name"] == name)

    def table(self, pipeline: str, name: str, keys: list[tuple], actions: list[str],
              default: str, default_data: tuple = (), next_tables: dict | None = None,
              base_default_next: str | None = None, match_type: str | None = None,
              entries: list[dict] | None = None, const_default: bool = False,
              table_type: str = "simple", action_profile: str | None = None,
              with_counters: bool = False, direct_meters: str | None = None,
              max_size: int = 1024) -> None:
        """keys: (name, header, field, match_type[, mask_hex])."""
        key_json = [{"match_type": k[3], "name": k[0], "target": [k[1], k[2]],
                     "mask": k[4] if len(k) > 4 else None} for k in keys]
        if match_type is None:
            kinds = {k[3] for k in keys}
            match_type = next((m for m in ("range", "ternary", "lpm") if m in kinds), "exact")
            if kinds == {"optional"} or ("optional" in kinds and match_type == "exact"):
                match_type = "ternary"
        action_ids = [self._action_id(a) for a in actions]
        table = {"name": name, "id": self._table_ids, "key": key_json, "match_type": match_type,
                 "type": table_type, "max_size": max_size, "with_counters": with_counters,
                 "support_timeout": False, "direct_meters": direct_meters,
                 "action_ids": action_ids, "actions": list(actions),
                 "base_default_next": base_default_next,
                 "next_tables": next_tables if next_tables is not None
                 else {a: base_default_next for a in actions},
                 "default_entry": {"action_id": self._action_id(default),
                                   "action_const": const_default,
                                   "action_data": [f"0x{v:x}" for v in default_data],
                                   "action_entry_const": const_default}}
        if action_profile is not None:
            table["action_profile"] = action_profile
            del table["default_entry"]
        if entries is not None:
            table["entries"] = entries
        self._table_ids += 1
        self._add_node(pipeline, "tables", table)

    def call(self, pipeline: str, action: str, next_node: str | None) -> str:
        """A direct action call in a control: p4c's dummy table with a const default action."""
        name = f"tbl_{action.split('.')[-1]}"
        self.table(pipeline, name, [], [action], action, base_default_next=next_node,
                   const_default=True)
        return name

    def conditional(self, pipeline: str, name: str, expression: dict, true_next: str | None,
                    false_next: str | None) -> None:
        node = {"name": name, "id": self._cond_ids, "expression": expression,
                "true_next": true_next, "false_next": false_next}
        self._cond_ids += 1
        self._add_node(pipeline, "conditionals", node)

    def _add_node(self, pipeline: str, kind: str, node: dict) -> None:
        pipe = self.pipelines[pipeline]
        pipe[kind].append(node)

    def start(self, pipeline: str, node: str | None) -> None:
        self.pipelines[pipeline]["init_table"] = node

    def to_json(self) -> dict:
        pipelines = []
        for pid, pname in enumerate(("ingress", "egress")):
            p = self.pipelines[pname]
            pipelines.append({"name": pname, "id": pid, "init_table": p["init_table"],
                              "tables": p["tables"], "action_profiles": p["action_profiles"],
                              "conditionals": p["conditionals"]})
        return {
            "header_types": self.header_types, "headers": self.headers,
            "header_stacks": self.header_stacks, "header_union_types": [],
            "header_unions": [], "header_union_stacks": [], "field_lists": self.field_lists,
            "errors": self.errors, "enums": [],
            "parsers": [{"name": "parser", "id": 0, "init_state": "start",
                         "parse_states": self.parse_states}],
            "parse_vsets": self.parse_vsets,
            "deparsers": [{"name": "deparser", "id": 0, "order": self.deparse_order,
                           "primitives": []}],
            "meter_arrays": self.meter_arrays, "counter_arrays": self.counter_arrays,
            "register_arrays": self.register_arrays, "calculations": self.calculations,
            "learn_lists": [], "actions": self.actions, "pipelines": pipelines,
            "checksums": self.checksums, "force_arith": [], "extern_instances": [],
            "field_aliases": [
                ["queueing_metadata.enq_timestamp", ["standard_metadata", "enq_timestamp"]],
                ["queueing_metadata.enq_qdepth", ["standard_metadata", "enq_qdepth"]],
                ["queueing_metadata.deq_timedelta", ["standard_metadata", "deq_timedelta"]],
                ["queueing_metadata.deq_qdepth", ["standard_metadata", "deq_qdepth"]],
                ["intrinsic_metadata.ingress_global_timestamp",
                 ["standard_metadata", "ingress_global_timestamp"]],
                ["intrinsic_metadata.egress_global_timestamp",
                 ["standard_metadata", "egress_global_timestamp"]],
                ["intrinsic_metadata.mcast_grp", ["standard_metadata", "mcast_grp"]],
                ["intrinsic_metadata.egress_rid", ["standard_metadata", "egress_rid"]],
                ["intrinsic_metadata.priority", ["standard_metadata", "priority"]],
            ],
            "program": f"{self.name}.p4",
            "__meta__": {"version": [2, 23], "compiler": "hand-written (inaemu tests/bmv2)"},
        }
