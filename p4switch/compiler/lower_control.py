"""Lowering, part 5: a control's apply block to BMv2's table/conditional graph.

Straight-line code becomes a synthesized action run by a keyless table (`tbl_<file><line>`, as
p4c names them), `if` becomes a conditional `node_N`, `t.apply().hit` and `switch (t.apply()
.action_run)` become the table's `__HIT__`/`__MISS__` or per-action `next_tables`, `return`
jumps to the control's continuation, and sub-controls are inlined. The graph is built back to
front so every node knows its successor.
"""

from __future__ import annotations

from dataclasses import dataclass

from . import ast as A
from .constfold import fold
from .lower_expr import (Bound, Env, Unsupported, bind_constructor_arguments, const,
                         instance_of, is_extern_param)
from .types import BOOL
from .lower_stmt import StatementLowerer, switch_as_ifs, switch_subject
from .lower_tables import TableBuilder
from .storage import DynamicElement, DynamicField


@dataclass(eq=False)
class TableRef:
    name: str
    decl: A.TableDecl
    env: Env
    prefix: str
    block_path: tuple | None = None   # its place in p4c's block tree (Env.block_path)


@dataclass(eq=False)
class ControlInstance:
    decl: A.ControlDecl
    name: str
    args: list = ()          # constructor arguments (A.Argument), as written at the instance
    env: Env | None = None   # where they are evaluated: the instantiating control's scope
    block_path: tuple | None = None   # its place in p4c's block tree (Env.block_path)


