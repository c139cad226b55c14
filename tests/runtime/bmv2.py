"""A small builder for BMv2 JSON programs, so runtime tests can state a program in a few lines.

Only what the tests need: header types and instances, parser states, actions, tables,
conditionals, externs, calculations and checksums in one ingress and one egress pipeline.
Operands are written with the helpers `fld`, `const`, `param`, `hdr`, `op`, `valid`.
"""

from __future__ import annotations

import copy

STANDARD_METADATA = [
    ["ingress_port", 9, False], ["egress_spec", 9, False], ["egress_port", 9, False],
    ["instance_type", 32, False], ["packet_length", 32, False], ["enq_timestamp", 32, False],
    ["enq_qdepth", 19, False], ["deq_timedelta", 32, False], ["deq_qdepth", 19, False],
    ["ingress_global_timestamp", 48, False], ["egress_global_timestamp", 48, False],
    ["mcast_grp", 16, False], ["egress_rid", 16, False], ["checksum_error", 1, False],
    ["parser_error", 32, False], ["priority", 3, False], ["_padding", 3, False],
]
ERRORS = [["NoError", 0], ["PacketTooShort", 1], ["NoMatch", 2], ["StackOutOfBounds", 3],
          ["HeaderTooShort", 4], ["ParserTimeout", 5], ["ParserInvalidArgument", 6]]


def fld(header: str, field: str) -> dict:
    return {"type": "field", "value": [header, field]}


def const(value: int) -> dict:
    return {"type": "hexstr", "value": hex(value) if value >= 0 else "-" + hex(-value)}


def param(index: int) -> dict:
    return {"type": "runtime_data", "value": index}


def hdr(name: str) -> dict:
    return {"type": "header", "value": name}


def op(name: str, left, right, cond=None) -> dict:
    value = {"op": name, "left": left, "right": right}
    if cond is not None:
        value["cond"] = cond
    return {"type": "expression", "value": value}


def valid(header: str) -> dict:
    return op("d2b", None, fld(header, "$valid$"))


def prim(name: str, *params) -> dict:
    return {"op": name, "parameters": list(params)}


def assign(target: dict, value: dict) -> dict:
    return prim("assign", target, value)


def std(field: str) -> dict:
    return fld("standard_metadata", field)


