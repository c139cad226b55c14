"""Lowering, part 8: the whole v1model program to one BMv2 JSON document (p4c's layout).

`LoweringContext` is the shared state of one lowering (layout, actions, externs, naming); the
stage-specific lowerers (parser, controls, tables, statements, externs) use it. `lower_program`
finds the `V1Switch` package instance, binds the pipeline parameters to storage and assembles
the JSON.
"""

from __future__ import annotations

import copy
import os

from . import ast as A
from .bmv2_forms import FormError, check_document
from .constfold import fold
from .errors import Location
from .lower_control import ControlInstance, ControlLowerer
from .lower_expr import Bound, Env, ExprLowerer, Unsupported, bind_constructor_arguments
from .lower_externs import ExternLowering
from .lower_parser import ParserInstance, ParserLowerer
from .lower_stmt import ExternRef, StatementLowerer
from .storage import FieldRef, HeaderInst, Layout, RuntimeData, StorageUnsupported, StructStore
from .types import BOOL, MethodT, NamedT, StructT, bit_width

FIELD_ALIASES = [
    ["queueing_metadata.enq_timestamp", ["standard_metadata", "enq_timestamp"]],
    ["queueing_metadata.enq_qdepth", ["standard_metadata", "enq_qdepth"]],
    ["queueing_metadata.deq_timedelta", ["standard_metadata", "deq_timedelta"]],
    ["queueing_metadata.deq_qdepth", ["standard_metadata", "deq_qdepth"]],
    ["intrinsic_metadata.ingress_global_timestamp", ["standard_metadata", "ingress_global_timestamp"]],
    ["intrinsic_metadata.egress_global_timestamp", ["standard_metadata", "egress_global_timestamp"]],
    ["intrinsic_metadata.mcast_grp", ["standard_metadata", "mcast_grp"]],
    ["intrinsic_metadata.egress_rid", ["standard_metadata", "egress_rid"]],
    ["intrinsic_metadata.priority", ["standard_metadata", "priority"]],
]
EXTERN_KINDS = {"counter", "direct_counter", "meter", "direct_meter", "register", "action_profile",
                "action_selector", "Checksum16"}
INCLUDE_DIR = os.path.join(os.path.dirname(os.path.abspath(__file__)), "p4include")


def _qualified_local(decl) -> str:
    name = A.name_annotation(decl.annotations)
    return name if name is not None else decl.name