class ControlLowerer:
    def __init__(self, ctx, pipeline: str):
        self.ctx = ctx
        self.pipeline = pipeline
        self.tables: list = []
        self.conditionals: list = []
        self.applied: dict = {}   # table name -> (its nexts, the node that applies it)
        self.tables_builder = TableBuilder(ctx, self)

    # ---- controls ---------------------------------------------------------------------------
    def lower(self, decl: A.ControlDecl, env: Env, prefix: str, nxt=None):
        self.bind_locals(decl, env, prefix)
        # an initialised control-level variable is set afresh on every apply (as p4c does, by an
        # assignment at the start of the apply block), in declaration order
        inits = [d for d in decl.locals
                 if isinstance(d, A.Assign) or (isinstance(d, A.VarDecl) and d.init is not None)]
        return self.seq(inits + list(decl.apply.stmts), env, nxt, nxt)

    def bind_locals(self, decl: A.ControlDecl, env: Env, prefix: str) -> None:
        base = env.block_path()
        if base is not None:
            self.ctx.block_paths.setdefault(prefix, (base, decl))
        for position, local in enumerate(decl.locals):
            path = None if base is None else base + (position,)
            if isinstance(local, A.InstanceDecl):
                self.ctx.bind_instance(local, env, prefix)
                bound = env.lookup(local)
                if path is not None and getattr(bound, "block_path", None) is None and \
                        hasattr(bound, "block_path"):
                    bound.block_path = path
            elif isinstance(local, A.VarDecl):
                self.ctx.declare_local(local, env)
            elif isinstance(local, A.TableDecl):
                env.bind(local, TableRef(self.ctx.qualified(prefix, local), local, env, prefix,
                                         path))
            elif isinstance(local, A.ActionDecl):
                env.bind(local, prefix)
                if path is not None:   # P4Info lists a control's own actions in this order
                    self.ctx.action_places.setdefault(self.ctx.qualified(prefix, local), path)

    # ---- statement sequences ------------------------------------------------------------------
    def seq(self, stmts, env: Env, nxt, ret):
        for st in stmts:
            if isinstance(st, A.VarDecl):
                self.ctx.declare_local(st, env)
            elif isinstance(st, A.InstanceDecl):
                self.ctx.bind_instance(st, env, self.ctx.prefix_of(env))
        segments: list = []
        run: list = []
        dead: list = []
        for i, st in enumerate(stmts):
            if self.is_straight(st, env):
                run.append(st)
                continue
            if run:
                segments.append(run)
                run = []
            segments.append(st)
            if isinstance(st, (A.Return, A.Exit)):
                dead = stmts[i + 1:] if isinstance(st, A.Exit) else []
                break
        if run:
            segments.append(run)
        cur = nxt
        for seg in reversed(segments):
            cur = self.node(seg, env, cur, ret)
        if any(_contains_apply(st) or _calls_action(st) for st in dead):
            # p4c keeps a table whose only apply is unreachable after `exit` (not after
            # `return`), so the control plane can still write it, and the table of an
            # action called there (P4Info lists the action): lower that code too, reached
            # from nowhere
            self.seq(dead, Env(env), None, None)
        return cur

    def is_straight(self, st, env) -> bool:
        if isinstance(st, (A.Assign, A.Empty)):
            return True
        if isinstance(st, A.VarDecl):
            return True
        if isinstance(st, A.CallStmt):
            return self.call_kind(st.call, env) == "plain"
        return False

    def call_kind(self, call: A.Call, env) -> str:
        f = call.func
        if isinstance(f, A.Member) and f.name == "apply" and isinstance(f.expr, A.Name):
            d = f.expr.decl
            if isinstance(d, A.TableDecl):
                return "table"
            if isinstance(d, (A.InstanceDecl, A.Param)) and \
                    isinstance(env.lookup(d), ControlInstance):  # a Param: a constructor one
                return "control"
        if isinstance(f, A.Name) and isinstance(f.decl, A.ActionDecl):
            act = f.decl
            if not any(p.direction for p in act.params) and all(
                    fold(a.value) is not None for a in call.args):
                return "action"
            return "specialized action"
        return "plain"

    def node(self, seg, env: Env, nxt, ret):
        if getattr(self.ctx, "tracker", None) is not None and not isinstance(seg, list):
            self.ctx.tracker.at(seg)
        if isinstance(seg, list):
            return self.synthesized(seg, env, nxt)
        if isinstance(seg, A.Block):
            return self.seq(seg.stmts, Env(env), nxt, ret)
        if isinstance(seg, A.Return):
            return ret
        if isinstance(seg, A.Exit):
            return self.synthesized([seg], env, None)
        if isinstance(seg, A.If):
            return self.if_node(seg, env, nxt, ret)
        if isinstance(seg, A.Switch):
            return self.switch_node(seg, env, nxt, ret)
        if isinstance(seg, A.CallStmt):
            kind = self.call_kind(seg.call, env)
            if kind == "table":
                return self.apply_table(seg.call.func.expr, env, {"*": nxt})
            if kind == "control":
                inst = env.lookup(seg.call.func.expr.decl)
                return self.inline_control(inst, seg.call, env, nxt)
            if kind == "action":
                return self.action_table(seg.call, env, nxt)
            if kind == "specialized action":
                return self.specialized_action_table(seg, env, nxt)
        raise Unsupported(seg, f"{type(seg).__name__} is not supported in an apply block")

    def inline_control(self, inst: ControlInstance, call: A.Call, env: Env, nxt):
        """A sub-control's graph, inlined. A control sees the caller only through its
        parameters, so copies are needed only when arguments alias (see lower_calls)."""
        from .lower_calls import CallBinder
        inner = Env(self.ctx.global_env)
        inner.prefix = inst.name
        inner.path = inst.block_path
        bind_constructor_arguments(inst.decl, inst.args, inst.env, inner)
        for p, a in zip(inst.decl.params, call.args):   # an extern passed in is the caller's
            if is_extern_param(p):
                inner.bind(p, instance_of(a.value, env))
        params = [p for p in inst.decl.params if not is_extern_param(p)]
        args = [a for p, a in zip(inst.decl.params, call.args) if not is_extern_param(p)]
        copy_in: list = []
        lowerer = StatementLowerer(self.ctx, copy_in)
        binder = CallBinder(lowerer)
        slices = any(p.direction in ("out", "inout") and isinstance(a.value, A.Slice)
                     for p, a in zip(params, args))
        # hs[i] names the element chosen at the call even if the control changes i
        dynamic = any(isinstance(binder.arg_storage(a.value, env), (DynamicField, DynamicElement))
                      for a in args)
        # a struct or header value written as a list is built in a temporary
        lists = any(isinstance(a.value, (A.ListExpr, A.StructExpr)) for a in args)
        if not slices and not dynamic and not lists and \
                not binder.params_alias(params, args, env):
            for p, a in zip(params, args):
                inner.bind(p, Bound(a.value, env))
            binder.invalidate_out_headers(
                params, [binder.arg_storage(a.value, env) for a in args], call)
            entry = self.lower(inst.decl, inner, inst.name, nxt)
            if not copy_in:
                return entry
            action_id, name = self.ctx.add_action(self.ctx.synth_action_name(call), [], copy_in)
            return self.keyless_table(self.ctx.unique_table_name("tbl_" + name), action_id,
                                      name, [], entry, self.ctx.source_info(call))
        copies = []
        for p, a in zip(params, args):
            if fold(a.value) is not None:
                inner.bind(p, Bound(a.value, env))
                continue
            tmp = self.ctx.layout.allocate(p.type, "tmp", "tmp")
            inner.bind(p, tmp)
            if p.direction in ("in", "inout", ""):
                lowerer.assign_to(tmp, a.value, env, call)
            if p.direction in ("out", "inout"):
                copies.append((binder.fixed_location(a.value, env, call), tmp))
            binder.invalidate_out_headers([p], [tmp], call)
        copy_out: list = []
        CallBinder(StatementLowerer(self.ctx, copy_out)).copy_out(copies, env, call)
        after = nxt
        if copy_out:
            action_id, name = self.ctx.add_action(self.ctx.synth_action_name(call), [], copy_out)
            after = self.keyless_table(self.ctx.unique_table_name("tbl_" + name), action_id, name,
                                       [], nxt, self.ctx.source_info(call))
        # an `exit` anywhere in the sub-control (its apply block, its actions) still makes
        # these copy-outs (P4_16 12.5): every statement lowering meanwhile knows them
        self.ctx.exit_copy_outs.append((copies, env, call))
        try:
            entry = self.lower(inst.decl, inner, inst.name, after)
        finally:
            self.ctx.exit_copy_outs.pop()
        if not copy_in:
            return entry
        action_id, name = self.ctx.add_action(self.ctx.synth_action_name(call), [], copy_in)
        return self.keyless_table(self.ctx.unique_table_name("tbl_" + name), action_id, name, [],
                                  entry, self.ctx.source_info(call))

    # ---- nodes ------------------------------------------------------------------------------
    def synthesized(self, stmts, env: Env, nxt):
        prims: list = []
        lowerer = StatementLowerer(self.ctx, prims)
        for st in stmts:
            lowerer.stmt(st, env)
        if not prims:
            return nxt
        base = self.ctx.synth_action_name(stmts[0])
        action_id, name = self.ctx.add_action(base, [], prims)
        info = self.ctx.source_info(stmts[0], fragment=self.ctx.fragment(stmts[0], multi=len(stmts) > 1))
        return self.keyless_table(self.ctx.unique_table_name("tbl_" + name), action_id, name, [],
                                  nxt, info)

    def action_table(self, call: A.Call, env: Env, nxt):
        act = call.func.decl
        action_id, name = self.ctx.action_for(act, env)
        data = [self.ctx.action_data(p, a.value) for p, a in zip(act.params, call.args)]
        info = self.ctx.source_info(call, fragment=self.ctx.fragment(call))
        local = name.split(".")[-1]
        return self.keyless_table(self.ctx.unique_table_name("tbl_" + local), action_id, name,
                                  data, nxt, info)

    def specialized_action_table(self, stmt: A.CallStmt, env: Env, nxt):
        """A direct call whose arguments are not all constants, or that has directional
        parameters, as p4c makes it: a keyless table of its own running a copy of the action
        specialized to the call (no action data, the arguments evaluated at the call), under
        the action's own name, which P4Info lists (p4info.py `direct_action_calls`). Calls of
        one action at several places give several such copies of one name, as p4c's."""
        call = stmt.call
        act = call.func.decl
        prefix = "" if act in self.ctx.top_level else self.ctx.prefix_of(env)
        name = self.ctx.qualified(prefix, act)
        prims: list = []
        StatementLowerer(self.ctx, prims).stmt(stmt, env)
        action_id, _ = self.ctx.add_action(name, [], prims, unique=False)
        self.ctx.action_meta[action_id] = (act, name)
        info = self.ctx.source_info(call, fragment=self.ctx.fragment(call))
        local = name.split(".")[-1]
        return self.keyless_table(self.ctx.unique_table_name("tbl_" + local), action_id, name,
                                  [], nxt, info)

    def keyless_table(self, name, action_id, action_name, data, nxt, info):
        table = {"name": name, "id": 0, "source_info": info, "key": [], "match_type": "exact",
                 "type": "simple", "max_size": 1024, "with_counters": False,
                 "support_timeout": False, "direct_meters": None, "action_ids": [action_id],
                 "actions": [action_name], "base_default_next": nxt,
                 "next_tables": {action_name: nxt},
                 "default_entry": {"action_id": action_id, "action_const": True,
                                   "action_data": data, "action_entry_const": True}}
        self.tables.append(table)
        return name

    def apply_table(self, name_expr: A.Name, env: Env, nexts: dict):
        ref = env.lookup(name_expr.decl)
        if not isinstance(ref, TableRef):
            raise Unsupported(name_expr, "unknown table")
        if ref.name in self.applied:
            # BMv2 holds a table once per pipeline: a second apply is the same node, which
            # is right only where both go on to the same nodes (`if (c) { ...; t.apply(); }
            # else { t.apply(); }`, as p4c joins them)
            earlier_nexts, entry = self.applied[ref.name]
            if earlier_nexts == nexts:
                return entry
            raise Unsupported(name_expr, f"table '{ref.decl.name}' is applied more than once, "
                                         "with different code after each apply; BMv2 allows "
                                         "each table once per pipeline")
        entry = self.table_entry(ref, nexts)
        self.applied[ref.name] = (dict(nexts), entry)
        return entry

    def table_entry(self, ref: TableRef, nexts: dict):
        """The table's node, behind a keyless table that computes its key's temporaries."""
        temps = self.tables_builder.key_temporaries(ref, ref.env)
        table = self.tables_builder.build(ref, nexts)
        self.tables.append(table)
        if not temps:
            return ref.name
        prims: list = []
        lowerer = StatementLowerer(self.ctx, prims)
        for tmp, k in temps:
            lowerer.hoist_calls(k.expr, ref.env, k)   # `f(): exact`: the call runs here
            lowerer.emit("assign", [tmp.json(), self.ctx.exprs.data(k.expr, ref.env)], k)
        base = self.ctx.synth_action_name(temps[0][1])
        action_id, name = self.ctx.add_action(base, [], prims)
        info = self.ctx.source_info(temps[0][1], fragment=self.ctx.fragment(temps[0][1]))
        return self.keyless_table(self.ctx.unique_table_name("tbl_" + name), action_id, name, [],
                                  ref.name, info)

    def if_node(self, st: A.If, env: Env, nxt, ret):
        then_entry = self.seq([st.then], Env(env), nxt, ret)
        else_entry = self.seq([st.other], Env(env), nxt, ret) if st.other is not None else nxt
        hit = _table_hit(st.cond)
        if hit is not None:
            table_name, wants_hit = hit
            on_hit, on_miss = (then_entry, else_entry) if wants_hit else (else_entry, then_entry)
            return self.apply_table(table_name, env, {"__HIT__": on_hit, "__MISS__": on_miss})
        c = fold(st.cond)
        if c is not None:
            return then_entry if c else else_entry
        applied = _hit_members(st.cond)
        if len(applied) > 1:
            raise Unsupported(applied[1], "only one table apply per condition is supported")
        if applied:
            return self.branch(st.cond, env, then_entry, else_entry)
        if _contains_apply(st.cond):
            raise Unsupported(st.cond, "this table apply inside a condition is not supported; "
                                       "use 'if (t.apply().hit)' or '.miss'")
        return self.plain_conditional(st, env, then_entry, else_entry)

    def branch(self, e, env: Env, on_true, on_false):
        """The graph that tests `e` in P4's order: `&&`, `||` and `!` become branches, so a
        table applied in the condition (`x == 1 && t.apply().hit`) runs only when evaluation
        reaches it; other parts are conditionals (or, holding the apply deeper inside, are
        tested after applying the table first)."""
        if isinstance(e, A.Binary) and e.op in ("&&", "||"):
            right = self.branch(e.right, env, on_true, on_false)
            if e.op == "&&":
                return self.branch(e.left, env, right, on_false)
            return self.branch(e.left, env, on_true, right)
        if isinstance(e, A.Unary) and e.op == "!" and _contains_apply(e.expr):
            return self.branch(e.expr, env, on_false, on_true)
        if isinstance(e, A.Ternary) and _contains_apply(e):
            return self.branch(e.cond, env, self.branch(e.then, env, on_true, on_false),
                               self.branch(e.other, env, on_true, on_false))
        hit = _table_hit(e)
        if hit is not None:
            table_name, wants_hit = hit
            on_hit, on_miss = (on_true, on_false) if wants_hit else (on_false, on_true)
            return self.apply_table(table_name, env, {"__HIT__": on_hit, "__MISS__": on_miss})
        c = fold(e)
        if c is not None:
            return on_true if c else on_false
        test = A.If(e.loc, e, None, None)
        members = _hit_members(e)
        if members:
            return self.condition_with_apply(test, members, env, on_true, on_false)
        if _contains_apply(e):
            raise Unsupported(e, "this table apply inside a condition is not supported; "
                                 "use 'if (t.apply().hit)' or '.miss'")
        return self.plain_conditional(test, env, on_true, on_false)

    def condition_with_apply(self, st, members, env, then_entry, else_entry):
        """`if (t.apply().hit && x)`: apply t first, keep hit/miss in a temporary, then test."""
        if len(members) > 1:
            raise Unsupported(members[1], "only one table apply per condition is supported")
        member = members[0]
        tmp = self.ctx.layout.temp(BOOL)
        self.ctx.call_results[member] = tmp
        entry = self.plain_conditional(st, env, then_entry, else_entry)
        nexts = {}
        for outcome in ("__HIT__", "__MISS__"):
            value = int((outcome == "__HIT__") == (member.name == "hit"))
            prims: list = []
            StatementLowerer(self.ctx, prims).emit("assign", [tmp.json(), const(value, 1)], member)
            action_id, name = self.ctx.add_action(self.ctx.synth_action_name(st), [], prims)
            nexts[outcome] = self.keyless_table(self.ctx.unique_table_name("tbl_" + name),
                                                action_id, name, [], entry,
                                                self.ctx.source_info(member))
        return self.apply_table(member.expr.func.expr, env, nexts)

    def plain_conditional(self, st, env, then_entry, else_entry):
        prims: list = []
        StatementLowerer(self.ctx, prims).hoist_calls(st.cond, env, st)
        expr = self.ctx.exprs.boolean(st.cond, env)
        entry = self.conditional(st.cond, expr, then_entry, else_entry)
        if prims:  # function calls in the condition run first, in their own action
            base = self.ctx.synth_action_name(st)
            action_id, name = self.ctx.add_action(base, [], prims)
            info = self.ctx.source_info(st.cond, fragment=self.ctx.fragment(st.cond))
            entry = self.keyless_table(self.ctx.unique_table_name("tbl_" + name), action_id,
                                       name, [], entry, info)
        return entry

    def conditional(self, node, expr, true_next, false_next):
        name = self.ctx.node_name()
        self.conditionals.append({"name": name, "id": 0,
                                  "source_info": self.ctx.source_info(node, fragment=self.ctx.fragment(node, expr_only=True)),
                                  "expression": expr, "true_next": true_next,
                                  "false_next": false_next})
        return name

    def switch_node(self, st: A.Switch, env: Env, nxt, ret):
        e = st.expr
        if not (isinstance(e, A.Member) and e.name == "action_run"):
            prelude, subject = switch_subject(st)  # a switch on a value: an if/else chain
            chain = switch_as_ifs(st, subject)
            return self.seq(prelude + ([chain] if chain is not None else []), env, nxt, ret)
        bodies: list = []
        pending: list = []
        for case in st.cases:
            pending.extend(case.labels)
            if case.body is not None:
                bodies.append((pending, case.body))
                pending = []
        if pending:
            bodies.append((pending, None))
        nexts = {"*": nxt}
        for labels, body in bodies:
            entry = self.seq(body.stmts, Env(env), nxt, ret) if body is not None else nxt
            for label in labels:
                if isinstance(label, A.Default):
                    nexts["*"] = entry
                else:
                    nexts[label.decl] = entry
        return self.apply_table(e.expr.func.expr, env, nexts)


