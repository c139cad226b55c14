"""Which PHV slots and validity flags a piece of generated code may write.

Multicast replicas all leave ingress with the same PHV; a header whose fields and validity
neither the egress control nor the deparser can change has the same bytes in every replica, so
those bytes are built once per packet (`deparsergen`, `engine`). Finding out what code can
write is done on the generated Python itself (`ast`), which holds every write there is, instead
of a second reading of the JSON's primitives. The answer is conservative: a write to a computed
slot or a slice we cannot bound, or `f`/`v` handed to anything but a known read-only helper, means
"anything".
"""

from __future__ import annotations

import ast
from dataclasses import dataclass, field

# helpers of the generated code that receive `f`/`v` but only read them
READ_ONLY_CALLS = ("calcname_",)
READ_ONLY_METHODS = ("resolve",)  # ActionProfile.resolve: the selector hash reads fields


@dataclass
class WriteSet:
    fields: set[int] = field(default_factory=set)   # slots of `f`
    valid: set[int] = field(default_factory=set)    # indices of `v`
    anything: bool = False

    def touches(self, slots: range, valid_index: int) -> bool:
        return self.anything or valid_index in self.valid or any(s in self.fields for s in slots)


def code_writes(source: str) -> WriteSet:
    """Every `f`/`v` element that `source` (generated packet code) may assign."""
    found = WriteSet()
    tree = ast.parse(source)
    # the read-only helpers' own bodies (serialisers, hashes) are not part of the question
    tree.body = [node for node in tree.body if not (
        isinstance(node, ast.FunctionDef) and node.name.startswith(READ_ONLY_CALLS))]
    # functions defined here (control nodes called from several places) are analysed too
    local = {node.name for node in tree.body if isinstance(node, ast.FunctionDef)}
    allowed_loads: set[int] = set()  # ids of Name nodes used as f[...]/v[...] or read-only args
    for node in ast.walk(tree):  # breadth first: a parent is seen before its children
        if isinstance(node, ast.Subscript) and _phv_name(node.value):
            allowed_loads.add(id(node.value))
            if isinstance(node.ctx, (ast.Store, ast.Del)):
                _record(found, node)
        elif isinstance(node, ast.Call) and (_read_only(node.func) or (
                isinstance(node.func, ast.Name) and node.func.id in local)):
            for arg in node.args:
                if _phv_name(arg):
                    allowed_loads.add(id(arg))
        elif _phv_name(node) and id(node) not in allowed_loads:
            # f or v escapes (aliased, passed to a writing helper) or is rebound
            found.anything = True
    return found


def union(*sets: WriteSet) -> WriteSet:
    out = WriteSet()
    for ws in sets:
        out.fields |= ws.fields
        out.valid |= ws.valid
        out.anything = out.anything or ws.anything
    return out


def _phv_name(node: ast.AST) -> bool:
    return isinstance(node, ast.Name) and node.id in ("f", "v")


def _read_only(func: ast.AST) -> bool:
    if isinstance(func, ast.Name):
        return func.id.startswith(READ_ONLY_CALLS)
    return isinstance(func, ast.Attribute) and func.attr in READ_ONLY_METHODS


def _record(found: WriteSet, node: ast.Subscript) -> None:
    target = found.fields if node.value.id == "f" else found.valid
    index = node.slice
    if isinstance(index, ast.Slice):
        low, high = constant_index(index.lower), constant_index(index.upper)
        if index.step is None and low is not None and high is not None:
            target.update(range(low, high))
            return
    else:
        slot = constant_index(index)
        if slot is not None:
            target.add(slot)
            return
    found.anything = True


def constant_index(node: ast.AST | None) -> int | None:
    """An int constant, or a sum of them (`f[10:10 + 3]`); None for anything else."""
    if isinstance(node, ast.Constant) and type(node.value) is int:
        return node.value
    if isinstance(node, ast.Name) and node.id.startswith("_vh") and node.id[3:].isdigit():
        return int(node.id[3:])   # a vector run's slot (vheaders.py)
    if isinstance(node, ast.BinOp) and isinstance(node.op, ast.Add):
        left, right = constant_index(node.left), constant_index(node.right)
        if left is not None and right is not None:
            return left + right
    return None
