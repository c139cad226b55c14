"""Translate a BMv2 JSON program once per content and bind it to each switch's own state.

Why: a simulated fabric loads the same `ina.p4` JSON into a hundred switches, and turning it into
Python (lane groups, code generation, `compile`) cost 0.3-0.6 s per switch at k = 256. The
generated code never holds state itself: it reaches registers, counters, meters, tables, value
sets, action profiles and custom CRCs through the global names of its namespace
(`CodeScope.bind`). So the code is generated once, against a private *template* program that no
switch ever uses, and each program gets a namespace of its own in which every name the template
bound to a state object is bound to the program's own object instead; a copy of the compiled
module code is then run in that namespace, which defines the packet functions over it.

Which object of a program corresponds to which template object is found by walking both state
graphs side by side (`pair_state`): both were built by the same code from the same JSON, so
they have the same shape; any difference, or a namespace value that is neither paired state nor
known to be stateless (`_translate`), raises `Unshareable` and the program is generated on its
own as before. Templates are keyed by a SHA-256 of the JSON text and the code generator's
switches (`lanes.ENABLED`), at most `MAX_TEMPLATES` of them (least recently used first out);
a template made once is also kept on disk for later processes (`template_store.py`).
"""

from __future__ import annotations

import hashlib
import json
import os
import struct
import threading
import types
from collections import OrderedDict
from dataclasses import dataclass
from itertools import repeat

import numpy as np

from ..cgen import nativebuild
from ..pygen import lanes
from ..pygen.codecache import fresh_code
from ..state.hashes import Crc
from . import template_store

MAX_TEMPLATES = 8
# off: every program generates its own code (tests compare; INAEMU_SHARE_CODE=0 for A/B runs)
ENABLED = os.environ.get("INAEMU_SHARE_CODE", "1") != "0"
STATE_ATTRS = ("registers", "counters", "meters", "vsets", "field_lists", "tables", "profiles",
               "custom_crcs")
ATOMS = (int, float, str, bytes, bool, type(None), complex)
ATOM_SET = frozenset(ATOMS)
BOOKKEEPING = ("__builtins__", "__source__", "__ids__", "__counter__", "__calculations__",
               "__vector_runs__")


class Unshareable(Exception):
    """The template's code cannot be bound to this program's state (the reason is the text)."""


@dataclass
class Template:
    """A program translated once: its private state and generated code, and what binding
    needs (the compiled module code, banked register groups, action profile selectors)."""

    program: object                 # a Program no switch ever uses
    code: types.CodeType            # the untraced module code, run once per bound program
    banks: list[list[str]]          # register names of each bank, in column order
    selectors: list[tuple[str, str]]   # (action profile, selector function name)
    # where the state objects the code refers to are (`pair_template`); found at the first
    # binding in a process, never stored (template_store writes templates before that)
    paths: list | None = None
    # the state objects as the JSON describes them (program.StateSpec), read by the first
    # program bound in a process; later ones are made from it without walking the JSON
    state: object | None = None


_templates: OrderedDict[str, Template | None] = OrderedDict()   # None: cannot be shared
_lock = threading.Lock()
REFUSED: dict[str, str] = {}        # key -> why its code could not be shared (for diagnosis)


def content_key(source) -> tuple[str, bytes] | None:
    """(cache key, the JSON text the template is built from) of a program's source. A dict is
    written out as canonical JSON, so the template owns a private copy of it (a caller may
    change its dict later); None when sharing is off or the dict is not JSON."""
    if not ENABLED:
        return None
    if isinstance(source, dict):
        try:
            source = json.dumps(source, sort_keys=True, separators=(",", ":"),
                                allow_nan=False).encode()
        except (TypeError, ValueError):
            return None
    elif isinstance(source, str):
        source = source.encode()
    elif isinstance(source, bytearray):
        source = bytes(source)
    if not isinstance(source, bytes):
        return None
    flag = b"\0lanes=%d native=%d" % (bool(lanes.ENABLED), nativebuild.enabled())
    last = _last_key
    if last is not None and last[0] is source and last[1] == flag:
        return last[2], source     # the same bytes object again (a server's shared pipeline)
    digest = hashlib.sha256(source)
    digest.update(flag)
    key = digest.hexdigest()
    globals()["_last_key"] = (source, flag, key)
    return key, source