def _table_hit(cond):
    """(table name expr, wants_hit) for `t.apply().hit`, `.miss` and their negations."""
    negate = False
    while isinstance(cond, A.Unary) and cond.op == "!":
        negate = not negate
        cond = cond.expr
    if (isinstance(cond, A.Member) and cond.name in ("hit", "miss")
            and isinstance(cond.expr, A.Call) and isinstance(cond.expr.func, A.Member)
            and cond.expr.func.name == "apply" and isinstance(cond.expr.func.expr, A.Name)
            and isinstance(cond.expr.func.expr.decl, A.TableDecl)):
        wants_hit = (cond.name == "hit") != negate
        return cond.expr.func.expr, wants_hit
    return None


def _hit_members(e) -> list:
    """The `t.apply().hit` / `.miss` sub-expressions of a condition."""
    found = []
    if (isinstance(e, A.Member) and e.name in ("hit", "miss") and isinstance(e.expr, A.Call)
            and isinstance(e.expr.func, A.Member) and e.expr.func.name == "apply"
            and isinstance(e.expr.func.expr, A.Name)
            and isinstance(e.expr.func.expr.decl, A.TableDecl)):
        return [e]
    for child in vars(e).values():
        if isinstance(child, A.Expr):
            found += _hit_members(child)
    return found


def _contains_apply(e) -> bool:
    """Does this expression or statement apply a table or control?"""
    if isinstance(e, A.Call) and isinstance(e.func, A.Member) and e.func.name == "apply":
        return True
    for attr, child in vars(e).items():
        if attr in ("decl", "callee", "constructs"):  # references, not sub-trees
            continue
        items = child if isinstance(child, list) else [child]
        for item in items:
            if isinstance(item, (A.Expr, A.Stmt, A.Argument, A.SwitchCase)) and \
                    _contains_apply(item):
                return True
    return False


def _calls_action(st) -> bool:
    """Does this statement, or one in its blocks, call an action directly?"""
    return any(isinstance(getattr(call.func, "decl", None), A.ActionDecl)
               for call in A.statement_calls(st))


__all__ = ["ControlLowerer", "ControlInstance", "TableRef"]
