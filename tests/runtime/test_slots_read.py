"""fastpath.may_read_slot answers from one walk per (source, roots) (`_slots_read`); it must
answer as the walk per slot it replaced did, for every slot of real generated code."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

from p4switch.compiler import compile_file
from p4switch.runtime import Switch
from p4switch.runtime.phv.writes import constant_index
from p4switch.runtime.pygen import fastpath

ROOT = Path(__file__).resolve().parents[2]


def _one_slot(defs: dict, roots: tuple[str, ...], slot: int) -> bool:
    """The per-slot walk of session 21 (reference)."""
    todo, seen = [r for r in roots if r in defs], set()

    def may_be(index) -> bool:
        if isinstance(index, ast.Slice):
            low, high = constant_index(index.lower), constant_index(index.upper)
            return index.step is not None or low is None or high is None or low <= slot < high
        value = constant_index(index)
        return value is None or value == slot

    def is_f(node) -> bool:
        return isinstance(node, ast.Name) and node.id == "f"
    while todo:
        name = todo.pop()
        if name in seen:
            continue
        seen.add(name)
        subscripted: set[int] = set()
        for node in ast.walk(defs[name]):
            if isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and \
                    node.func.id in defs:
                todo.append(node.func.id)
                subscripted.update(id(a) for a in node.args if is_f(a))
            elif isinstance(node, ast.Subscript) and is_f(node.value):
                subscripted.add(id(node.value))
                if not isinstance(node.ctx, ast.Store) and may_be(node.slice):
                    return True
            elif isinstance(node, ast.AugAssign) and isinstance(node.target, ast.Subscript) \
                    and is_f(node.target.value) and may_be(node.target.slice):
                return True
            elif is_f(node) and id(node) not in subscripted:
                return True
    return False


@pytest.mark.parametrize("program", ["ina.p4", "l3_forward.p4"])
def test_one_walk_answers_as_one_walk_per_slot(program):
    build = compile_file(str(ROOT / "p4src" / program), defines={"INA_K": "32"})
    switch = Switch(build.bmv2)
    source = switch.program.untraced.source
    defs = {n.name: n for n in ast.parse(source).body if isinstance(n, ast.FunctionDef)}
    slots = len(switch._engine.init_fields) + 4
    for roots in (("egress", "deparse_replica"), ("egress", "deparse"), ("parse",),
                  ("ingress",)):
        got = [fastpath.may_read_slot(source, roots, s) for s in range(slots)]
        assert got == [_one_slot(defs, roots, s) for s in range(slots)], roots
        assert True in got and False in got, roots        # a real answer, not "anything"