class LoweringContext:
    def __init__(self, program: A.Program, checker, reporter, main_file: str):
        self.program = program
        self.checker = checker
        self.reporter = reporter
        self.main_file = main_file
        self.file_base = os.path.splitext(os.path.basename(main_file))[0]
        self.layout = Layout()
        self.exprs = ExprLowerer(self)
        self.externs = ExternLowering(self)
        self.global_env = Env()
        self.global_env.prefix = ""
        self.top_level = set(program.decls)
        self.actions: list = []
        self.action_keys: dict = {}
        self.action_names: set = set()
        self.table_names: set = set()
        self.node_counter = 0
        self.in_checksum_control = False
        self.digests: list = []
        self.value_sets: list = []
        self.action_profiles: dict = {}
        self.field_list_fields: dict = {}
        self.action_meta: dict = {}  # action id -> (decl, qualified name) for P4Info
        self.built_tables: list = []
        self.extern_refs: dict = {}  # JSON name -> ExternRef
        self.block_paths: dict = {}  # a control's instance prefix -> (its block path, its decl)
        self.action_places: dict = {}  # a control's own action's name -> its block path
        self.exit_copy_outs: list = []  # the enclosing inlined sub-controls' (lower_control)
        self.call_results: dict = {}  # function Call node -> temporary holding its result  # (TableRef, table JSON, [(ActionDecl, (id, name))])
        self.p4runtime_refusals: list = []  # Unsupported: fine in BMv2 JSON, not in P4Info
        self.anonymous_profiles = 0
        self.profiles_numbered = 0

    # ---- scratch lowering -------------------------------------------------------------------
    def snapshot(self):
        """Everything a trial lowering may add, so it can be undone (see lower_calls)."""
        ext = self.externs
        return (self.layout.snapshot(), dict(self.call_results), len(self.actions),
                set(self.action_names), dict(self.action_keys), len(ext.calculations),
                len(ext.field_lists), len(ext.learn_lists), len(self.digests), ext.empty_list_id)

    def restore(self, snap) -> None:
        (layout, calls, n_actions, names, keys, n_calc, n_fl, n_ll, n_dig, empty) = snap
        self.layout.restore(layout)
        self.call_results = calls
        del self.actions[n_actions:]
        self.action_names = names
        self.action_keys = keys
        ext = self.externs
        del ext.calculations[n_calc:]
        del ext.field_lists[n_fl:]
        del ext.learn_lists[n_ll:]
        del self.digests[n_dig:]
        ext.empty_list_id = empty

    # ---- naming ---------------------------------------------------------------------------
    def anonymous_profile_name(self) -> str:
        """A placeholder for an implementation instantiated in a table property without @name;
        `name_anonymous_profiles` gives it p4c's name once the tables are in order."""
        self.anonymous_profiles += 1
        return f"$anonymous_profile_{self.anonymous_profiles}"

    def name_anonymous_profiles(self, tables: list[dict]) -> None:
        """p4c's names, action_profile_<n> (a selector's too), the first n not taken, in the
        order of the JSON's tables."""
        taken = {k for k in self.action_profiles if not k.startswith("$")} | set(self.extern_refs)
        for table in tables:
            placeholder = table.get("action_profile") or ""
            if not placeholder.startswith("$"):
                continue
            n = 0
            while f"action_profile_{n}" in taken:
                n += 1
            name = f"action_profile_{n}"
            taken.add(name)
            entry, pipe, inst = self.action_profiles.pop(placeholder)
            entry["name"] = name
            self.action_profiles[name] = (entry, pipe, inst)
            for other in tables:
                if other.get("action_profile") == placeholder:
                    other["action_profile"] = name

    def profiles_in_table_order(self, tables: list[dict], pipeline: str) -> list[dict]:
        """A pipeline's action profiles in the order its tables use them, numbered on from the
        previous pipeline's, as p4c lists them."""
        order = list(dict.fromkeys(t["action_profile"] for t in tables
                                   if t.get("action_profile")))
        order += [k for k, (_, pipe, _) in self.action_profiles.items()
                  if pipe == pipeline and k not in order]
        entries = [self.action_profiles[k][0] for k in order]
        for entry in entries:
            entry["id"] = self.profiles_numbered
            self.profiles_numbered += 1
        return entries

    def qualified(self, prefix: str, decl) -> str:
        local = _qualified_local(decl)
        if local.startswith("."):
            return local[1:]
        return f"{prefix}.{local}" if prefix else local

    def prefix_of(self, env: Env) -> str:
        while env is not None:
            if hasattr(env, "prefix"):
                return env.prefix
            env = env.parent
        return ""

    def node_name(self) -> str:
        self.node_counter += 1
        return f"node_{self.node_counter + 1}"

    def unique_table_name(self, base: str) -> str:
        name, n = base, 0
        while name in self.table_names:
            name = f"{base}_{n}"
            n += 1
        self.table_names.add(name)
        return name

    def synth_action_name(self, stmt) -> str:
        base = f"{self.file_base}{stmt.loc.line}"
        if stmt.loc.file != self.main_file:
            base = f"{os.path.splitext(os.path.basename(stmt.loc.file))[0]}{stmt.loc.line}"
        return base

    def key_name(self, k: A.KeyElement) -> str:
        name = A.name_annotation(k.annotations)
        return name if name is not None else expr_text(k.expr)

    # ---- source info ------------------------------------------------------------------------
    def source_info(self, node, fragment: str | None = None) -> dict | None:
        loc: Location = node.loc
        if loc.file.startswith(INCLUDE_DIR):
            return None
        if fragment is None:
            fragment = self.fragment(node)
        return {"filename": os.path.basename(loc.file) if os.path.isabs(loc.file) else loc.file,
                "line": loc.line, "column": loc.col - 1, "source_fragment": fragment}

    def fragment(self, node, multi: bool = False, expr_only: bool = False,
                 first_arg_only: bool = False) -> str:
        line = self.reporter.sources.line(node.loc.file, node.loc.line) or ""
        text = line[node.loc.col - 1:]
        depth = 0
        end = len(text)
        for i, c in enumerate(text):
            if c in "([{":
                depth += 1
            elif c in ")]}":
                depth -= 1
                if depth < 0:
                    end = i
                    break
            elif c == ";" and depth == 0:
                end = i
                break
            elif c == "," and depth == 1 and first_arg_only:
                return text[:i + 1].strip() + " ..."
        frag = text[:end].strip()
        if expr_only and frag.endswith(")") and frag.count("(") < frag.count(")"):
            frag = frag[:-1]
        if end == len(text) and depth > 0:
            frag += " ..."
        if multi:
            frag += "; ..."
        return frag

    # ---- storage ----------------------------------------------------------------------------
    def declare_local(self, decl: A.VarDecl, env: Env) -> None:
        if env.lookup(decl) is not None:
            return
        t = decl.type
        env.bind(decl, self.layout.allocate(t, decl.name, decl.name))

    def decl_env(self, decl, env: Env) -> Env:
        return env

    def bind_instance(self, decl: A.InstanceDecl, env: Env, prefix: str) -> None:
        t = decl.type
        if isinstance(t, NamedT) and t.category == "extern":
            kind = t.name
            if kind not in EXTERN_KINDS:
                raise Unsupported(decl, f"extern '{kind}' is not supported by this back end")
            name = self.qualified(prefix, decl)
            if name in self.extern_refs:  # a control instance applied again: the same extern
                env.bind(decl, self.extern_refs[name])
                return
            ref = ExternRef(name, kind, decl)
            env.bind(decl, ref)
            self.extern_refs[name] = ref
            if kind in ("action_profile", "action_selector"):
                return
            self.externs.declare_instance(decl, name, kind)
        elif isinstance(t, NamedT) and t.category == "control":
            env.bind(decl, ControlInstance(t.decl, self.qualified(prefix, decl), decl.args, env))
        elif isinstance(t, NamedT) and t.category == "parser":
            env.bind(decl, ParserInstance(t.decl, self.qualified(prefix, decl), decl.args, env))
        else:
            raise Unsupported(decl, f"cannot instantiate {t.describe()} here")

    def field_list_members(self, index: int) -> list:
        return [f.json() for f in self.field_list_fields.get(index, [])]

    def collect_field_lists(self, storage, t) -> None:
        if not isinstance(storage, StructStore):
            return
        for fname, ft, anns in t.fields:
            ann = A.find_annotation(anns, "field_list")
            sub = storage.fields[fname]
            if ann is not None:
                for arg in ann.args:
                    idx = fold(arg) if isinstance(arg, A.Expr) else None
                    if not isinstance(idx, int) or isinstance(idx, bool):
                        raise Unsupported(ann, "@field_list takes integer field list ids")
                    if isinstance(sub, FieldRef):
                        self.field_list_fields.setdefault(idx, []).append(sub)
            if isinstance(ft, StructT) and ft.kind == "struct":
                self.collect_field_lists(sub, ft)

    def value_set(self, decl: A.ValueSetDecl, prefix: str) -> str:
        """A parse value set: local name in the JSON, parser-qualified name in P4Info."""
        name = decl.name
        width = bit_width(decl.type)
        self.value_sets.append({"name": name, "id": len(self.value_sets),
                                "compressed_bitwidth": width, "decl": decl,
                                "p4info_name": self.qualified(prefix, decl)})
        return name

    def action_profile(self, inst: ExternRef, selector_inputs, control) -> str:
        if inst.name in self.action_profiles:
            return inst.name
        args = [a.value for a in inst.decl.args]
        entry = {"name": inst.name, "id": len(self.action_profiles),
                 "source_info": self.source_info(inst.decl, fragment=inst.decl.name),
                 "max_size": fold(args[1] if inst.kind == "action_selector" else args[0])}
        if inst.kind == "action_selector":
            algo = self.externs.algorithm(args[0])
            entry["selector"] = {"algo": algo, "input": selector_inputs}
        self.action_profiles[inst.name] = (entry, control.pipeline, inst)
        return inst.name

    # ---- actions ----------------------------------------------------------------------------
    def global_action(self, name: str):
        for d in self.program.decls:
            if isinstance(d, A.ActionDecl) and d.name == name:
                return d
        return None

    def add_action(self, base: str, runtime_data: list, prims: list, unique: bool = True):
        _land_exit_jumps(prims)
        name = base
        if unique:
            n = 0
            while name in self.action_names:
                name = f"{base}_{n}"
                n += 1
        self.action_names.add(name)
        action_id = len(self.actions)
        self.actions.append({"name": name, "id": action_id, "runtime_data": runtime_data,
                             "primitives": prims})
        return action_id, name

    def action_for(self, act: A.ActionDecl, env: Env, bound_args=None):
        prefix = "" if act in self.top_level else self.prefix_of(env)
        key = (act, prefix, id(bound_args) if bound_args else None,
               tuple(id(c) for c in self.exit_copy_outs))   # an exit's copy-outs differ
        if key in self.action_keys:
            return self.action_keys[key]
        name = self.qualified(prefix, act)
        base = Env(env)
        directional = [p for p in act.params if p.direction]
        data_params = [p for p in act.params if not p.direction]
        runtime_data = []
        for i, p in enumerate(data_params):
            base.bind(p, RuntimeData(i, p.type))
            runtime_data.append({"name": p.name, "bitwidth": 1 if p.type == BOOL else bit_width(p.type)})
        prims: list = []
        lowerer = StatementLowerer(self, prims)
        # the directional arguments an actions list gives (`a(hdr.x)`) are passed as a call's
        # are, copy-in/copy-out, when the action runs: calls in them first, in order
        bound = list(bound_args or [])[:len(directional)]
        for a in bound:
            lowerer.hoist_calls(a.value, env, a)
        lowerer.run_action(act, directional[:len(bound)], bound, env, base, act)
        action_id, _ = self.add_action(name, runtime_data, prims, unique=False)
        self.action_keys[key] = (action_id, name)
        self.action_meta[action_id] = (act, name)
        return action_id, name

    def action_data(self, param: A.Param, value: A.Expr) -> str:
        v = fold(value)
        if v is None:
            raise Unsupported(value, "action data here must be a compile-time constant")
        width = 1 if param.type == BOOL else bit_width(param.type)
        return hex(int(v) & ((1 << width) - 1))  # p4c writes action data unpadded


