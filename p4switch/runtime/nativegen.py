"""Ingress and egress controls as C: the same control graph, tables and primitives, with the
values of fields in C integers instead of Python ints.

Why: a contribution through ina.p4's ingress runs ~100 lines of generated Python, each costing
what the interpreter costs (docs/perf.md); in C the same work is a few hundred nanoseconds.

What stays the same: the PHV is still the Python lists `f` and `v` (C reads a slot when a
statement needs it and writes it back at once, so everything else, parser, deparser, engine,
sees what it always saw), tables are still their dicts, registers and counters their lists.
What C does natively: conditionals, exact and keyless tables (lpm and ternary through the
table's own lookup method), and the primitives `assign` to an unsigned field of at most 64
bits, `register_read`/`register_write` of list registers, `count`, `mark_to_drop`, `exit`,
over expressions whose values fit 64 bits where it matters (below). Everything else, a lane
group, a header copy, a hash, a wide or signed field, runs as a small Python function generated
by the Python generators themselves and called from C (a *callback*), so a program never loses
a construct, only speed. A table with an action profile, direct counters or direct meters
refuses the control (`Untranslatable`), which then stays Python.

Exactness: BMv2 computes with unbounded integers. C computes every value modulo 2**64, which
equals the unbounded value's residue for +, -, *, <<, &, |, ^ and ~. Each translated value
carries a bound on its bit length (`CVal.bits`, None when it may be negative or is unbounded);
an operation whose result depends on more than the residue (comparisons, `>>`, a truth test,
an index, a key, a shift amount) needs an operand that is exact (known to fit 64 bits), or the
statement becomes a callback. A store masks to the field's width, which the residue decides.
"""

from __future__ import annotations

import re

from dataclasses import dataclass, field

from . import lanes
from .config import Node
from .controlgen import ActionDef, ControlCompiler
from .exprgen import CodeScope, boolean, compile_expr
from .layout import EXIT
from .primgen import DROP_PORT, PrimitiveCompiler
from .vheaders import all_runs

U64 = (1 << 64) - 1


class Untranslatable(Exception):
    """This construct has no C form here (the statement becomes a callback, or, where no
    callback can stand in, the control stays Python)."""


@dataclass
class CVal:
    code: str
    bits: int | None       # the unbounded value is in [0, 2**bits); None: unknown

    @property
    def exact(self) -> bool:
        return self.bits is not None and self.bits <= 64


def _need_exact(value: CVal) -> str:
    if not value.exact:
        raise Untranslatable("a value that may not fit 64 bits is compared or tested")
    return value.code


@dataclass
class NativeControls:
    """What `generate` made: the C source, the namespace names of the state objects the C
    code takes (in order, as one tuple), and the Python source of its callbacks."""

    c_source: str
    state_names: list[str]
    python_source: str
    refused: dict[str, str] = field(default_factory=dict)   # control -> why it stays Python
    fields: int = 0     # the C code reads and writes f[0:fields] and v[0:flags] directly
    flags: int = 0


class _Statement:
    """The field loads of one C statement (each slot read once, before the statement)."""

    def __init__(self, vector_slots: frozenset[int], param_widths: list[int] | None):
        self.loads: dict[str, str] = {}      # local name -> load code
        self.vector_slots = vector_slots
        self.param_widths = param_widths

    def slot(self, index: int) -> str:
        if index in self.vector_slots:
            raise Untranslatable("a field held as a lane vector")
        name = f"F{index}"
        self.loads[name] = f"rd(f, {index}, &{name})"
        return name

    def valid(self, index: int) -> str:
        name = f"V{index}"
        self.loads[name] = f"rd(v, {index}, &{name})"
        return name

    def param(self, index: int) -> str:
        name = f"P{index}"
        self.loads[name] = f"rdp(p, {index}, &{name})"
        return name

    def wrap(self, body: list[str]) -> list[str]:
        if not self.loads:
            return body
        names = ", ".join(sorted(self.loads))
        checks = " || ".join(self.loads[n] for n in sorted(self.loads))
        return ["{", f"    u64 {names};", f"    if ({checks}) goto fail;"] + \
            ["    " + line for line in body] + ["}"]