# (bytes object, lanes flag, key) of the last content_key: a fabric loads one JSON bytes object
# into a hundred switches, and hashing its 1.7 MB again each time cost ~1 ms
_last_key: tuple[bytes, bytes, str] | None = None


def template_for(key: str, build) -> Template | None:
    """The template of `key`, made with `build()` (a private Program) the first time in this
    process, or read from the disk store if an earlier process made it (template_store.py); None
    if its code cannot be shared. One template is made at a time (the others wait and use it)."""
    with _lock:
        if key in _templates:
            _templates.move_to_end(key)
            return _templates[key]
        template = template_store.load(key)
        if not isinstance(template, Template):
            program = build()
            try:
                template = make_template(program)
            except Unshareable as why:
                template = None
                _refused(key, str(why))
            else:
                template_store.save(key, template)
        _templates[key] = template
        while len(_templates) > MAX_TEMPLATES:
            _templates.popitem(last=False)
        return template


def clear() -> None:
    with _lock:
        _templates.clear()


def cached_keys() -> list[str]:
    with _lock:
        return list(_templates)


def make_template(program) -> Template:
    code = program.untraced
    if code.code is None:
        raise Unshareable("no module code kept")
    banks: dict[int, list[str]] = {}
    for reg in program.registers.values():
        array = getattr(reg.cells, "array", None)
        if array is not None:
            banks.setdefault(id(array), []).append((reg.cells.column, reg.name))
    selectors = [(name, profile.selector.__name__) for name, profile in program.profiles.items()
                 if profile.selector is not None]
    return Template(program, code.code,
                    [[name for _, name in sorted(cols)] for cols in banks.values()], selectors)


def forget(key: str, why: str) -> None:
    """Mark `key` as not shareable (a program failed to bind): later loads generate alone."""
    with _lock:
        _templates[key] = None
        _refused(key, why)
    template_store.discard(key)


def _refused(key: str, why: str) -> None:
    REFUSED[key] = why
    while len(REFUSED) > 4 * MAX_TEMPLATES:
        REFUSED.pop(next(iter(REFUSED)))


# --------------------------------------------------------------------------------- pairing
def pair_template(template: Template, program) -> dict[int, object]:
    """The mapping `bind_namespace` needs for `program`. The first program bound to a template
    in this process is paired in full (`pair_state`, which checks the whole shape); that also
    records the path from the program to each state object the generated code refers to, and
    every later program is paired by following those paths only (2.2 -> ~0.2 ms per ina.p4
    switch): it was built by the same code from the same JSON."""
    if template.paths is None:
        paths: dict[int, object] = {}
        mapping = pair_state(template.program, program, paths)
        referenced = _referenced(template.program.untraced.namespace)
        template.paths = [(key, type(mapping[key]), _steps(where))
                          for key, where in paths.items() if key in referenced]
        return mapping
    mapping = {id(template.program): program}
    for key, kind, (attr, steps) in template.paths:
        target = getattr(program, attr)
        for step, item in steps:
            target = target[step] if item else getattr(target, step)
        if type(target) is not kind:
            raise Unshareable(f"{attr}{steps}: a {type(target).__name__}, not a {kind.__name__}")
        mapping[key] = target
    return mapping


def pair_state(template_program, program, paths: dict | None = None) -> dict[int, object]:
    """id(template object) -> the program's corresponding object, for every mutable object
    reachable from the program's state (the attributes in STATE_ATTRS); with `paths`, also
    id(template object) -> where it was found (list items with their index)."""
    mapping: dict[int, object] = {id(template_program): program}
    for attr in STATE_ATTRS:
        _pair(getattr(template_program, attr), getattr(program, attr), mapping, attr, paths)
    return mapping