class Bmv2Program:
    def __init__(self) -> None:
        self.doc = {
            "header_types": [{"name": "scalars_0", "id": 0, "fields": []},
                             {"name": "standard_metadata", "id": 1,
                              "fields": copy.deepcopy(STANDARD_METADATA)}],
            "headers": [{"name": "scalars", "id": 0, "header_type": "scalars_0",
                         "metadata": True},
                        {"name": "standard_metadata", "id": 1,
                         "header_type": "standard_metadata", "metadata": True}],
            "header_stacks": [], "header_union_types": [], "header_unions": [],
            "header_union_stacks": [], "field_lists": [], "errors": copy.deepcopy(ERRORS),
            "enums": [], "parsers": [{"name": "parser", "id": 0, "init_state": "start",
                                      "parse_states": []}],
            "parse_vsets": [], "deparsers": [{"name": "deparser", "id": 0, "order": []}],
            "meter_arrays": [], "counter_arrays": [], "register_arrays": [],
            "calculations": [], "learn_lists": [], "actions": [],
            "pipelines": [{"name": "ingress", "id": 0, "init_table": None, "tables": [],
                           "action_profiles": [], "conditionals": []},
                          {"name": "egress", "id": 1, "init_table": None, "tables": [],
                           "action_profiles": [], "conditionals": []}],
            "checksums": [], "force_arith": [], "extern_instances": [], "field_aliases": [],
            "__meta__": {"version": [2, 23], "compiler": "tests"},
        }
        self._table_id = 0

    # ------------------------------------------------------------------------- headers
    def scalar(self, name: str, width: int, signed: bool = False) -> dict:
        self.doc["header_types"][0]["fields"].append([name, width, signed])
        return fld("scalars", name)

    def header_type(self, name: str, fields, **extra) -> str:
        fields = [list(f) if len(f) == 3 else [f[0], f[1], False] for f in fields]
        self.doc["header_types"].append({"name": name, "id": len(self.doc["header_types"]),
                                         "fields": fields, **extra})
        return name

    def header(self, name: str, type_name: str, metadata: bool = False, emit: bool = True) -> int:
        hid = len(self.doc["headers"])
        self.doc["headers"].append({"name": name, "id": hid, "header_type": type_name,
                                    "metadata": metadata})
        if emit and not metadata:
            self.doc["deparsers"][0]["order"].append(name)
        return hid

    def stack(self, name: str, type_name: str, size: int) -> None:
        ids = [self.header(f"{name}[{i}]", type_name) for i in range(size)]
        self.doc["header_stacks"].append({"name": name, "id": len(self.doc["header_stacks"]),
                                          "header_type": type_name, "size": size,
                                          "header_ids": ids})

    def union(self, name: str, members: dict[str, str]) -> None:
        ids = [self.header(f"{name}.{m}", t) for m, t in members.items()]
        self.doc["header_unions"].append({"name": name, "id": len(self.doc["header_unions"]),
                                          "union_type": name + "_t", "header_ids": ids})

    def union_stack(self, name: str, members: dict[str, str], size: int) -> None:
        """Unions `name[i]` with member headers `name[i].member`, in a header union stack."""
        ids = []
        for i in range(size):
            self.union(f"{name}[{i}]", members)
            ids.append(len(self.doc["header_unions"]) - 1)
        self.doc["header_union_stacks"].append({
            "name": name, "id": len(self.doc["header_union_stacks"]),
            "union_type": name + "_t", "header_union_ids": ids})

    # -------------------------------------------------------------------------- parser
    def state(self, name: str, ops=(), key=(), transitions=None) -> None:
        """`transitions`: [(value, mask, next)] plus a final (None, None, next) default."""
        if transitions is None:
            transitions = [(None, None, None)]
        out = []
        for value, mask, nxt in transitions:
            if value is None:
                out.append({"type": "default", "value": None, "mask": None, "next_state": nxt})
            elif isinstance(value, str):
                out.append({"type": "parse_vset", "value": value,
                            "mask": None if mask is None else hex(mask), "next_state": nxt})
            else:
                out.append({"type": "hexstr", "value": hex(value),
                            "mask": None if mask is None else hex(mask), "next_state": nxt})
        self.doc["parsers"][0]["parse_states"].append({
            "name": name, "id": len(self.doc["parsers"][0]["parse_states"]),
            "parser_ops": list(ops), "transition_key": list(key), "transitions": out})

    @staticmethod
    def extract(header: str) -> dict:
        return {"op": "extract", "parameters": [{"type": "regular", "value": header}]}

    # ---------------------------------------------------------------- actions and tables
    def action(self, name: str, primitives=(), params=()) -> int:
        aid = len(self.doc["actions"])
        self.doc["actions"].append({"name": name, "id": aid,
                                    "runtime_data": [{"name": n, "bitwidth": w}
                                                     for n, w in params],
                                    "primitives": list(primitives)})
        return aid

    def _pipeline(self, name: str) -> dict:
        return next(p for p in self.doc["pipelines"] if p["name"] == name)

    def table(self, name: str, keys=(), actions=(), default=None, next_tables=None,
              pipeline: str = "ingress", entries=None, max_size: int = 1024, **extra) -> dict:
        """`keys`: [(match_type, target)] with target [header, field] (or a header name)."""
        names = [self.doc["actions"][a]["name"] for a in actions]
        kinds = [k[0] for k in keys]
        match_type = ("range" if "range" in kinds else "ternary" if "ternary" in kinds
                      else "lpm" if "lpm" in kinds else "exact")
        table = {
            "name": name, "id": self._table_id, "match_type": match_type, "type": "simple",
            "key": [{"match_type": k[0], "target": k[1], "mask": k[2] if len(k) > 2 else None}
                    for k in keys],
            "max_size": max_size, "with_counters": False, "support_timeout": False,
            "direct_meters": None, "action_ids": list(actions), "actions": names,
            "base_default_next": None,
            "next_tables": next_tables if next_tables is not None else {n: None for n in names},
            **extra,
        }
        if default is not None:
            aid, data = default if isinstance(default, tuple) else (default, [])
            table["default_entry"] = {"action_id": aid, "action_const": False,
                                      "action_data": [hex(d) for d in data],
                                      "action_entry_const": False}
        if entries is not None:
            table["entries"] = entries
        self._table_id += 1
        pipe = self._pipeline(pipeline)
        pipe["tables"].append(table)
        if pipe["init_table"] is None:
            pipe["init_table"] = name
        return table

    def run(self, name: str, aid: int, next_node=None, pipeline: str = "ingress") -> dict:
        """A keyless table that always runs action `aid` (p4c's way to call an action)."""
        table = self.table(name, actions=[aid], pipeline=pipeline)
        table["default_entry"] = {"action_id": aid, "action_const": True, "action_data": [],
                                  "action_entry_const": True}
        table["base_default_next"] = next_node
        table["next_tables"] = {self.doc["actions"][aid]["name"]: next_node}
        return table

    def conditional(self, name: str, expression: dict, true_next, false_next,
                    pipeline: str = "ingress") -> None:
        pipe = self._pipeline(pipeline)
        pipe["conditionals"].append({"name": name, "id": len(pipe["conditionals"]),
                                     "expression": expression, "true_next": true_next,
                                     "false_next": false_next})

    def start(self, node: str, pipeline: str = "ingress") -> None:
        self._pipeline(pipeline)["init_table"] = node

    # -------------------------------------------------------------------------- externs
    def register(self, name: str, size: int, width: int) -> dict:
        self.doc["register_arrays"].append({"name": name, "id": len(self.doc["register_arrays"]),
                                            "size": size, "bitwidth": width})
        return {"type": "register_array", "value": name}

    def counter(self, name: str, size: int = 0, direct_table: str | None = None) -> dict:
        item = {"name": name, "id": len(self.doc["counter_arrays"]),
                "is_direct": direct_table is not None}
        if direct_table:
            item["binding"] = direct_table
        else:
            item["size"] = size
        self.doc["counter_arrays"].append(item)
        return {"type": "counter_array", "value": name}

    def meter(self, name: str, size: int, unit: str = "packets", direct_table=None,
              result=None) -> dict:
        item = {"name": name, "id": len(self.doc["meter_arrays"]), "is_direct": bool(direct_table),
                "rate_count": 2, "type": unit, "size": size}
        if direct_table:
            item["binding"] = direct_table
            item["result_target"] = result
        self.doc["meter_arrays"].append(item)
        return {"type": "meter_array", "value": name}

    def calculation(self, name: str, algo: str, inputs) -> dict:
        self.doc["calculations"].append({"name": name, "id": len(self.doc["calculations"]),
                                         "algo": algo, "input": list(inputs)})
        return {"type": "calculation", "value": name}

    def checksum(self, name: str, target, calculation: str, verify=True, update=True,
                 if_cond=None) -> None:
        self.doc["checksums"].append({"name": name, "id": len(self.doc["checksums"]),
                                      "target": target, "type": "generic",
                                      "calculation": calculation, "verify": verify,
                                      "update": update, "if_cond": if_cond})

    def field_list(self, fid: int, fields) -> None:
        self.doc["field_lists"].append({"id": fid, "name": f"fl{fid}",
                                        "elements": [fld(h, f) for h, f in fields]})

    def parse_vset(self, name: str, width: int) -> None:
        self.doc["parse_vsets"].append({"name": name, "id": len(self.doc["parse_vsets"]),
                                        "compressed_bitwidth": width})

    def build(self) -> dict:
        return copy.deepcopy(self.doc)


def ethernet_program() -> Bmv2Program:
    """An Ethernet header `eth` (dst, src, type) extracted in state `start`, then accept."""
    prog = Bmv2Program()
    prog.header_type("ethernet_t", [("dst", 48), ("src", 48), ("type", 16)])
    prog.header("eth", "ethernet_t")
    return prog


def eth_frame(dst: int = 2, src: int = 1, ether_type: int = 0x0800, payload: bytes = b"") -> bytes:
    return dst.to_bytes(6, "big") + src.to_bytes(6, "big") + ether_type.to_bytes(2, "big") + \
        payload