def _const(value: int) -> CVal:
    if value >= 0:
        if value > U64:
            return CVal(f"(u64){value & U64}ULL", value.bit_length())
        return CVal(f"{value}ULL", value.bit_length())
    return CVal(f"(u64){value & U64}ULL", None)


class ExprTranslator:
    """BMv2 JSON expressions as C over the statement's loads."""

    def __init__(self, scope: CodeScope, stmt: _Statement):
        self.scope = scope
        self.layout = scope.layout
        self.stmt = stmt

    def value(self, node: Node) -> CVal:
        kind, value = node.type_value()
        if kind == "field":
            ref = self.layout.field(value[0].str(), value[1].str(), value)
            if ref.is_valid_bit:
                return CVal(self.stmt.valid(ref.header.index), 1)
            if ref.signed or ref.width is None or ref.width > 64:
                raise Untranslatable("a signed, varbit or wide field")
            return CVal(self.stmt.slot(ref.slot), ref.width)
        if kind == "hexstr":
            return _const(value.hexstr())
        if kind == "bool":
            return CVal("1" if value.bool() else "0", 1)
        if kind in ("runtime_data", "local"):
            idx = value.int()
            widths = self.stmt.param_widths
            if widths is None or idx >= len(widths) or widths[idx] > 64:
                raise Untranslatable("action data out of range or wider than 64 bits")
            return CVal(self.stmt.param(idx), widths[idx])
        if kind == "expression":
            if isinstance(value.value, dict) and "op" not in value.value and \
                    "type" in value.value:
                return self.value(value)
            return self._op(value)
        raise Untranslatable(f"operand type '{kind}'")

    def truth(self, node: Node) -> str:
        return _need_exact(self.value(node))

    def _op(self, node: Node) -> CVal:
        op = node["op"].str()
        op = {"data_to_bool": "d2b", "bool_to_data": "b2d"}.get(op, op)
        left, right = node.get("left"), node.get("right")
        if op in ("+", "*", "&", "|", "^", "-") and left.value is not None:
            a, b = self.value(left), self.value(right)
            code = f"({a.code} {op} {b.code})"
            if op == "+":
                bits = max(a.bits, b.bits) + 1 if a.bits is not None and b.bits is not None \
                    else None
            elif op == "*":
                bits = a.bits + b.bits if a.bits is not None and b.bits is not None else None
            elif op == "&":
                known = [x.bits for x in (a, b) if x.bits is not None]
                bits = min(known) if known else None
            elif op in ("|", "^"):
                bits = max(a.bits, b.bits) if a.bits is not None and b.bits is not None \
                    else None
            else:
                bits = None
            return CVal(code, bits)
        if op == "-":           # unary minus
            a = self.value(right)
            return CVal(f"(0ULL - {a.code})", None)
        if op == "~":
            a = self.value(right)
            return CVal(f"(~{a.code})", None)
        if op == "<<":
            a, s = self.value(left), self.value(right)
            amount = _need_exact(s)
            if s.bits is not None and s.bits <= 6:
                code = f"({a.code} << {amount})"
            else:
                code = f"shl({a.code}, {amount})"
            const = _literal(s)
            if a.bits is None:
                bits = None
            elif const is not None:
                bits = a.bits + const
            else:
                bits = a.bits + (1 << s.bits) - 1 if s.bits < 16 else None
            return CVal(code, bits)
        if op == ">>":
            a, s = self.value(left), self.value(right)
            amount = _need_exact(s)
            code = f"({_need_exact(a)} >> {amount})" if s.bits <= 6 else \
                f"shr({_need_exact(a)}, {amount})"
            return CVal(code, a.bits)
        if op in ("==", "!=", "<", ">", "<=", ">="):
            a, b = self.value(left), self.value(right)
            return CVal(f"({_need_exact(a)} {op} {_need_exact(b)})", 1)
        if op in ("and", "or"):
            a, b = self.value(left), self.value(right)
            c = "&&" if op == "and" else "||"
            return CVal(f"({_need_exact(a)} {c} {_need_exact(b)})", 1)
        if op == "not":
            return CVal(f"(!{_need_exact(self.value(right))})", 1)
        if op == "d2b":
            return CVal(f"({_need_exact(self.value(right))} != 0)", 1)
        if op == "b2d":
            a = self.value(right)
            return CVal(f"({_need_exact(a)} != 0)", 1)
        if op == "valid":
            expr = compile_expr(right, self.scope)
            if expr.kind != "header" or expr.ref.static is None:
                raise Untranslatable("validity of a header chosen at run time")
            return CVal(self.stmt.valid(expr.ref.static.index), 1)
        if op == "?":
            cond = self.truth(node["cond"])
            a, b = self.value(left), self.value(right)
            bits = max(a.bits, b.bits) if a.bits is not None and b.bits is not None else None
            return CVal(f"({cond} ? {a.code} : {b.code})", bits)
        raise Untranslatable(f"operator '{op}'")


