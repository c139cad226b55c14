"""Lowering, part 4: the v1model externs, as the primitives and objects simple_switch knows.

Stateful externs become `counter_arrays`/`meter_arrays`/`register_arrays`; hash and checksum
calls become `calculations`; clone/resubmit/recirculate data become `field_lists`; digests become
`learn_lists`. Method calls become primitives (`count`, `register_read`, `execute_meter`, ...).
"""

from __future__ import annotations

from . import ast as A
from .constfold import fold
from .lower_expr import Unsupported, const
from .storage import FieldRef, HeaderInst, StackStore, StructStore
from .types import EnumT, StackT, StructT, TupleT, TypeVarT, VarbitT, bit_width

CLONE_PRIMITIVES = {0: "clone_ingress_pkt_to_egress", 1: "clone_egress_pkt_to_egress"}


# v1model's deprecated calls that take their data directly, and what replaces each
DEPRECATED_WITH_DATA = {"clone3": "clone_preserving_field_list",
                        "resubmit": "resubmit_preserving_field_list",
                        "recirculate": "recirculate_preserving_field_list"}


class ExternLowering:
    def __init__(self, ctx):
        self.ctx = ctx
        self.counter_arrays: list = []
        self.meter_arrays: list = []
        self.register_arrays: list = []
        self.calculations: list = []
        self.field_lists: list = []
        self.learn_lists: list = []
        self.checksums: list = []
        self.annotated_lists: dict[int, list] = {}
        self.empty_list_id: int | None = None
        self.direct_meter_targets: dict = {}

    # ---- instances --------------------------------------------------------------------------
    def declare_instance(self, decl: A.InstanceDecl, json_name: str, kind: str) -> None:
        args = [a.value for a in decl.args]
        info = self.ctx.source_info(decl, fragment=decl.name)
        if kind == "counter":
            self.counter_arrays.append({"name": json_name, "id": 0, "source_info": info,
                                        "size": fold(args[0]), "is_direct": False})
        elif kind == "direct_counter":
            self.counter_arrays.append({"name": json_name, "id": 0, "is_direct": True,
                                        "binding": None, "source_info": info})
        elif kind in ("meter", "direct_meter"):
            mtype = fold(args[-1])
            entry = {"name": json_name, "id": 0, "source_info": info,
                     "is_direct": kind == "direct_meter", "rate_count": 2,
                     "type": "packets" if mtype == 0 else "bytes"}
            if kind == "meter":
                entry["size"] = fold(args[0])
            else:
                entry["size"] = 1024
                entry["binding"] = None
                entry["result_target"] = None
            self.meter_arrays.append(entry)
        elif kind == "register":
            width = bit_width(decl.type.type_args[0]) if decl.type.type_args else 32
            self.register_arrays.append({"name": json_name, "id": 0, "source_info": info,
                                         "size": fold(args[0]), "bitwidth": width})

    def find(self, arrays: list, name: str) -> dict | None:
        for a in arrays:
            if a["name"] == name:
                return a
        return None

    def finish(self) -> dict:
        # a direct counter or meter of no applied table is left out, as p4c leaves it (its
        # table removed, or none naming it): its JSON and P4Info entries would bind nothing
        for arrays in (self.counter_arrays, self.meter_arrays):
            arrays[:] = [a for a in arrays if not a.get("is_direct") or a.get("binding")]
        for arrays in (self.counter_arrays, self.meter_arrays, self.register_arrays):
            for i, a in enumerate(arrays):
                a["id"] = i
        return {"counter_arrays": self.counter_arrays, "meter_arrays": self.meter_arrays,
                "register_arrays": self.register_arrays, "calculations": self.calculations,
                "field_lists": self.field_lists, "learn_lists": self.learn_lists,
                "checksums": self.checksums}

    # ---- data lists -------------------------------------------------------------------------
    def flatten(self, e: A.Expr, env, lowerer, node, constants: bool = True) -> list:
        """The fields of a list/struct/header argument, as calculation or field-list inputs.
        BMv2 takes only fields there (and, in calculations, constants): any other value
        (action data, arithmetic, a run-time stack index, a constant in a field list) is
        computed into a temporary first, as p4c does."""
        if isinstance(e, (A.ListExpr,)):
            out = []
            for item in e.items:
                out += self.flatten(item, env, lowerer, node, constants)
            return out
        if isinstance(e, A.StructExpr):
            out = []
            for _, item in e.fields:
                out += self.flatten(item, env, lowerer, node, constants)
            return out
        v = fold(e)
        if v is not None and constants:
            # a negative constant as its two's complement: simple_switch cannot load a
            # calculation's input written with a minus sign (p4c writes one: F28)
            w = bit_width(e.type) or 32
            return [{"type": "hexstr", "value": const(v % (1 << w), w)["value"], "bitwidth": w}]
        s = lowerer.x.resolve(e, env) if isinstance(e, (A.Name, A.Member, A.Index)) else None
        return self._flatten_storage(s, e, env, lowerer, node)

    def _flatten_storage(self, s, e, env, lowerer, node) -> list:
        if type(s) is FieldRef:
            return [s.json()]
        if isinstance(s, HeaderInst):
            return [{"type": "field", "value": [s.name, n]} for n, _, _ in s.type.fields]
        if isinstance(s, StructStore):
            out = []
            for sub in s.fields.values():
                out += self._flatten_storage(sub, e, env, lowerer, node)
            return out
        if isinstance(s, StackStore):
            out = []
            for el in s.elements:
                out += self._flatten_storage(el, e, env, lowerer, node)
            return out
        if e is not None and not isinstance(s, (HeaderInst, StructStore, StackStore)):
            return [lowerer.value_in_field(e, env, node)]
        raise Unsupported(node, "unsupported data in a field list")

    def hash_inputs(self, data: A.Expr, env, lowerer, node) -> list:
        """A `hash`'s data as calculation inputs. The data is an `in` argument, a value: each
        scalar item of a list is read into a temporary first, as p4c reads every item. So a
        field counts with its value even while its header is invalid (read in place, BMv2's
        calculation leaves an invalid header's fields out and hashes fewer bits), and a
        negative constant is assigned (simple_switch refuses one as a calculation's input).
        A whole header item is left out while invalid, as p4c's copy of it is then."""
        if not isinstance(data, A.ListExpr):
            return self.flatten(data, env, lowerer, node)
        out = []
        for item in data.items:
            s = lowerer.x.resolve(item, env) if isinstance(item, (A.Name, A.Member, A.Index)) \
                else None
            if isinstance(s, (HeaderInst, StructStore, StackStore)) or \
                    isinstance(item.type, (StructT, TupleT, StackT)):
                out += self.flatten(item, env, lowerer, node)
                continue
            tmp = self.ctx.layout.temp(item.type)
            lowerer.emit("assign", [tmp.json(), lowerer.x.data(item, env)], node)
            out.append(tmp.json())
        return out

    def calculation(self, algo_expr: A.Expr, data: A.Expr, env, lowerer, node,
                    payload: bool = False, info=None, algo: str | None = None,
                    inputs: list | None = None) -> str:
        algo = algo or self.algorithm(algo_expr)
        if inputs is None:
            inputs = self.flatten(data, env, lowerer, node)
        if payload:
            inputs.append({"type": "payload", "value": None})
        name = "calc" if not self.calculations else f"calc_{len(self.calculations) - 1}"
        entry = {"name": name, "id": len(self.calculations)}
        if info:
            entry["source_info"] = info
        entry.update({"algo": algo, "input": inputs})
        self.calculations.append(entry)
        return name

    def algorithm(self, e: A.Expr) -> str:
        if isinstance(e, A.Member) and isinstance(e.type, EnumT) and e.type.name == "HashAlgorithm":
            return e.name
        raise Unsupported(e, "the hash algorithm must be a HashAlgorithm constant")

    def field_list_for_index(self, index: int) -> int:
        if index not in self.annotated_lists:
            self.annotated_lists[index] = []
            self.field_lists.append({"id": index, "name": f"field_list{index}",
                                     "elements": self.ctx.field_list_members(index)})
        return index

    def _free_id(self) -> int:
        """A field list id clashing neither with built lists nor with any @field_list index."""
        taken = [f["id"] for f in self.field_lists] + list(self.ctx.field_list_fields)
        return max(taken, default=0) + 1

    def empty_field_list(self) -> int:
        if self.empty_list_id is None:
            fid = self._free_id()
            self.field_lists.append({"id": fid, "name": "fl", "elements": []})
            self.empty_list_id = fid
        return self.empty_list_id

    # ---- extern function calls --------------------------------------------------------------
    def function_call(self, L, name: str, call: A.Call, env, node) -> None:
        args = [a.value for a in call.args]
        if name == "mark_to_drop":
            if args:
                target = L.x.resolve(args[0], env)
                if isinstance(target, StructStore):   # a copy (an inout parameter's): what
                    for field, value in (("egress_spec", 511), ("mcast_grp", 0)):   # BMv2 sets
                        if field in target.fields:
                            L.emit("assign", [target.fields[field].json(),
                                              const(value, bit_width(target.fields[field].type))],
                                   node)
                    return
                L.emit("mark_to_drop", [{"type": "header", "value": target.name}], node)
            else:
                L.emit("drop", [], node)
        elif name == "clone":
            kind = fold(args[0])
            L.emit(CLONE_PRIMITIVES[kind], [L.arg_value(args[1], env, node),
                                            const(self.empty_field_list(), 1)], node)
        elif name in DEPRECATED_WITH_DATA:   # p4c: "unknown extern function"
            raise Unsupported(node, f"'{name}' (deprecated in v1model.p4) is not implemented "
                                    "by p4c's BMv2 back end, which refuses it: use "
                                    f"'{DEPRECATED_WITH_DATA[name]}' with @field_list members")
        elif name == "clone_preserving_field_list":
            kind = fold(args[0])
            fid = self.field_list_for_index(fold(args[2]))
            L.emit(CLONE_PRIMITIVES[kind], [L.arg_value(args[1], env, node), const(fid, 1)], node)
        elif name in ("resubmit_preserving_field_list", "recirculate_preserving_field_list"):
            fid = self.field_list_for_index(fold(args[0]))
            L.emit(name.split("_")[0], [const(fid, 1)], node)
        elif name == "truncate":
            L.emit("truncate", [L.arg_value(args[0], env, node)], node)
        elif name == "random":
            dst, copy_back = L.out_field(args[0], env, node)
            L.emit("modify_field_rng_uniform", [dst, L.arg_value(args[1], env, node),
                                                L.arg_value(args[2], env, node)], node)
            copy_back()
        elif name == "hash":
            data_type = getattr(args[3], "type", None)
            if not isinstance(args[3], A.ListExpr) and not isinstance(data_type, (StructT, TupleT)):
                raise Unsupported(args[3], "hash(): the data must be a list { ... }, a struct or a "
                                           "header (p4c's v1model back end: expected a struct), "
                                           f"not {data_type.describe() if data_type else 'this'}")
            calc = self.calculation(args[1], args[3], env, L, node,
                                    inputs=self.hash_inputs(args[3], env, L, node))
            base, size = L.arg_value(args[2], env, node), L.arg_value(args[4], env, node)
            dst, copy_back = L.out_field(args[0], env, node)
            L.emit("modify_field_with_hash_based_offset",
                   [dst, base, {"type": "calculation", "value": calc}, size], node)
            copy_back()
        elif name == "digest":
            declared = getattr(call, "param_types", [None, None])[1]
            lid = self.learn_list(args[1], declared, env, L, node)
            L.emit("generate_digest", [L.arg_value(args[0], env, node), const(lid, 1)], node)
        elif name == "log_msg":
            text, params = self.log_msg_values(args, env, L, node)
            L.emit("log_msg", [{"type": "string", "value": text},
                               {"type": "parameters_vector", "value": params}], node)
        elif name in ("assert", "assume"):
            L.emit(name, [L.x.boolean(args[0], env)], node)
        elif name == "verify":
            raise Unsupported(node, "verify() can only be called in a parser")
        elif name in ("verify_checksum", "update_checksum", "verify_checksum_with_payload",
                      "update_checksum_with_payload"):
            self.checksum(name, args, env, L, node)
        else:
            raise Unsupported(node, f"extern function '{name}' is not supported by this back end")

    def checksum16_get(self, L, data: A.Expr, env, node, target) -> None:
        """`x = ck.get(data)` (the deprecated Checksum16): a csum16 hash into x."""
        calc = self.calculation(None, data, env, L, node, algo="csum16")
        L.emit("modify_field_with_hash_based_offset",
               [target.json(), const(0, 16), {"type": "calculation", "value": calc},
                const(1 << 16, 32)], node)

    @staticmethod
    def log_msg_values(args, env, L, node) -> tuple[str, list]:
        """log_msg's text and values as p4c's BMv2 back end makes them: a list's items (a
        header only as its sole item, its `{}` written `(f:{},...)`), or a bare header's or
        flat struct's fields (the text unchanged). p4c refuses the rest ("must be a list
        expression", or "cannot have type 'Unknown type'" for a struct in a list)."""
        if len(args) < 2:
            return args[0].value, []
        data = args[1]
        if not isinstance(data, A.ListExpr):
            store = L.x.resolve(data, env) if isinstance(data.type, StructT) else None
            if not isinstance(store, (HeaderInst, StructStore)):
                raise Unsupported(data, "log_msg's values must be a list expression "
                                        "({a, b}), a header or a struct, as p4c requires")
            if any(isinstance(ft, StructT) for _, ft, _ in data.type.fields):
                raise Unsupported(data, "log_msg of a struct holding a struct or header is "
                                        "refused by p4c: log its fields")
            return args[0].value, _log_fields(store)[1]
        shapes, params = [], []
        for x in data.items:
            if isinstance(x.type, StructT) and len(data.items) > 1:
                raise Unsupported(x, "log_msg takes a header in a list only as its sole item, "
                                     "and no struct (p4c refuses them: 'cannot have type "
                                     "Unknown type'): log their fields")
            if isinstance(x.type, StructT) and x.type.kind != "header":
                raise Unsupported(x, "a struct in log_msg's list is not supported by inaemu "
                                     "(p4c refuses a struct member; a whole struct parameter it "
                                     "logs under its own flattened field names): log its fields")
            store = L.x.resolve(x, env) if isinstance(x.type, StructT) else None
            if isinstance(store, HeaderInst):   # each field, as p4c
                shape, fields = _log_fields(store)
                params += fields
                shapes.append(shape)
                continue
            params.append(L.arg_value(x, env, node))
            shapes.append(None)
        return _log_format(args[0].value, shapes), params

    def learn_list(self, data: A.Expr, declared, env, L, node) -> int:
        """A learn list for one `digest` call: its data copied into temporaries where the call
        is (an `in` argument's value is taken at the call, and simple_switch samples a learn
        list's fields only after ingress), one list per call, as p4c makes them. The list is
        named as the P4Info digest it feeds: a struct's type name, else `digest_N` (N counting
        the calls whose data is no struct), so that a P4Runtime server finds the digest by the
        list's name (p4c names such a list after its tuple type, `tuple_0`, which no P4Info
        digest matches: simple_switch_grpc drops those digests). `declared`: the data
        parameter's type, the digest's type argument in it."""
        t = declared if declared is not None and not isinstance(declared, TypeVarT) \
            else data.type
        if isinstance(t, StructT) and t.kind == "struct":
            name = t.name
        else:
            name = f"digest_{sum(1 for _, dt, _ in self.ctx.digests if not _is_struct(dt))}"
        sources = self.flatten(data, env, L, node, constants=False)
        leaves = _leaf_types(t, node)
        if len(leaves) != len(sources):
            raise Unsupported(node, "digest data must be bits, bools, enums, or structs, "
                                    "headers and tuples of them")
        elements = []
        for source, leaf in zip(sources, leaves):
            tmp = self.ctx.layout.temp(leaf)
            L.emit("assign", [tmp.json(), source], node)
            elements.append(tmp.json())
        lid = len(self.learn_lists) + 1
        self.learn_lists.append({"id": lid, "name": name, "source_info": self.ctx.source_info(node),
                                 "elements": elements})
        if not any(known == name for known, _, _ in self.ctx.digests):
            self.ctx.digests.append((name, t, data))
        return lid

    def checksum(self, name: str, args, env, L, node) -> None:
        if not self.ctx.in_checksum_control:
            raise Unsupported(node, f"{name}() can only be called in the checksum controls")
        verify = name.startswith("verify")
        self._check_checksum_data(name, args[1], args[2], env, L)
        info = self.ctx.source_info(node, fragment=self.ctx.fragment(node, first_arg_only=True))
        calc = self.calculation(args[3], args[1], env, L, node, payload=name.endswith("payload"),
                                info=info)
        target = L.field_target(args[2], env)
        cond = fold(args[0])
        entry = {"name": "cksum" if not self.checksums else f"cksum_{len(self.checksums) - 1}",
                 "id": len(self.checksums), "source_info": info,
                 "target": [target.header, target.name], "type": "generic", "calculation": calc,
                 "verify": verify, "update": not verify,
                 "if_cond": None if cond is True else L.x.boolean(args[0], env)}
        self.checksums.append(entry)

    @staticmethod
    def _check_checksum_data(name: str, data: A.Expr, target: A.Expr, env, L) -> None:
        """Refuses what p4c's BMv2 back end refuses in a checksum's data list: an item computed
        from fields (an operator, a slice, a cast, a boolean), and in `update_checksum` an item
        that reads the field being updated (p4c then copies the list, and the copies are not
        checksum calls)."""
        if not isinstance(data, A.ListExpr):
            return
        updated = L.x.resolve(target, env) \
            if name == "update_checksum" and isinstance(target, (A.Member, A.Index)) else None
        items = list(data.items)
        while items:
            item = items.pop(0)
            if isinstance(item, A.ListExpr):      # (a nested list is flattened)
                items[:0] = item.items
                continue
            value = fold(item)
            if isinstance(value, bool) or \
                    value is None and not isinstance(item, (A.Name, A.Member, A.Index)):
                raise Unsupported(item, f"computations are not supported in {name}'s data "
                                        "(p4c's BMv2 back end refuses them): list fields and "
                                        "constants")
            if type(updated) is not FieldRef:
                continue
            for sub in A.walk(item):
                if isinstance(sub, (A.Member, A.Index)):
                    try:
                        read = L.x.resolve(sub, env)
                    except Unsupported:
                        continue
                    if type(read) is FieldRef and (read.header, read.name) == \
                            (updated.header, updated.name):
                        raise Unsupported(item, "update_checksum's data reads the field it "
                                                "updates; p4c's BMv2 back end refuses that "
                                                "('Only calls to update_checksum ... allowed'): "
                                                "leave the checksum field out of the list")

    # ---- extern method calls ----------------------------------------------------------------
    def method_call(self, L, inst, method: str, call: A.Call, env, node) -> None:
        args = [a.value for a in call.args]
        ref = {"type": f"{inst.kind}_array" if inst.kind in ("counter", "meter", "register")
               else "extern", "value": inst.name}
        if inst.kind == "counter" and method == "count":
            L.emit("count", [ref, L.arg_value(args[0], env, node)], node)
        elif inst.kind == "direct_counter" and method == "count":
            pass  # counted by the table on every hit
        elif inst.kind == "register" and method == "read":
            index = L.arg_value(args[1], env, node)
            dst, copy_back = L.out_field(args[0], env, node)
            L.emit("register_read", [dst, ref, index], node)
            copy_back()
        elif inst.kind == "register" and method == "write":
            L.emit("register_write", [ref, L.arg_value(args[0], env, node),
                                      L.arg_value(args[1], env, node)], node)
        elif inst.kind == "meter" and method == "execute_meter":
            index = L.arg_value(args[0], env, node)
            dst, copy_back = L.out_field(args[1], env, node)
            L.emit("execute_meter", [ref, index, dst], node)
            copy_back()
        elif inst.kind == "direct_meter" and method == "read":
            target = L.field_target(args[0], env)
            self.direct_meter_targets[inst.name] = [target.header, target.name]
        else:
            raise Unsupported(node, f"{inst.kind}.{method}() is not supported by this back end")