def _land_exit_jumps(prims: list) -> None:
    """The `_jump` after an `exit` goes to the end of the whole action (dropped when it is the
    action's last primitive: a jump landing on its index then lands on the end, the same)."""
    if prims and prims[-1]["op"] == "_jump" and prims[-1]["parameters"][0].get("to_action_end"):
        prims.pop()
    for p in prims:
        if p["op"] == "_jump" and p["parameters"][0].get("to_action_end"):
            p["parameters"][0] = {"type": "hexstr", "value": hex(len(prims))}


def expr_text(e) -> str:
    """P4 source text of a (key) expression, as p4c prints key names."""
    if getattr(e, "display", None) is not None:  # rewritten by the front end: the source form
        return expr_text(e.display)
    if isinstance(e, A.Name):
        return e.name
    if isinstance(e, A.Member):
        field = _field_name(e)   # a struct field's @name; a leading '.' drops what is before
        return field[1:] if field.startswith(".") else f"{expr_text(e.expr)}.{field}"
    if isinstance(e, A.Index):
        return f"{expr_text(e.expr)}[{expr_text(e.index)}]"
    if isinstance(e, A.IntLit):   # no width, in the base it was written in (`0xffff`)
        prefix = {16: "0x", 2: "0b", 8: "0o"}.get(e.base, "")
        digits = format(abs(e.value), {16: "x", 2: "b", 8: "o"}.get(e.base, "d"))
        return ("-" if e.value < 0 else "") + prefix + digits
    if isinstance(e, A.Slice):
        return f"{expr_text(e.expr)}[{expr_text(e.hi)}:{expr_text(e.lo)}]"
    if isinstance(e, A.Call) and isinstance(e.func, A.Member) and e.func.name == "isValid":
        return f"{expr_text(e.func.expr)}.$valid$"  # p4c's name for a validity key
    if isinstance(e, A.Call):
        return f"{expr_text(e.func)}()"
    if isinstance(e, A.Binary):
        return f"{expr_text(e.left)} {e.op} {expr_text(e.right)}"
    return "key"