def _literal(value: CVal) -> int | None:
    text = value.code
    if text.endswith("ULL") and text[:-3].isdigit():
        return int(text[:-3])
    return None


class ControlTranslator:
    """One control (the JSON pipeline) as a C function `name(S, f, v)` with gotos between
    the graph's nodes, plus the Python callbacks it calls."""

    def __init__(self, gen: "NativeGenerator", pipeline: Node, fn_name: str):
        self.gen = gen
        self.scope = gen.scope
        self.fn_name = fn_name
        self.graph = ControlCompiler(pipeline, gen.tables, gen.actions, gen.scope, False)
        self.pipeline = pipeline

    def compile(self) -> str:
        graph = self.graph
        init = self.pipeline.get("init_table").opt_str()
        graph.refs = graph._count_references(init)
        labels = {name: f"N{i}" for i, name in enumerate(graph.refs)}
        self.labels = labels
        body = [self._goto(init)]
        for name in labels:
            kind, node = graph.nodes[name]
            body.append(f"{labels[name]}:;")
            if kind == "conditional":
                body += self._conditional(node)
            elif kind == "action_call":
                body += self._action_call(node)
            else:
                body += self._table(name, node)
        return "\n".join([
            f"static PyObject *{self.fn_name}(PyObject *self, PyObject *const *args, "
            "Py_ssize_t nargs) {",
            "    PyObject *S, *f, *v, *p = NULL;",
            "    long a; int hit; (void)a; (void)hit;",
            f"    if (enter(args, nargs, &S, &f, &v)) return NULL;",
            "    p = empty_params(); Py_INCREF(p);",
        ] + ["    " + line for line in body] + [
            "done:",
            "    Py_DECREF(p);",
            "    Py_RETURN_NONE;",
            "fail:",
            "    Py_XDECREF(p);",
            "    return NULL;",
            "}"])

    def _goto(self, name: str | None) -> str:
        return "goto done;" if name is None else f"goto {self.labels[name]};"

    # ------------------------------------------------------------------------ node kinds
    def _conditional(self, node: Node) -> list[str]:
        stmt = _Statement(self.gen.vector_slots, None)
        try:
            cond = ExprTranslator(self.scope, stmt).truth(node["expression"])
            lines = stmt.wrap([f"hit = {cond} ? 1 : 0;"])
        except Untranslatable:
            code = boolean(compile_expr(node["expression"], self.scope))
            cb = self.gen.callback("f, v", [f"return 1 if {code} else 0"])
            lines = [f"if (call_truth({cb}, f, v, &hit)) goto fail;"]
        return lines + [f"if (hit) {self._goto(node.get('true_next').opt_str())}",
                        self._goto(node.get("false_next").opt_str())]

    def _action_call(self, node: Node) -> list[str]:
        action = self.gen.actions.get(node["action_id"].int())
        if action is None:
            raise Untranslatable("unknown action")
        return ["Py_SETREF(p, empty_params()); Py_INCREF(p);"] + \
            self._action_body(action) + [self._goto(node.get("next_node").opt_str())]

    def _action_body(self, action: ActionDef) -> list[str]:
        return self.gen.action_body(action)

    def _table(self, name: str, node: Node) -> list[str]:
        table = self.gen.tables[name]
        if table.profile is not None or table.with_counters or \
                table.direct_meters is not None:
            raise Untranslatable(f"table '{name}' has an action profile, direct counters or "
                                 "direct meters")
        nexts = self.graph._table_nexts(node)
        default = self.gen.state(self.scope.bind("dflt", table.default))
        lines = []
        if table.kind == "keyless":
            lines.append(f"hit = 0; if (result(PyList_GET_ITEM({default}, 0), &a, &p)) "
                         "goto fail;")
        else:
            lookup = self._lookup_code(table, node)
            lines += lookup + [
                "if (r == Py_None || r == NULL) {",
                f"    hit = 0; if (result(PyList_GET_ITEM({default}, 0), &a, &p)) "
                "{ Py_XDECREF(r); goto fail; }",
                "} else {",
                "    hit = 1; if (result(r, &a, &p)) { Py_DECREF(r); goto fail; }",
                "}",
                "Py_XDECREF(r); }"]
        per_action = not isinstance(nexts, tuple) and len(set(nexts)) > 1
        for i, spec in enumerate(table.actions):
            body = self._action_body(self.gen.actions[spec.action_id])
            if per_action:
                body = body + [self._goto(nexts[i])]
            lines += [f"if (a == {i}) {{"] + ["    " + b for b in body] + ["}"]
        if per_action:
            return lines + [self._goto(node.get("base_default_next").opt_str())]
        if isinstance(nexts, tuple):
            hit_next, miss_next = nexts
            if hit_next == miss_next:
                return lines + [self._goto(hit_next)]
            return lines + [f"if (hit) {self._goto(hit_next)}", self._goto(miss_next)]
        return lines + [self._goto(nexts[0] if nexts else
                                   node.get("base_default_next").opt_str())]

    def _lookup_code(self, table, node: Node) -> list[str]:
        """Lines that open a block with `PyObject *r` (a new reference, None or NULL on a
        miss) holding the table's lookup result."""
        key_code = self.graph._key_code(table, node)
        stmt = _Statement(self.gen.vector_slots, None)
        try:
            key = self._key_c(table, node, stmt)
        except Untranslatable:
            key = None
        if table.kind == "exact":
            target = self.gen.state(self.scope.bind("exact", table.exact))
            method = None
        else:
            target = self.gen.state(self.scope.bind("tbl", table))
            method = "lookup_lpm" if table.kind == "lpm" else "lookup_generic"
        lines = ["{ PyObject *r;"]
        if key is not None:
            get = stmt.wrap([f"key = {key};"])
            lines += ["{ u64 key;"] + get
            if method is None:
                lines.append(f"if (dict_get({target}, key, &r)) goto fail;")
            else:
                lines.append(f"if (call_lookup({target}, \"{method}\", key, &r)) goto fail;")
            lines.append("}")
        else:
            cb = self.gen.callback("f, v", [f"return {key_code}"])
            if method is None:
                lines.append(f"if (dict_get_obj({target}, {cb}, f, v, &r)) goto fail;")
            else:
                lines.append(f"if (call_lookup_obj({target}, \"{method}\", {cb}, f, v, &r)) "
                             "goto fail;")
        return lines

    def _key_c(self, table, node: Node, stmt: _Statement) -> str:
        """The packed key as one u64, built as controlgen builds it (`_key_code`)."""
        if table.key_width > 64:
            raise Untranslatable("a key wider than 64 bits")
        parts = []
        for i, knode in enumerate(node.get("key").items()):
            kf = table.key_fields[i]
            target = knode["target"]
            if kf.match_type == "valid":
                inst = self.scope.layout.header(target.str(), target)
                code = stmt.valid(inst.index)
            else:
                ref = self.scope.layout.field(target[0].str(), target[1].str(), target)
                if ref.is_valid_bit:
                    code = stmt.valid(ref.header.index)
                else:
                    if ref.signed or ref.width is None or ref.width > 64:
                        raise Untranslatable("a signed, varbit or wide key field")
                    code = stmt.slot(ref.slot)
                    if not ref.header.metadata:
                        code = f"({stmt.valid(ref.header.index)} ? {code} : 0ULL)"
            if knode.has("mask"):
                code = f"({code} & {knode['mask'].hexstr() & ((1 << kf.width) - 1)}ULL)"
            parts.append(f"({code} << {kf.shift})" if kf.shift else code)
        return " | ".join(parts) if parts else "0ULL"