__all__ = ["ExternLowering"]


def _log_fields(store) -> tuple[str, list]:
    """A header's or struct's fields for log_msg, and the text that stands for its `{}`:
    `(dst:{},src:{})`, nested for a struct's structs, as p4c writes it."""
    parts, fields = [], []
    items = store.fields.items() if isinstance(store, StructStore) else \
        ((name, store.field(name)) for name, _, _ in store.type.fields)
    for name, sub in items:
        if isinstance(sub, (HeaderInst, StructStore)):
            shape, inner = _log_fields(sub)
            parts.append(f"{name}:{shape}")
            fields += inner
        else:
            parts.append(f"{name}:{{}}")
            fields.append(sub.json())
    return "(" + ",".join(parts) + ")", fields


def _log_format(text: str, shapes: list) -> str:
    """`text` with the k-th `{}` replaced by shapes[k] where that argument was a header or
    struct (its fields' `{}`s)."""
    pieces = text.split("{}")
    out = [pieces[0]]
    for k, piece in enumerate(pieces[1:]):
        shape = shapes[k] if k < len(shapes) else None
        out.append(shape if shape is not None else "{}")
        out.append(piece)
    return "".join(out)


def _is_struct(t) -> bool:
    return isinstance(t, StructT) and t.kind == "struct"


def _leaf_types(t, node) -> list:
    """The scalar types of a digest's data in the order `flatten` lists its fields."""
    if isinstance(t, StructT):
        out = []
        for _, ft, _ in t.fields:
            out += _leaf_types(ft, node)
        return out
    if isinstance(t, TupleT):
        out = []
        for item in t.items:
            out += _leaf_types(item, node)
        return out
    if isinstance(t, StackT):
        return _leaf_types(t.element, node) * t.size
    if isinstance(t, VarbitT):
        raise Unsupported(node, "a varbit field cannot be part of a digest (P4Runtime and "
                                "simple_switch take fixed-width fields only)")
    return [t]