def _field_name(e: A.Member) -> str:
    """The name p4c gives a member in a key's name: its field's @name if it has one."""
    for fname, _, anns in getattr(getattr(e.expr, "type", None), "fields", None) or ():
        if fname == e.name:
            name = A.name_annotation(anns)
            return name if name is not None else e.name
    return e.name


# ---- the program ------------------------------------------------------------------------------
def find_main(program: A.Program, reporter):
    main = None
    for d in program.decls:
        if isinstance(d, A.InstanceDecl) and d.name == "main":
            main = d
    if main is None:
        raise reporter.error(program.loc, "the program has no 'main' package instance "
                                          "(e.g. V1Switch(...) main;)")
    if not (isinstance(main.type, NamedT) and main.type.name == "V1Switch"):
        raise reporter.error(main.loc, "inaemu compiles v1model programs: 'main' must be a V1Switch")
    if len(main.args) != 6:
        raise reporter.error(main.loc, "V1Switch takes 6 arguments")
    blocks = []
    for a in main.args:
        v = a.value
        decl = None
        if isinstance(v, A.Call) and isinstance(v.func, A.Name):
            decl = v.func.decl
        elif isinstance(v, A.Name) and isinstance(v.decl, A.InstanceDecl):
            decl = v.decl.type.decl if isinstance(v.decl.type, NamedT) else None
            v = v.decl
        if not isinstance(decl, (A.ParserDecl, A.ControlDecl)) or getattr(decl, "is_type", False):
            raise reporter.error(v.loc, "V1Switch arguments must be parser/control instances")
        if decl.type_params:
            raise reporter.error(v.loc, f"generic {type(decl).__name__[:-4].lower()}s such as "
                                        f"'{decl.name}' are not supported by inaemu's front end")
        blocks.append((decl, v.args))
    return main, blocks