class NativeGenerator:
    """Generates the C of a program's ingress and egress (see the module's docstring)."""

    def __init__(self, scope: CodeScope, tables: dict, actions: dict):
        self.scope = scope
        self.tables = tables
        self.actions = actions
        runs = scope.namespace.get("__vector_runs__") or {}
        self.vector_slots = frozenset(s for run in all_runs(runs)
                                      for s in range(run.first, run.first + run.count))
        self.state_names: list[str] = []
        self.callbacks: list[str] = []
        self._bodies: dict[int, list[str]] = {}

    def state(self, name: str) -> str:
        """C code for the state object bound to `name` in the namespace."""
        if name not in self.state_names:
            self.state_names.append(name)
        return f"PyTuple_GET_ITEM(S, {self.state_names.index(name)})"

    def callback(self, signature: str, lines: list[str]) -> str:
        name = f"_nx_{len(self.callbacks)}"
        self.callbacks.append("\n".join([f"def {name}({signature}):"] +
                                        ["    " + line for line in lines or ["pass"]]))
        return self.state(name)

    # ------------------------------------------------------------------------------ actions
    def action_body(self, action: ActionDef) -> list[str]:
        cached = self._bodies.get(action.action_id)
        if cached is None:
            cached = self._bodies[action.action_id] = self._compile_action(action)
        return cached

    def _compile_action(self, action: ActionDef) -> list[str]:
        prims = action.node.get("primitives").items()
        ops = [p["op"].str() for p in prims]
        scope = self.scope.for_action(action.param_widths)
        exit_check = [f"{{ u64 X; if (rd(f, {EXIT}, &X)) goto fail; if (X) goto done; }}"] \
            if "exit" in ops else []
        if any(op in ("_jump", "_jump_if_zero") for op in ops):
            body, _ = PrimitiveCompiler(scope, False).compile_body(prims)
            return [self._call(self.callback("f, v, p", body))] + exit_check
        groups = {g.start: g for g in lanes.find_groups(prims, scope.layout,
                                                        scope.namespace["__registers__"])} \
            if lanes.ENABLED else {}
        lines: list[str] = []
        at = 0
        while at < len(prims):
            group = groups.get(at)
            if group is not None:
                pc = PrimitiveCompiler(scope, False)
                body = lanes.VectorCompiler(group, scope, pc.tmp).compile()
                if body is not None:
                    lines.append(self._call(self.callback("f, v, p", body)))
                    at = group.end
                    continue
            lines += self._primitive(prims[at], scope, action.param_widths)
            at += 1
        return lines + exit_check

    @staticmethod
    def _call(cb: str) -> str:
        return f"if (call3({cb}, f, v, p)) goto fail;"

    def _primitive(self, prim: Node, scope: CodeScope, widths: list[int]) -> list[str]:
        try:
            return self._native_primitive(prim, scope, widths)
        except Untranslatable:
            pc = PrimitiveCompiler(scope, False)
            pc._index_cache = None
            pc._prelude = []
            body = pc.compile_primitive(prim)
            return [self._call(self.callback("f, v, p", pc._prelude + body))]

    def _native_primitive(self, prim: Node, scope: CodeScope, widths: list[int]) -> list[str]:
        op = prim["op"].str()
        params = prim.get("parameters").items()
        layout = scope.layout
        stmt = _Statement(self.vector_slots, widths)
        ex = ExprTranslator(scope, stmt)
        if op in ("assign", "modify_field") and len(params) == 2:
            slot, width = self._target(params[0], scope)
            value = ex.value(params[1])
            return stmt.wrap([f"if (wr(f, {slot}, {_masked(value, width)})) goto fail;"])
        if op == "register_read" and len(params) == 3:
            slot, width = self._target(params[0], scope)
            reg = self._named(params[1], "register_array", "__registers__")
            if not isinstance(reg.cells, list):
                raise Untranslatable("a register held in a bank")
            cells = self.state(scope.bind("reg", reg.cells))
            index = _need_exact(ex.value(params[2]))
            return stmt.wrap([f"{{ u64 i = {index}; if (i < {reg.size}ULL) {{ u64 x; "
                              f"if (rd({cells}, (Py_ssize_t)i, &x) || "
                              f"wr(f, {slot}, {_masked(CVal('x', reg.bitwidth), width)})) "
                              "goto fail; } }"])
        if op == "register_write" and len(params) == 3:
            reg = self._named(params[0], "register_array", "__registers__")
            if not isinstance(reg.cells, list) or reg.bitwidth > 64:
                raise Untranslatable("a register held in a bank, or wider than 64 bits")
            cells = self.state(scope.bind("reg", reg.cells))
            index = _need_exact(ex.value(params[1]))
            value = ex.value(params[2])
            return stmt.wrap([f"{{ u64 i = {index}; if (i < {reg.size}ULL && "
                              f"wr({cells}, (Py_ssize_t)i, {_masked(value, reg.bitwidth)})) "
                              "goto fail; }"])
        if op == "count" and len(params) == 2:
            counter = self._named(params[0], "counter_array", "__counters__")
            packets = self.state(scope.bind("cpk", counter.packets))
            nbytes = self.state(scope.bind("cby", counter.bytes))
            index = _need_exact(ex.value(params[1]))
            length = stmt.slot(layout.ingress_length)
            return stmt.wrap([f"{{ u64 i = {index}; if (i < {counter.size}ULL && "
                              f"(add_to({packets}, (Py_ssize_t)i, 1) || "
                              f"add_to({nbytes}, (Py_ssize_t)i, {length}))) goto fail; }}"])
        if op in ("mark_to_drop", "drop"):
            spec = layout.std("egress_spec")
            if spec is None:
                raise Untranslatable("no egress_spec")
            lines = [f"if (wr(f, {spec}, {DROP_PORT})) goto fail;"]
            mcast = layout.std("mcast_grp")
            if mcast is not None:
                lines.append(f"if (wr(f, {mcast}, 0)) goto fail;")
            return lines
        if op == "exit":
            return [f"if (wr(f, {EXIT}, 1)) goto fail;"]
        if op == "no_op":
            return []
        raise Untranslatable(f"primitive '{op}'")

    def _target(self, node: Node, scope: CodeScope) -> tuple[int, int]:
        kind, value = node.type_value()
        if kind != "field":
            raise Untranslatable("a destination other than a plain field")
        ref = scope.layout.field(value[0].str(), value[1].str(), value)
        if ref.is_valid_bit or ref.signed or ref.width is None or ref.width > 64 or \
                ref.slot in self.vector_slots:
            raise Untranslatable("a signed, varbit, wide or vector field")
        return ref.slot, ref.width

    def _named(self, node: Node, kind: str, registry: str):
        got, value = node.type_value()
        obj = self.scope.namespace[registry].get(value.str()) if got == kind else None
        if obj is None:
            raise Untranslatable(f"not a known {kind}")
        return obj


