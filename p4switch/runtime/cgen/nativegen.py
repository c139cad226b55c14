"""Ingress and egress controls as C: the same control graph, tables and primitives, with the
values of fields in C integers instead of Python ints.

Why: a contribution through ina.p4's ingress runs ~100 lines of generated Python, each costing
what the interpreter costs (docs/perf.md); in C the same work is a few hundred nanoseconds.

What stays the same: what Python code sees of the PHV is still the Python lists `f` and `v`;
the C code works on the PHV's words (phv/layout.py `word_slots`: unsigned fields of at most 64
bits, the hidden request slots, every validity flag) as C integers, and copies them to and
from the lists around every piece of Python it calls (`Phv`, `phv_out`/`phv_in` in
nativeprelude.py); tables are still their dicts, registers their lists (or banks), and counters
add to their uint64 array.
What C does natively: conditionals, exact, LPM and keyless tables (LPM over the table's own
levels, `Table.levels`, so every control-plane change is seen at once; ternary through the
table's own lookup method), and the primitives `assign` to an unsigned field of at most 64
bits, `register_read`/`register_write` of list registers, `count`, `mark_to_drop`, `exit`,
setValid/setInvalid of a header known at load time (`_validity_statement`),
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

from ..config import ConfigError, Node
from ..state.hashes import Crc, standard_algorithms
from ..phv.layout import EXIT, word_slots
from ..phv.vheaders import VectorRun, all_runs, segments
from ..pygen import lanes
from ..pygen.controlgen import ActionDef, ControlCompiler, key_parts
from ..pygen.exprgen import CodeScope, boolean, compile_expr
from ..pygen.primgen import DROP_PORT, PrimitiveCompiler
from .nativeexpr import (BANK_CTYPES, CVal, ExprTranslator, Untranslatable, _Block, _const, _masked,
                         calculation_groups, gated_lines, _need_exact)
from .nativereroll import ROLLED_LOOP, reroll


# the CRCs with fixed parameters, by algorithm name (the C of a hash by one of them)
STANDARD_CRCS = standard_algorithms()

# an action called with no data: `p` the empty tuple, and no decoded data (`PD`/`PN`)
SET_EMPTY_PARAMS = "Py_SETREF(p, empty_params()); Py_INCREF(p); PN = 0;"
# the locals every translated function opens with: the lists and the words of its PHV
PHV_LOCALS = ("PyObject *f = P->f, *v = P->v; u64 *PF = P->F, *PV = P->V; "
              "(void)f; (void)v; (void)PF; (void)PV;")


class ControlTranslator:
    """One control (the JSON pipeline) as a C function `name_impl(S, P)` over a PHV (`Phv`:
    its words as C integers beside its lists) with gotos between the graph's nodes, plus the
    Python callbacks it calls; nativemodule.py adds `name(S, f, v)` for Python."""

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
        rolled = any(line.lstrip().startswith(ROLLED_LOOP) for line in body)
        return "\n".join([
            ("LANE_LOOPS " if rolled else "")
            + f"static int {self.fn_name}_impl(PyObject *S, Phv *P) {{",
            "    " + PHV_LOCALS,
            "    PyObject *p = NULL;",
            "    long a; int hit; (void)a; (void)hit;",
            "    u64 PD[ANSWER_PARAMS]; int PN = 0; (void)PD; (void)PN;",
            "    p = empty_params(); Py_INCREF(p);",
        ] + ["    " + line for line in body] + [
            "done:",
            "    Py_DECREF(p);",
            "    return 0;",
            "fail:",
            "    Py_XDECREF(p);",
            "    return -1;",
            "}"])

    def _goto(self, name: str | None) -> str:
        return "goto done;" if name is None else f"goto {self.labels[name]};"

    # ------------------------------------------------------------------------ node kinds
    def _conditional(self, node: Node) -> list[str]:
        stmt = _Block(self.gen, None)
        try:
            cond = ExprTranslator(self.scope, stmt).truth(node["expression"])
            lines = stmt.wrap([f"hit = {cond} ? 1 : 0;"])
        except Untranslatable:
            code = boolean(compile_expr(node["expression"], self.scope))
            cb = self.gen.callback("f, v", [f"return 1 if {code} else 0"])
            lines = [f"if (call_truth({cb}, P, &hit)) goto fail;"]
        return lines + [f"if (hit) {self._goto(node.get('true_next').opt_str())}",
                        self._goto(node.get("false_next").opt_str())]

    def _action_call(self, node: Node) -> list[str]:
        action = self.gen.actions.get(node["action_id"].int())
        if action is None:
            raise Untranslatable("unknown action")
        return [SET_EMPTY_PARAMS] + self._action_body(action) + \
            [self._goto(node.get("next_node").opt_str())]

    def _action_body(self, action: ActionDef) -> list[str]:
        return self.gen.action_body(action)

    def _table(self, name: str, node: Node) -> list[str]:
        table = self.gen.tables[name]
        if table.profile is not None or table.with_counters or \
                table.direct_meters is not None or table.support_timeout:
            raise Untranslatable(f"table '{name}' has an action profile, direct counters, "
                                 "direct meters or ageing entries")
        nexts = self.graph._table_nexts(node)
        if table.kind == "keyless" and self.graph._fixed_default(table):
            return self._fixed_default_table(table, nexts)
        default = self.gen.state(self.scope.bind("dflt", table.default))
        lines = []
        if table.kind == "keyless":
            lines.append(f"hit = 0; PN = 0; if (result(PyList_GET_ITEM({default}, 0), &a, &p)) "
                         "goto fail;")
        else:
            answer = self._answer_code(table, node)
            if answer is not None:
                lines += answer + [
                    "hit = ans->got;",
                    "if (hit) {",
                    "    a = ans->a; Py_SETREF(p, Py_NewRef(ans->params));",
                    "    PN = ans->n; memcpy(PD, ans->d, sizeof(PD));     /* all: a constant size, inlined */",
                    "} else {",
                    f"    PN = 0; if (result(PyList_GET_ITEM({default}, 0), &a, &p)) goto fail;",
                    "}}"]
            else:
                lines += self._lookup_code(table, node) + [
                    "PN = 0;",
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

    def _fixed_default_table(self, table, nexts) -> list[str]:
        """A compiler-made keyless table whose action and data never change (p4c makes one
        per statement outside a table; ina.p4's ingress has 70 of 78): its action's body and
        the node after it (`_fixed_default_next`), as controlgen.py emits them, with no read
        of the table's default (a cold list, tuple and params per packet and table)."""
        index, params = table.initial_default
        body = self._action_body(self.gen.actions[table.actions[index].action_id])
        if params:
            fixed = self.gen.state(self.scope.bind("fixed", tuple(params)))
            lines = [f"Py_SETREF(p, Py_NewRef({fixed})); PN = 0;"]
        else:
            lines = [SET_EMPTY_PARAMS]
        return lines + body + [self._goto(self.graph._fixed_default_next(table, nexts))]

    def _answer_code(self, table, node: Node) -> list[str] | None:
        """Lines that open a block with `const Answer *ans` holding an exact or LPM table's
        answer for a key built in C (nativeprelude.py `table_answer`, `levels_answer`); None
        for a key only Python builds or a table of another kind."""
        if table.kind not in ("exact", "lpm"):
            return None
        stmt = _Block(self.gen, None)
        try:
            key = self._key_c(table, node, stmt)
        except Untranslatable:
            return None
        if table.kind == "lpm":
            # the table's own levels (Table.levels), walked in C as lookup_lpm walks them
            target = self.gen.state(self.scope.bind("levels", table.levels))
            function = "levels_answer"
        else:
            target = self.gen.state(self.scope.bind("exact", table.exact))
            function = "table_answer"
        return ["{ const Answer *ans;", "{ u64 key;"] + stmt.wrap([f"key = {key};"]) + [
            f"if ((ans = {function}({target}, key)) == NULL) goto fail;", "}"]

    def _lookup_code(self, table, node: Node) -> list[str]:
        """Lines that open a block with `PyObject *r` (a new reference, None or NULL on a
        miss) holding the table's lookup result (tables `_answer_code` does not take)."""
        key_code = self.graph._key_code(table, node)
        stmt = _Block(self.gen, None)
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
        method_c = "NULL" if method is None else f'"{method}"'
        lines = ["{ PyObject *r;"]
        if key is not None:
            lines += ["{ u64 key;"] + stmt.wrap([f"key = {key};"]) + [
                f"if (lookup({target}, {method_c}, key, &r)) goto fail;", "}"]
        else:
            cb = self.gen.callback("f, v", [f"return {key_code}"])
            lines.append(f"if (lookup_by({target}, {method_c}, {cb}, P, &r)) goto fail;")
        return lines

    def _key_c(self, table, node: Node, stmt: "_Block") -> str:
        """The packed key as one u64, built as controlgen builds it (`_key_code`)."""
        if table.key_width > 64:
            raise Untranslatable("a key wider than 64 bits")
        parts = []
        for kf, source, mask in key_parts(table, node, self.scope.layout):
            if kf.match_type == "valid":
                code = stmt.valid(source.index)
            elif source.is_valid_bit:
                code = stmt.valid(source.header.index)
            else:
                if source.signed or source.width is None or source.width > 64:
                    raise Untranslatable("a signed, varbit or wide key field")
                code = stmt.slot(source.slot)
                if not source.header.metadata:
                    code = f"({stmt.valid(source.header.index)} ? {code} : 0ULL)"
            if mask is not None:
                code = f"({code} & {mask}ULL)"
            parts.append(f"({code} << {kf.shift})" if kf.shift else code)
        return " | ".join(parts) if parts else "0ULL"


class NativeGenerator:
    """Generates the C of a program's ingress and egress (see the module's docstring)."""

    def __init__(self, scope: CodeScope, tables: dict, actions: dict,
                 calculations: dict | None = None):
        self.scope = scope
        self.tables = tables
        self.actions = actions
        self.calculations = calculations or {}      # name -> its JSON (hashes in C)
        self.definitions: dict[str, str] = {}       # C functions the controls call: CRCs
        runs = scope.namespace.get("__vector_runs__") or {}
        self.vector_slots = frozenset(s for run in all_runs(runs)
                                      for s in range(run.first, run.first + run.count))
        # the runs C reads and writes in place of their fields: unsigned, in arrays of their
        # own width or int64
        self.run_of = {s: run for run in all_runs(runs) if not run.signed and
                       (run.narrow or run.width <= 62) for s in run.slots}
        self.words = frozenset(word_slots(scope.layout, self.vector_slots))
        self.state_names: list[str] = []
        self.bank_specs: dict[str, tuple[int, int, str]] = {}  # bank -> rows, cols, NumPy type
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
        exit_check = [f"if (PF[{EXIT}]) goto done;"] \
            if "exit" in ops else []
        if any(op in ("_jump", "_jump_if_zero") for op in ops):
            body, _ = PrimitiveCompiler(scope, False).compile_body(prims)
            return [self._call(self.callback("f, v, p", body))] + exit_check
        groups = {g.start: g for g in lanes.find_groups(prims, scope.layout,
                                                        scope.namespace["__registers__"])} \
            if lanes.ENABLED else {}
        lines: list[str] = []
        block, body = _Block(self, action.param_widths), []

        def flush():
            nonlocal block, body
            lines.extend(block.wrap(body))
            block, body = _Block(self, action.param_widths), []

        at = 0
        while at < len(prims):
            group = groups.get(at)
            if group is not None:
                # a lane group: all of it as C, or all of it as the lane code's numpy
                saved = block.save()
                try:
                    group_body = []
                    for prim in prims[group.start:group.end]:
                        group_body += self._native_primitive(prim, scope, block)
                    body += reroll(group_body)      # (its lanes as one loop: nativereroll.py)
                    at = group.end
                    continue
                except Untranslatable:
                    block.restore(saved)
                pc = PrimitiveCompiler(scope, False)
                vector = lanes.VectorCompiler(group, scope, pc.tmp).compile()
                if vector is not None:
                    flush()
                    lines.append(self._call(self.callback("f, v, p", vector)))
                    at = group.end
                    continue
            prim = prims[at]
            at += 1
            saved = block.save()
            try:
                body += self._native_primitive(prim, scope, block)
                continue
            except Untranslatable:
                block.restore(saved)
            flush()
            try:
                lines += self._validity_statement(prim, scope)
                continue
            except Untranslatable:
                pass
            # a fresh compiler is outside any straight-line run: its index checks are inline
            python = PrimitiveCompiler(scope, False).compile_primitive(prim)
            lines.append(self._call(self.callback("f, v, p", python)))
        flush()
        return lines + exit_check

    @staticmethod
    def _call(cb: str) -> str:
        return f"if (call3({cb}, P, p)) goto fail;"

    def _native_primitive(self, prim: Node, scope: CodeScope, block: "_Block") -> list[str]:
        """C lines of one primitive inside `block`; Untranslatable if it has no C form."""
        op = prim["op"].str()
        params = prim.get("parameters").items()
        layout = scope.layout
        ex = ExprTranslator(scope, block)
        if op in ("assign", "modify_field") and len(params) == 2:
            slot, width = self._target(params[0], scope)
            value = ex.value(params[1])
            return [block.store(slot, width, value)]
        if op == "register_read" and len(params) == 3:
            slot, width = self._target(params[0], scope)
            reg = self._named(params[1], "register_array", "__registers__")
            if reg.bitwidth > 64:   # (its cells are Python ints of any size: no C form)
                raise Untranslatable("a register wider than 64 bits")
            index = _need_exact(ex.value(params[2]))
            if isinstance(reg.cells, list):
                cells = self.state(scope.bind("reg", reg.cells))
                return [f"{{ u64 i = {index}; if (i < {reg.size}ULL) {{ u64 x; "
                        f"if (rd({cells}, (Py_ssize_t)i, &x)) goto fail; "
                        f"{block.store(slot, width, CVal('x', reg.bitwidth))} }} }}"]
            cell = self._bank_cell(reg, block)
            return [f"{{ u64 i = {index}; if (i < {reg.size}ULL) {{ "
                    f"{block.store(slot, width, CVal(f'((u64){cell})', reg.bitwidth))} }} }}"]
        if op == "register_write" and len(params) == 3:
            reg = self._named(params[0], "register_array", "__registers__")
            if reg.bitwidth > 64:
                raise Untranslatable("a register wider than 64 bits")
            index = _need_exact(ex.value(params[1]))
            value = _masked(ex.value(params[2]), reg.bitwidth)
            if isinstance(reg.cells, list):
                cells = self.state(scope.bind("reg", reg.cells))
                return [f"{{ u64 i = {index}; if (i < {reg.size}ULL && "
                        f"wr({cells}, (Py_ssize_t)i, {value})) goto fail; }}"]
            cell = self._bank_cell(reg, block)
            ctype = BANK_CTYPES[reg.cells.array.dtype.str[1:]]
            return [f"{{ u64 i = {index}; if (i < {reg.size}ULL) {cell} = ({ctype}){value}; }}"]
        if op == "count" and len(params) == 2:
            counter = self._named(params[0], "counter_array", "__counters__")
            index = _need_exact(ex.value(params[1]))
            length = block.slot(layout.ingress_length)
            packets = block.array_cell(counter.cells, 0, "i")    # (uint64: wraps as BMv2's)
            nbytes = block.array_cell(counter.cells, 1, "i")
            return [f"{{ u64 i = {index}; if (i < {counter.size}ULL) {{ {packets} += 1; "
                    f"{nbytes} += {length}; }} }}"]
        if op == "modify_field_with_hash_based_offset" and len(params) == 4:
            slot, width = self._target(params[0], scope)
            base = _need_exact(ex.value(params[1]))
            size = _need_exact(ex.value(params[3]))
            crc, groups = self._crc_calculation(params[2], block)
            lines = ["{ unsigned char HB[%d] = {0}; unsigned HN = 0;"
                     % max(1, (sum(w for _, parts in groups for _, w in parts) + 7) // 8)]
            lines += gated_lines(groups, block, lambda code, w: f"hb_push(HB, &HN, {code}, {w});")
            # primexterns' _hash_offset: base + (h mod size) in 64 bits, a size of 0 taken as 1
            lines += [f"u64 HH = {crc}(HB, (HN + 7) / 8), HBASE = {base}, HSIZE = {size};",
                      "u64 HV = HH % (HSIZE ? HSIZE : 1) + HBASE;",
                      block.store(slot, width, CVal("HV", None)), "}"]
            return lines
        if op in ("mark_to_drop", "drop"):
            spec, mcast = layout.drop_slots(params, params[0] if params else None)
            if spec is None:
                raise Untranslatable("no egress_spec")
            lines = [block.store(spec, 64, _const(DROP_PORT))]
            if mcast is not None:
                lines.append(block.store(mcast, 64, _const(0)))
            return lines
        if op == "exit":
            return [block.store(EXIT, 1, _const(1))]
        if op == "no_op":
            return []
        raise Untranslatable(f"primitive '{op}'")

    def _validity_statement(self, prim: Node, scope: CodeScope) -> list[str]:
        """setValid/add_header or setInvalid/remove_header of a header known at load time, as
        C lines of their own (between blocks: the words in PF and PV, every other slot in the
        list `f`), doing what the Python primitive does (primgen.py `_p_add_header`): a valid
        header is left as it is; an invalid one becomes valid with its fields 0 (a vector run:
        the int 0 in its first slot) and its union's other members invalid. Untranslatable
        for anything else (then the Python primitive runs as a callback)."""
        op = prim["op"].str()
        params = prim.get("parameters").items()
        if op not in ("add_header", "setValid", "remove_header", "setInvalid") \
                or len(params) != 1:
            raise Untranslatable(f"primitive '{op}'")
        try:
            expr = compile_expr(params[0], scope)
        except ConfigError as exc:      # (the Python primitive reports it, as it always has)
            raise Untranslatable(str(exc)) from None
        inst = expr.ref.static if expr.kind == "header" else None
        if inst is None:
            raise Untranslatable("a header chosen at run time")
        if op in ("remove_header", "setInvalid"):
            return [f"PV[{inst.index}] = 0;"]
        runs = scope.namespace.get("__vector_runs__", {}).get(inst.index)
        slots = []
        for seg in segments(runs) if runs else [inst]:
            if isinstance(seg, VectorRun):
                slots.append(seg.first)
            else:
                slots += range(seg.base, seg.base + len(seg.htype.fields))
        body = [f"PV[{inst.index}] = 1;"]
        body += [f"PF[{slot}] = 0;" if slot in self.words else
                 f"if (list_zero(f, {slot})) goto fail;" for slot in slots]
        if inst.union:
            body += [f"PV[{other.index}] = 0;"
                     for other in scope.layout.unions[inst.union].members.values()
                     if other is not inst]
        return [f"if (!PV[{inst.index}]) {{"] + ["    " + line for line in body] + ["}"]

    def _crc_calculation(self, node: Node, block: "_Block") -> tuple[str, list]:
        """(the C function of a calculation's CRC, its inputs' groups) for a standard CRC
        (whose parameters never change: the `_custom` ones are the control plane's to set)."""
        kind, value = node.type_value()
        calc = self.calculations.get(value.str()) if kind == "calculation" else None
        if calc is None:
            raise Untranslatable("not a known calculation")
        algo = calc["algo"].str()
        crc = STANDARD_CRCS.get(algo)
        if not isinstance(crc, Crc) or algo.endswith("_custom"):
            raise Untranslatable(f"a hash by {algo}")
        name = f"crc_{algo}"
        if name not in self.definitions:
            self.definitions[name] = crc.c_source(name)
        return name, calculation_groups(calc, self.scope.layout, block)

    def _bank_cell(self, reg, block: "_Block") -> str:
        cells = reg.cells
        array = getattr(cells, "array", None)
        if array is None or getattr(cells, "column", None) is None or array.ndim != 2 or \
                array.dtype.str[1:] not in BANK_CTYPES or reg.bitwidth > 64:
            raise Untranslatable("a register that is neither a list nor a bank column")
        return block.bank_cell(reg, "i")

    def _target(self, node: Node, scope: CodeScope) -> tuple[int, int]:
        kind, value = node.type_value()
        if kind != "field":
            raise Untranslatable("a destination other than a plain field")
        ref = scope.layout.field(value[0].str(), value[1].str(), value)
        if ref.is_valid_bit or ref.signed or ref.width is None or ref.width > 64:
            raise Untranslatable("a signed, varbit or wide field")
        if ref.slot in self.vector_slots and ref.slot not in self.run_of:
            raise Untranslatable("a lane vector of a kind C does not hold")
        return ref.slot, ref.width

    def _named(self, node: Node, kind: str, registry: str):
        got, value = node.type_value()
        obj = self.scope.namespace[registry].get(value.str()) if got == kind else None
        if obj is None:
            raise Untranslatable(f"not a known {kind}")
        return obj