def lower_program(program: A.Program, checker, reporter, main_file: str,
                  tracker=None) -> tuple[dict, LoweringContext]:
    ctx = LoweringContext(program, checker, reporter, main_file)
    ctx.tracker = tracker
    try:
        return _lower(ctx, program, reporter), ctx
    except Unsupported as exc:
        raise reporter.error(exc.node.loc, exc.message) from None


def _complete_arguments(call: A.Call, params: list) -> None:
    """One argument per parameter, in parameter order: named arguments (`a(q = 1, p = 5)`)
    go to their parameter, a missing one takes the parameter's default value."""
    if not any(a.name for a in call.args) and len(call.args) >= len(params):
        return
    by_name = {a.name: a for a in call.args if a.name}
    positional = [a for a in call.args if not a.name]
    out = []
    for i, p in enumerate(params):
        if i < len(positional):
            out.append(positional[i])
        elif p.name in by_name:
            out.append(by_name[p.name])
        elif p.default is not None:
            value = p.default
            if not hasattr(value, "type") and isinstance(value, (A.IntLit, A.BoolLit)):
                value = copy.copy(value)  # an unsized default literal takes the parameter's type
                value.type = p.type
            out.append(A.Argument(value.loc, value))
        else:
            return  # the checker reports what is wrong
    call.args[:] = out


def _order_action_arguments(node, seen=None) -> None:
    """Arguments of action and function calls (also in tables' actions, default actions and
    entries) completed and in parameter order (see _complete_arguments)."""
    seen = set() if seen is None else seen
    if id(node) in seen:
        return
    seen.add(id(node))
    if isinstance(node, A.Call):
        callee = getattr(node, "callee", None)
        if isinstance(node.func, A.Name) and \
                isinstance(getattr(node.func, "decl", None), A.ActionDecl):
            _complete_arguments(node, node.func.decl.params)
        elif isinstance(callee, A.FunctionDecl):
            _complete_arguments(node, callee.params)
        elif isinstance(getattr(node.func, "type", None), MethodT) and \
                node.func.type.owner in ("control", "parser"):   # Sub.apply(...)
            _complete_arguments(node, node.func.type.decl.params)
    for attr, child in vars(node).items():
        if attr in ("decl", "callee", "constructs", "type"):
            continue
        for item in (child if isinstance(child, (list, tuple)) else [child]):
            if isinstance(item, A.Node):
                _order_action_arguments(item, seen)
            elif isinstance(item, dict):
                for v in item.values():
                    if isinstance(v, A.Node):
                        _order_action_arguments(v, seen)