def _masked(value: CVal, width: int) -> str:
    if value.bits is not None and value.bits <= width:
        return value.code
    return f"({value.code} & {(1 << width) - 1}ULL)"


def generate(scope: CodeScope, pipelines: dict[str, Node], tables: dict,
             actions: dict) -> NativeControls:
    """C for the ingress and egress controls that can be translated (see the docstring)."""
    gen = NativeGenerator(scope, tables, actions)
    functions, refused = [], {}
    for name in ("ingress", "egress"):
        try:
            functions.append(ControlTranslator(gen, pipelines[name], f"ctl_{name}").compile())
        except Untranslatable as why:
            refused[name] = str(why)
    methods = "\n".join(f"    {{\"{name}\", (PyCFunction)(void(*)(void))ctl_{name}, "
                        "METH_FASTCALL, NULL}," for name in ("ingress", "egress")
                        if name not in refused)
    source = "\n\n".join(functions) + f"\n\nstatic PyMethodDef METHODS[] = {{\n{methods}\n" \
        "    {NULL, NULL, 0, NULL}\n};\n"
    fields = [int(n) for n in re.findall(r"\b(?:rd|wr)\(f, (\d+)", source)]
    flags = [int(n) for n in re.findall(r"\brd\(v, (\d+)", source)]
    return NativeControls(source, list(gen.state_names), "\n\n\n".join(gen.callbacks),
                          refused, max(fields, default=-1) + 1, max(flags, default=-1) + 1)