def _referenced(namespace: dict) -> set[int]:
    """ids of every object `_translate` may look up in the mapping: the namespace's values and
    what they hold (closure cells, a method's object, list, tuple and dict items)."""
    seen: set[int] = set()
    todo = [value for name, value in namespace.items() if name not in BOOKKEEPING]
    while todo:
        value = todo.pop()
        if id(value) in seen:
            continue
        seen.add(id(value))
        kind = type(value)
        if kind is types.FunctionType:
            todo.extend(_cell_contents(value))
        elif kind is types.MethodType:
            todo.append(value.__self__)
        elif kind is list or kind is tuple:
            if not ATOM_SET.issuperset(map(type, value)):   # atoms are never state
                todo.extend(value)
        elif kind is dict:
            todo.extend(value.values())
    return seen


def _cell_contents(fn) -> list:
    out = []
    for cell in fn.__closure__ or ():
        try:
            out.append(cell.cell_contents)
        except ValueError:          # an empty cell
            pass
    return out


def _steps(where) -> tuple[str, tuple]:
    """(state attribute, ((key, is item), ...)) of a path kept by `_pair`."""
    steps = []
    while not isinstance(where, str):
        where, key, item = where
        steps.append((key, item))
    return where, tuple(reversed(steps))


def _pair(a, b, mapping: dict, path: str, paths: dict | None = None) -> None:
    """Walk a and b side by side, recording id(a) -> b (and with `paths` id(a) -> its path).
    Paths are kept as (parent, key, item) tuples and written out only for an error
    (formatting one per object was half the walk); list items get their index only when
    `paths` is asked for."""
    stack = [(a, b, path)]
    pop, extend = stack.pop, stack.extend
    while stack:
        a, b, where = pop()
        kind = type(a)
        if kind in ATOM_SET:
            if type(b) is not kind or a != b:
                raise Unshareable(f"{_text(where)}: {a!r} != {b!r}")
            continue
        if a is b:
            continue                 # built from the shared part (layout, actions): read-only
        if type(b) is not kind:
            raise Unshareable(f"{_text(where)}: {kind.__name__} against {type(b).__name__}")
        known = mapping.get(id(a))
        if known is not None:
            if known is not b:
                raise Unshareable(f"{_text(where)}: shared differently")
            continue
        mapping[id(a)] = b
        if paths is not None:
            paths[id(a)] = where
        if kind is dict:
            if a.keys() != b.keys():
                raise Unshareable(f"{_text(where)}: keys differ")
            extend((value, b[key], (where, key, True)) for key, value in a.items())
        elif kind is list or kind is tuple:
            if len(a) != len(b):
                raise Unshareable(f"{_text(where)}: lengths differ")
            if ATOM_SET.issuperset(map(type, a)):    # register cells, counts: compared in C
                if a != b:
                    raise Unshareable(f"{_text(where)}: values differ")
                continue
            if paths is None:
                extend(zip(a, b, repeat((where, None, True))))
            else:
                extend((x, y, (where, i, True)) for i, (x, y) in enumerate(zip(a, b)))
        elif kind is np.ndarray:
            if a.shape != b.shape or a.dtype != b.dtype:
                raise Unshareable(f"{_text(where)}: arrays differ")
        elif kind is memoryview:         # a one-column bank's flat view (regbanks.flat_view)
            if a.format != b.format or a.shape != b.shape:
                raise Unshareable(f"{_text(where)}: views differ")
        elif kind is Crc:
            pass                     # a reconfigurable CRC: the object is the unit of state
        elif kind is set or kind is frozenset:
            if a != b or not all(type(x) in ATOMS for x in a):
                raise Unshareable(f"{_text(where)}: sets differ")
        else:
            layout = _LAYOUTS.get(kind)
            if layout is None:
                layout = _LAYOUTS[kind] = _layout_of(kind, a)
            if layout is _DICT:
                attrs_a, attrs_b = vars(a), vars(b)
                if attrs_a.keys() != attrs_b.keys():
                    raise Unshareable(f"{_text(where)}: attributes differ")
                extend((value, attrs_b[key], (where, key, False))
                       for key, value in attrs_a.items())
            elif layout:
                extend((getattr(a, n), getattr(b, n), (where, n, False)) for n in layout)
            else:
                raise Unshareable(f"{_text(where)}: cannot pair a {kind.__name__}")


