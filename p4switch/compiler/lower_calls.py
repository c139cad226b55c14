"""Lowering, part 9: P4's copy-in/copy-out calling convention for inlined calls.

Actions, functions and sub-controls are inlined. Binding parameters straight to the caller's
arguments (by reference) gives the same result as copy-in/copy-out unless something aliases:
two parameters bound to overlapping locations with one written, a callee that reads or writes an
argument's location directly as well as through the parameter, or an `in` argument the callee
overwrites before reading the parameter. Only then are temporaries used (copied in before the
body, copied out after), so ordinary programs keep p4c-like JSON without needless copies.
"""

from __future__ import annotations

import dataclasses

from . import ast as A
from .constfold import fold
from .lower_expr import Bound, Env, Unsupported
from .storage import (DynamicElement, DynamicField, FieldRef, HeaderInst, StackStore,
                      StructStore, UnionStore)
from .types import BitT

WRITE_OPS = {"assign", "assign_header", "assign_union", "assign_header_stack", "add_header",
             "remove_header", "push", "pop", "register_read", "modify_field_rng_uniform",
             "modify_field_with_hash_based_offset", "assign_VL"}


def storage_keys(s) -> set:
    """(header, field) pairs a storage covers; field '*' stands for the whole header."""
    if isinstance(s, DynamicField):
        return {(e.name, s.name) for e in s.stack.elements}
    if isinstance(s, FieldRef):
        return {(s.header, s.name)}
    if isinstance(s, HeaderInst):
        return {(s.name, "*")}
    if isinstance(s, StackStore):
        return {(e.name, "*") for e in s.elements}
    if isinstance(s, UnionStore):
        return {(m.name, "*") for m in s.members.values()}
    if isinstance(s, StructStore):
        out = set()
        for sub in s.fields.values():
            out |= storage_keys(sub)
        return out
    return set()


def overlap(a: set, b: set) -> bool:
    for h, f in a:
        for h2, f2 in b:
            if h == h2 and (f == f2 or f == "*" or f2 == "*"):
                return True
            if h2.startswith(h + "[") and f == "*" or h.startswith(h2 + "[") and f2 == "*":
                return True
    return False


def json_keys(value, out: set) -> set:
    """All locations a piece of BMv2 JSON mentions."""
    if isinstance(value, dict):
        t = value.get("type")
        if t == "field" and isinstance(value.get("value"), list):
            out.add(tuple(value["value"]))
        elif t in ("header", "header_union") and isinstance(value.get("value"), str):
            out.add((value["value"], "*"))
        elif t == "header_stack" and isinstance(value.get("value"), str):
            out.add((value["value"] + "[", "*"))
        for v in value.values():
            json_keys(v, out)
    elif isinstance(value, list):
        for v in value:
            json_keys(v, out)
    return out


def written_keys(prims: list) -> set:
    out: set = set()
    for p in prims:
        if p["op"] in WRITE_OPS and p["parameters"]:
            json_keys(p["parameters"][0], out)
        if p["op"] == "execute_meter":
            json_keys(p["parameters"][2], out)
    return out


def _normalise(keys: set) -> set:
    return {(h[:-1], f) if h.endswith("[") else (h, f) for h, f in keys}