def _lower(ctx: LoweringContext, program, reporter) -> dict:
    _order_action_arguments(program)
    main, blocks = find_main(program, reporter)
    parser, verify, ingress, egress, compute, deparser = (decl for decl, _ in blocks)
    # the top-level instances are the first level of p4c's block tree, in program order
    top_paths = {d: (k,) for k, d in enumerate(
        d for d in program.decls if isinstance(d, A.InstanceDecl))}
    if len(parser.params) != 4:
        raise Unsupported(parser, "the V1Switch parser takes 4 parameters")
    h_type, m_type = parser.params[1].type, parser.params[2].type
    sm_type = ctx.checker.decl_type(ctx.checker.top.lookup("standard_metadata_t"))
    check_signatures(main, [parser, verify, ingress, egress, compute, deparser],
                     _package_directions(main, ctx.checker),
                     h_type, m_type, sm_type)
    layout = ctx.layout
    def allocate_field(struct: StructT, fname: str, ft):
        try:
            return layout.allocate(ft, fname, f"{struct.name}.{fname}")
        except StorageUnsupported as exc:   # located at the field's declaration
            decl = getattr(struct, "decl", None)
            field = next((f for f in getattr(decl, "fields", []) if f.name == fname), decl)
            raise Unsupported(field or parser, f"field '{fname}' of {struct.name}: {exc}") \
                from None

    if not isinstance(h_type, StructT) or h_type.kind != "struct":
        hdr = layout.allocate(h_type, "hdr", "hdr")
    else:
        hdr = StructStore(h_type, {})
        for fname, ft, _ in h_type.fields:
            hdr.fields[fname] = allocate_field(h_type, fname, ft)
    meta = StructStore(m_type, {})
    for fname, ft, _ in m_type.fields:
        meta.fields[fname] = allocate_field(m_type, fname, ft)
    ctx.collect_field_lists(meta, m_type)
    sm = HeaderInst("standard_metadata", parser.params[3].type, True)

    def env_for(position, values):
        """The environment of the package's argument at `position`: its parameters bound to
        `values`, its constructor parameters to the arguments it was instantiated with."""
        decl, constructor_args = blocks[position]
        env = Env(ctx.global_env)
        env.prefix = decl.name
        env.path = top_paths[main] + (position,)
        bind_constructor_arguments(decl, constructor_args, ctx.global_env, env)
        for p, v in zip(decl.params, values):
            env.bind(p, v)
        return env

    ctx.hdr, ctx.meta = hdr, meta
    for d in program.decls:  # extern instances declared at the top level
        if isinstance(d, A.InstanceDecl) and d is not main and \
                isinstance(d.type, NamedT) and d.type.category == "extern":
            ctx.bind_instance(d, ctx.global_env, "")
            bound = ctx.global_env.lookup(d)
            if getattr(bound, "block_path", "none") is None:
                bound.block_path = top_paths[d]
    parser_lowerer = ParserLowerer(ctx)
    init_state = parser_lowerer.lower(parser, env_for(0, [None, hdr, meta, sm]))
    pipelines = []
    for pid, (name, decl) in enumerate((("ingress", ingress), ("egress", egress))):
        lowerer = ControlLowerer(ctx, name)
        init = lowerer.lower(decl, env_for(2 + pid, [hdr, meta, sm]), decl.name)
        lowerer.tables.reverse()
        lowerer.conditionals.reverse()
        ctx.name_anonymous_profiles(lowerer.tables)
        pipelines.append({"name": name, "id": pid, "source_info": ctx.source_info(decl, fragment=decl.name),
                          "init_table": init, "tables": lowerer.tables,
                          "action_profiles": ctx.profiles_in_table_order(lowerer.tables, name),
                          "conditionals": lowerer.conditionals})
    ctx.in_checksum_control = True
    for position, decl in ((4, compute), (1, verify)):
        env = env_for(position, [hdr, meta])
        prims: list = []
        lowerer = StatementLowerer(ctx, prims)
        for st in decl.apply.stmts:
            lowerer.stmt(st, env)
        if prims:
            raise Unsupported(decl, f"{decl.name}: only verify_checksum/update_checksum calls are "
                                    "supported in the checksum controls")
    ctx.in_checksum_control = False
    order = deparser_order(ctx, deparser, env_for(5, [None, hdr]))
    for table_list in (p["tables"] for p in pipelines):
        for t in table_list:
            if t["direct_meters"]:
                meter = ctx.externs.find(ctx.externs.meter_arrays, t["direct_meters"])
                target = ctx.externs.direct_meter_targets.get(t["direct_meters"])
                meter["result_target"] = target
    _renumber(pipelines)
    for t, total in layout.partial_byte_headers():
        where = getattr(t.decl, "name_loc", None) or t.decl.loc
        reporter.note(where, f"header {t.name}: its fields total {total} bits; BMv2 holds only "
                             "headers of whole bytes (a multiple of 8 bits)")
    reporter.raise_if_any()
    layout.pad_scalars()
    externs = ctx.externs.finish()
    checksums = externs.pop("checksums")
    out = layout.to_json()
    out.update({
        "field_lists": sorted(externs.pop("field_lists"), key=lambda f: f["id"]),
        "errors": [[n, v] for n, v in ctx.checker.errors.items()],
        "enums": user_enums(ctx),
        "parsers": [{"name": "parser", "id": 0, "init_state": init_state,
                     "parse_states": _number(parser_lowerer.states)}],
        "parse_vsets": [{k: v for k, v in vs.items() if k not in ("decl", "p4info_name")}
                        for vs in ctx.value_sets],
        "deparsers": [{"name": "deparser", "id": 0,
                       "source_info": ctx.source_info(deparser, fragment=deparser.name),
                       "order": order, "primitives": []}],
        "meter_arrays": externs["meter_arrays"],
        "counter_arrays": externs["counter_arrays"],
        "register_arrays": externs["register_arrays"],
        "calculations": externs["calculations"],
        "learn_lists": externs["learn_lists"],
        "actions": ctx.actions,
        "pipelines": pipelines,
        "checksums": checksums,
        "force_arith": [],
        "extern_instances": [],
        "field_aliases": FIELD_ALIASES,
        "program": os.path.basename(ctx.main_file),
        "__meta__": {"version": [2, 23], "compiler": "inaemu"},
    })
    _drop_empty_source_info(out)
    try:
        check_document(out)
    except FormError as exc:
        raise Unsupported(main, f"internal compiler error: the BMv2 JSON would not load in "
                                f"simple_switch ({exc}); this construct may be unsupported") \
            from None
    return out


