"""Extern primitives: registers, counters, meters, hashes and random numbers.

`ExternCompiler` is a collaborator of `PrimitiveCompiler`, which hands it the primitives it
has a handler for (`handler`) and tells it where straight-line runs of an action body start
and end. Extern indices are bounds-checked (out of range is ignored); within a straight-line
run the check of an index is done once (its lines are the `prelude` of the primitive that
first needs it) and reused by the following extern calls with the same index until a
primitive writes a field the index depends on (`forget_written`), which is what makes
register-heavy actions (one slot index, many register arrays) cheap.
"""

from __future__ import annotations

import random
import re
from typing import Callable

from ..config import Node
from ..state.regbanks import python_cells
from .exprgen import CodeScope, Expr, data
from .stores import Target, compile_target, int_param, need, store


class ExternCompiler:
    """Compiles register, counter, meter, hash and random primitives into lines of Python."""

    def __init__(self, scope: CodeScope, tmp: Callable[[], str]):
        self.scope = scope
        self.tmp = tmp                          # the owner's temporaries: one numbering per body
        self._index_cache: dict | None = None  # see _index; only within a straight-line run
        self._prelude: list[str] = []

    # ------------------------------------------------------------------ the owner's interface
    def handler(self, name: str):
        """The method compiling primitive `name` (its op without leading `_`), or None."""
        return getattr(self, "_p_" + name, None)

    def start_run(self) -> None:
        """A straight-line run starts: extern index checks may be cached from here on."""
        self._index_cache = {}

    def end_run(self) -> None:
        """The run ends (or is not straight-line): every index is checked where it is used."""
        self._index_cache = None

    def forget_all(self) -> None:
        """Code the cache cannot see ran (a lane group): no cached index holds any more."""
        self._index_cache.clear()

    def take_prelude(self) -> list[str]:
        """The lines the last primitive's cached index checks need before it (then none)."""
        prelude, self._prelude = self._prelude, []
        return prelude

    # ---------------------------------------------------------------------------- primitives
    def _calc_name(self, node: Node) -> str:
        kind, value = node.type_value()
        if kind != "calculation":
            raise node.error("expected a calculation")
        name = self.scope.namespace["__calculations__"].get(value.str())
        if name is None:
            raise value.error(f"unknown calculation '{value.str()}'")
        return name

    def _p_modify_field_with_hash_based_offset(self, prim, params):
        need(prim, params, 4)
        dst = compile_target(params[0], self.scope)
        base = int_param(params[1], self.scope)
        calc = self._calc_name(params[2])
        size = int_param(params[3], self.scope)
        value = Expr(f"_hash_offset({calc}(f, v, b''), {data(base)}, {data(size)})", "data")
        return [store(dst, value)]

    def _p_modify_field_rng_uniform(self, prim, params):
        need(prim, params, 3)
        dst = compile_target(params[0], self.scope)
        low, high = int_param(params[1], self.scope), int_param(params[2], self.scope)
        return [store(dst, Expr(f"_random_between({data(low)}, {data(high)})", "data"))]

    def _extern(self, node: Node, kind: str, registry: str):
        got, value = node.type_value()
        if got != kind:
            raise node.error(f"expected a {kind}")
        obj = self.scope.namespace[registry].get(value.str())
        if obj is None:
            raise value.error(f"unknown {kind} '{value.str()}'")
        return obj

    def _index(self, node: Node, size: int) -> tuple[str, str]:
        """(index code, bounds-check condition) for an extern index.

        In straight-line code a non-constant index is evaluated and checked once into two
        locals, reused by the following extern calls with the same index and size until a
        primitive writes a field the index reads (`forget_written`)."""
        expr = int_param(node, self.scope)
        if expr.const is not None:
            if not 0 <= expr.const < size:
                return str(expr.const), "False"
            return str(expr.const), "True"
        if expr.masked_to is not None and (1 << expr.masked_to) <= size:
            return data(expr), "True"
        low = "" if expr.masked_to is not None else "0 <= "  # masked: known non-negative
        if self._index_cache is None:
            tmp = self.tmp()
            return tmp, f"{low}({tmp} := {data(expr)}) < {size}"
        key = (data(expr), size)
        cached = self._index_cache.get(key)
        if cached is None:
            tmp, ok = self.tmp(), self.tmp()
            self._prelude += [f"{tmp} = {data(expr)}", f"{ok} = {low}{tmp} < {size}"]
            cached = self._index_cache[key] = (tmp, ok)
        return cached

    _WRITE = re.compile(r"(f\[\d+\])\s*=(?!=)")

    def forget_written(self, lines: list[str]) -> None:
        """Drop cached extern indices that read a field these lines may write."""
        if not self._index_cache:
            return
        text = "\n".join(lines)
        if re.search(r"f\[[^\]]*[^\d\]][^\]]*\]\s*=(?!=)", text) or "_stack_" in text:
            self._index_cache.clear()  # a computed slot or a slice: assume anything changed
            return
        written = set(self._WRITE.findall(text))
        for key in [k for k in self._index_cache if any(w in k[0] for w in written)]:
            del self._index_cache[key]

    def _p_count(self, prim, params):
        need(prim, params, 2)
        counter = self._extern(params[0], "counter_array", "__counters__")
        cells = self.scope.bind("cnt", counter.cells)     # (size, 2) uint64: packets, bytes
        index, cond = self._index(params[1], counter.size)
        plen = self.scope.layout.ingress_length   # BMv2 counts the length as received
        # (as Python ints, masked: 64-bit counts wrap as BMv2's, where NumPy's scalars warn)
        mask = f"{(1 << 64) - 1:#x}"
        body = [f"_crow = {cells}[{index}]", f"_crow[0] = (int(_crow[0]) + 1) & {mask}",
                f"_crow[1] = (int(_crow[1]) + f[{plen}]) & {mask}"]
        return body if cond == "True" else [f"if {cond}:"] + ["    " + b for b in body]

    def _p_execute_meter(self, prim, params):
        need(prim, params, 3)
        meter = self._extern(params[0], "meter_array", "__meters__")
        meters = self.scope.bind("mtr", meter.meters)
        index, cond = self._index(params[1], meter.size)
        dst = compile_target(params[2], self.scope)
        units = "1" if meter.unit == "packets" else f"f[{self.scope.layout.ingress_length}]"
        color = Expr(f"{meters}[{index}].execute({units}, _now_us())", "data", masked_to=2)
        line = store(dst, color)
        return [line] if cond == "True" else [f"if {cond}:", "    " + line]

    def _p_register_read(self, prim, params):
        need(prim, params, 3)
        dst = compile_target(params[0], self.scope)
        reg = self._extern(params[1], "register_array", "__registers__")
        cells = self.scope.bind("reg", python_cells(reg.cells))
        index, cond = self._index(params[2], reg.size)
        line = store(dst, Expr(f"{cells}[{index}]", "data", masked_to=reg.bitwidth))
        # out of range: BMv2 leaves the destination unchanged
        return [line] if cond == "True" else [f"if {cond}:", "    " + line]

    def _p_register_write(self, prim, params):
        need(prim, params, 3)
        reg = self._extern(params[0], "register_array", "__registers__")
        cells = self.scope.bind("reg", python_cells(reg.cells))
        index, cond = self._index(params[1], reg.size)
        value = int_param(params[2], self.scope)
        line = store(Target(f"{cells}[{index}]", reg.bitwidth, False), value)
        return [line] if cond == "True" else [f"if {cond}:", "    " + line]


def _hash_offset(hash_value: int, base: int, size: int) -> int:
    """simple_switch's `modify_field_with_hash_based_offset`: base + hash mod size, all three
    as 64-bit unsigned numbers (wider values keep their low 64 bits; the sum wraps), a size of
    0 taken as 1 (so the result is the base, as v1model.p4 documents `hash` with max 0)."""
    size &= _U64
    return (hash_value % (size or 1) + (base & _U64)) & _U64


_U64 = (1 << 64) - 1


def _random_between(low: int, high: int) -> int:
    return random.randint(low, high) if low <= high else low


EXTERN_HELPERS = {"_hash_offset": _hash_offset, "_random_between": _random_between}