class CallBinder:
    """Decides, for one inlined call, between binding by reference and temporaries."""

    def __init__(self, lowerer):
        self.L = lowerer
        self.ctx = lowerer.ctx

    def arg_storage(self, e, env):
        if isinstance(e, (A.Name, A.Member, A.Index)):
            try:
                return self.L.x.resolve(e, env)
            except Exception:  # noqa: BLE001 - not a location
                return None
        return None

    @staticmethod
    def param_type(p, call):
        """`p`'s type at this call: a generic function's parameter as the call bound it
        (`pair_t<T, bit<16>>` given a pair_t<bit<8>, bit<16>>), else as declared."""
        params = getattr(getattr(call, "callee", None), "params", None)
        types = getattr(call, "param_types", None)
        if params is not None and types is not None and p in params:
            return types[params.index(p)]
        return p.type

    def params_alias(self, params, args, env) -> bool:
        keys = [storage_keys(self.arg_storage(a.value, env)) for a in args]
        for i in range(len(keys)):
            for j in range(i + 1, len(keys)):
                directional = params[i].direction in ("out", "inout") or \
                    params[j].direction in ("out", "inout")
                if directional and overlap(keys[i], keys[j]):
                    return True
        return False

    def by_reference_is_safe(self, params, args, env, parent: Env, run_body, node=None) -> bool:
        if self.params_alias(params, args, env):
            return False
        for p, a in zip(params, args):
            if isinstance(a.value, (A.ListExpr, A.StructExpr)):
                return False  # a struct or header value written as a list: built in a temporary
            if p.direction in ("out", "inout") and a.value in self.ctx.call_results:
                return False  # its value was taken before a later argument's call
            if p.direction in ("out", "inout") and isinstance(a.value, A.Slice):
                return False  # a slice is not a location: copy in, copy back into the slice
            if p.direction in ("out", "inout") and \
                    isinstance(self.arg_storage(a.value, env), (DynamicField, DynamicElement)):
                return False  # hs[i]: the location is fixed at the call, whatever i becomes
        if not any(fold(a.value) is None for a in args):
            return True
        # lower the body once with every parameter in a temporary, to see what it touches
        snapshot = self.ctx.snapshot()
        try:
            scratch: list = []
            inner = Env(parent)
            for p in params:
                inner.bind(p, self.ctx.layout.allocate(self.param_type(p, node), "tmp", "tmp"))
            run_body(scratch, inner)
        finally:
            self.ctx.restore(snapshot)
        touched = _normalise(json_keys(scratch, set()))
        written = _normalise(written_keys(scratch))
        for p, a in zip(params, args):
            if fold(a.value) is not None or isinstance(a.value, A.DontCare):
                continue
            s = self.arg_storage(a.value, env)
            if p.direction in ("out", "inout"):
                if s is None or overlap(storage_keys(s), touched):
                    return False
            else:
                reads = storage_keys(s) | _index_keys(s) if s is not None else \
                    _normalise(json_keys(self.L.x.data(a.value, env), set())) \
                    if _is_data(a.value) else set()
                if overlap(reads, written):
                    return False
        return True

    def invalidate_out_headers(self, params, storages, node) -> None:
        """An `out` parameter starts uninitialized: its headers are invalid (P4_16), whatever
        the argument held before the call."""
        for p, s in zip(params, storages):
            if p.direction == "out":
                for h in headers_in(s):
                    self.L.emit("remove_header", [header_json(h)], node)

    def bind(self, params, args, env, parent: Env, node, run_body) -> tuple[Env, list]:
        """The callee's environment and the copy-outs to emit after its body."""
        inner = Env(parent)
        if self.by_reference_is_safe(params, args, env, parent, run_body, node):
            for p, a in zip(params, args):
                inner.bind(p, Bound(a.value, env))
            self.invalidate_out_headers(params, [self.arg_storage(a.value, env) for a in args],
                                        node)
            return inner, []
        copy_out = []
        for p, a in zip(params, args):
            if fold(a.value) is not None:
                inner.bind(p, Bound(a.value, env))
                continue
            tmp = self.ctx.layout.allocate(self.param_type(p, node), "tmp", "tmp")
            inner.bind(p, tmp)
            if p.direction in ("in", "inout", "") and not isinstance(a.value, A.DontCare):
                self.L.assign_to(tmp, a.value, env, node)
            if p.direction in ("out", "inout") and not isinstance(a.value, A.DontCare):
                copy_out.append((self.fixed_location(a.value, env, node), tmp))
            self.invalidate_out_headers([p], [tmp], node)
        return inner, copy_out

    def fixed_location(self, e, env, node):
        """Where an out/inout argument is copied back: `hs[i]` as evaluated at the call (its
        index kept in a temporary), else the argument itself (resolved at the copy-out)."""
        s = self.arg_storage(e, env)
        if not isinstance(s, (DynamicField, DynamicElement)):
            return e
        index = self.ctx.layout.temp(BitT(32))
        self.L.emit("assign", [index.json(), s.index], node)
        return dataclasses.replace(s, index=index.json())

    def copy_out(self, copies, env, node) -> None:
        for dest_expr, tmp in copies:
            if not isinstance(dest_expr, A.Expr):  # a location fixed at the call
                self.L.copy_storage(dest_expr, tmp, node)
                continue
            if isinstance(dest_expr, A.Slice):
                self.L.assign_slice_value(dest_expr, tmp.json(), env, node)
                continue
            dest = self.L.x.resolve(dest_expr, env)
            if dest is None:
                raise Unsupported(dest_expr, "an out/inout argument must be a location")
            self.L.copy_storage(dest, tmp, node)


def headers_in(s) -> list:
    """The header instances a storage holds (a header, or those in a struct, stack, union)."""
    if isinstance(s, (HeaderInst, DynamicElement)):
        return [s]
    if isinstance(s, StackStore):
        return [h for e in s.elements for h in headers_in(e)]
    if isinstance(s, UnionStore):
        return list(s.members.values())
    if isinstance(s, StructStore):
        return [h for sub in s.fields.values() for h in headers_in(sub)]
    return []


def header_json(h) -> dict:
    if isinstance(h, DynamicElement):
        return h.json()
    return {"type": "header", "value": h.name}


def _index_keys(s) -> set:
    """The locations a run-time stack index reads (`i` of `hs[i].f`)."""
    if isinstance(s, (DynamicField, DynamicElement)):
        return _normalise(json_keys(s.index, set()))
    return set()


def _is_data(e) -> bool:
    from .types import ERROR, BitT, EnumT, is_bool
    t = getattr(e, "type", None)
    return isinstance(t, (BitT, EnumT)) or is_bool(t) or t == ERROR