def _drop_empty_source_info(node) -> None:
    """Objects lowered from the include files have no source_info; omit the key (BMv2 reads
    it only when present)."""
    if isinstance(node, dict):
        if node.get("source_info", 0) is None:
            del node["source_info"]
        for v in node.values():
            _drop_empty_source_info(v)
    elif isinstance(node, list):
        for v in node:
            _drop_empty_source_info(v)


def _package_directions(main, checker) -> list:
    """For each V1Switch parameter, its block type's parameter directions, as v1model.p4
    declares them (`parser Parser<H, M>(packet_in b, out H parsedHdr, ...)`); None where the
    declaration is not found."""
    out = []
    for p in getattr(main.type.decl, "params", []):
        name = getattr(p.type_ref, "name", None)
        decl = checker.top.lookup(name) if name else None
        out.append([q.direction for q in decl.params] if hasattr(decl, "params") else None)
    return out


def check_signatures(main, blocks, directions, h_type, m_type, sm_type) -> None:
    """The six V1Switch blocks must agree on the header, metadata and standard_metadata types,
    and take each parameter with the direction v1model.p4 declares (p4c: "Cannot unify 'in'
    parameter with 'inout' parameter")."""
    expected = [("parser", ["packet_in", h_type, m_type, sm_type]),
                ("verify checksum control", [h_type, m_type]),
                ("ingress control", [h_type, m_type, sm_type]),
                ("egress control", [h_type, m_type, sm_type]),
                ("compute checksum control", [h_type, m_type]),
                ("deparser", ["packet_out", h_type])]
    for what, t in (("headers", h_type), ("metadata", m_type)):
        if not isinstance(t, StructT) or t.kind != "struct":     # (p4c: expected a struct)
            raise Unsupported(blocks[0], f"the parser's {what} parameter must be a struct, not "
                                         f"{t.describe()}")
    for position, (decl, (what, types)) in enumerate(zip(blocks, expected)):
        if isinstance(decl, A.ParserDecl) != (what == "parser"):
            raise Unsupported(decl, f"V1Switch expects a {what} here")
        if len(decl.params) != len(types):
            raise Unsupported(decl, f"the {what} '{decl.name}' must take {len(types)} parameters")
        for p, t in zip(decl.params, types):
            ok = (getattr(p.type, "name", None) == t) if isinstance(t, str) else p.type is t
            if not ok:
                want = t if isinstance(t, str) else t.describe()
                raise Unsupported(p, f"parameter '{p.name}' of the {what} must be {want}, "
                                     f"not {p.type.describe()}")
        wanted = directions[position] if position < len(directions) else None
        for p, direction in zip(decl.params, wanted or ()):
            if p.direction != direction:
                raise Unsupported(p, f"parameter '{p.name}' of the {what} must be "
                                     f"'{direction or 'directionless'}', as v1model.p4 "
                                     f"declares it, not '{p.direction or 'directionless'}'")