_DICT = ("__dict__",)
_LAYOUTS: dict[type, tuple[str, ...]] = {}   # p4switch class -> _DICT, its slots, or () (none)


def _layout_of(kind: type, sample) -> tuple[str, ...]:
    if not kind.__module__.startswith("p4switch."):
        return ()
    if hasattr(sample, "__dict__"):
        return _DICT
    if hasattr(kind, "__slots__"):
        return tuple(n for klass in kind.__mro__ for n in getattr(klass, "__slots__", ()))
    return ()


def _text(where) -> str:
    """A path as text: 'registers['x'].cells[…]'."""
    steps = []
    while not isinstance(where, str):
        where, key, item = where
        steps.append("[…]" if key is None else f"[{key!r}]" if item else f".{key}")
    return where + "".join(reversed(steps))


# --------------------------------------------------------------------------------- binding
def bind_namespace(template: Template, mapping: dict) -> dict:
    """The program's namespace: the template's with every state object replaced by the
    program's, functions of the template's namespace re-made over the new one, and the
    module code run in it."""
    source_ns = template.program.untraced.namespace
    namespace: dict = {}
    context = (source_ns, namespace, mapping)
    for name, value in source_ns.items():
        if name in BOOKKEEPING:
            namespace[name] = _bookkeeping(name, value)
        else:
            namespace[name] = _translate(value, context, name)
    ids = source_ns.get("__ids__", {})
    namespace["__ids__"] = {id(namespace[n]): n for n in ids.values() if n in namespace}
    exec(fresh_code(template.code), namespace)  # noqa: S102 - the template's generated code
    return namespace


def _bookkeeping(name: str, value):
    if name in ("__builtins__", "__vector_runs__"):
        return value                      # the interpreter's builtins; read-only analysis
    if name == "__source__":
        return list(value)
    if name == "__counter__":
        return [value[0]]
    return dict(value)                    # __ids__ (rebuilt after), __calculations__ (names)


def _translate(value, context, where: str):
    source_ns, namespace, mapping = context
    mapped = mapping.get(id(value))
    if mapped is not None:
        return mapped
    kind = type(value)
    if kind in ATOMS or kind is type or kind is object or kind is types.ModuleType:
        return value
    if kind is types.FunctionType:
        _check_closure(value, context, where)
        if value.__globals__ is not source_ns:
            return value                  # a module's helper
        fn = types.FunctionType(value.__code__, namespace, value.__name__, value.__defaults__,
                                value.__closure__)
        fn.__kwdefaults__ = value.__kwdefaults__
        return fn
    if kind is types.MethodType:
        owner = _translate(value.__self__, context, where)
        return value if owner is value.__self__ else types.MethodType(value.__func__, owner)
    if kind is types.BuiltinFunctionType:
        owner = value.__self__
        if owner is None or isinstance(owner, (types.ModuleType, struct.Struct, np.ufunc)):
            return value              # a function, a struct's pack, a ufunc's reduce
        raise Unshareable(f"{where}: a method of a {type(owner).__name__}")
    if kind in (list, tuple):
        items = [_translate(x, context, where) for x in value]
        if kind is tuple and all(x is y for x, y in zip(items, value)):
            return value
        return kind(items)                # a list is copied: each program owns its own
    if kind is dict:
        return {k: _translate(v, context, where) for k, v in value.items()}
    if kind is Crc:
        return value                      # a standard CRC; the reconfigurable ones are state
    if kind is np.ndarray and not value.flags.writeable and value.base is None:
        return value                      # a read-only constant (lane code's operands)
    if kind is not np.ndarray and callable(value) and kind.__module__.startswith("numpy"):
        return value                      # numpy functions and scalar types
    raise Unshareable(f"{where}: cannot share a {kind.__name__}")


def _check_closure(fn, context, where: str) -> None:
    for cell in fn.__closure__ or ():
        content = cell.cell_contents
        if type(content) in (list, dict, set) or \
                _translate(content, context, where) is not content:
            raise Unshareable(f"{where}: a closure over state")