def _number(items: list) -> list:
    for i, item in enumerate(items):
        item["id"] = i
    return items


def _renumber(pipelines) -> None:
    tid = cid = 0
    for p in pipelines:
        for t in p["tables"]:
            t["id"] = tid
            tid += 1
        for c in p["conditionals"]:
            c["id"] = cid
            cid += 1


def user_enums(ctx) -> list:
    out = []
    for d in ctx.program.decls:
        if isinstance(d, A.EnumDecl) and d.underlying is None and not d.loc.file.startswith(INCLUDE_DIR):
            t = ctx.checker.decl_type(d)
            out.append({"name": d.name, "entries": [[n, v] for n, v in t.members.items()]})
    return out


def _emits_only_if_valid(st: A.If) -> bool:
    """`if (h.isValid()) { pkt.emit(h); ... }` without else: the same as emitting h."""
    cond = st.cond
    if st.other is not None or not (isinstance(cond, A.Call) and not cond.args
                                    and isinstance(cond.func, A.Member)
                                    and cond.func.name == "isValid"):
        return False
    header = expr_text(cond.func.expr)
    body = st.then.stmts if isinstance(st.then, A.Block) else [st.then]
    return all(isinstance(b, A.CallStmt) and isinstance(b.call.func, A.Member)
               and b.call.func.name == "emit" and len(b.call.args) == 1
               and expr_text(b.call.args[0].value) == header for b in body)


def _statement_kind(st) -> str:
    kinds = {A.Assign: "an assignment", A.Switch: "a switch", A.VarDecl: "a declaration",
             A.Return: "return", A.Exit: "exit", A.CallStmt: "this call"}
    return kinds.get(type(st), "this statement")


def deparser_order(ctx, deparser: A.ControlDecl, env: Env) -> list:
    order: list = []

    def add_storage(s):
        from .storage import StackStore, UnionStore
        if isinstance(s, HeaderInst):
            order.append(s.name)
        elif isinstance(s, StackStore):
            for el in s.elements:
                add_storage(el)
        elif isinstance(s, UnionStore):
            for m in s.members.values():
                add_storage(m)
        elif isinstance(s, StructStore):
            for sub in s.fields.values():
                add_storage(sub)

    def walk(stmts):
        for st in stmts:
            if isinstance(st, A.Block):
                walk(st.stmts)
            elif isinstance(st, A.CallStmt) and isinstance(st.call.func, A.Member) \
                    and st.call.func.name == "emit":
                arg = st.call.args[0].value
                s = ctx.exprs.resolve(arg, env)
                if s is None:
                    raise Unsupported(arg, "emit() needs a header, stack, union or struct of them")
                add_storage(s)
            elif isinstance(st, A.Empty):
                continue
            elif isinstance(st, A.If) and _emits_only_if_valid(st):
                walk([st.then])  # emit() skips an invalid header anyway
            elif isinstance(st, A.If):
                raise Unsupported(st, "an 'if' in the deparser is not supported: a BMv2 deparser "
                                      "is a fixed list of headers, each emitted when valid; only "
                                      "'if (h.isValid()) { pkt.emit(h); }' (no else) can be kept")
            else:
                raise Unsupported(st, f"only emit() calls are supported in the deparser, not "
                                      f"{_statement_kind(st)}")

    walk(deparser.apply.stmts)
    seen, unique = set(), []
    for name in order:
        if name not in seen:
            seen.add(name)
            unique.append(name)
    return unique


__all__ = ["lower_program", "LoweringContext", "expr_text"]
