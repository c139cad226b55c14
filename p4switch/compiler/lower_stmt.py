"""Lowering, part 3: statements inside actions (and straight-line apply code) to BMv2 primitives.

Assignments become `assign`/`assign_header`/..., v1model extern calls become the primitives
simple_switch implements, calls of actions and functions are inlined, and `if` inside an action
and `return` inside an action become BMv2's `_jump_if_zero`/`_jump` primitives, as in p4c.
"""

from __future__ import annotations

from dataclasses import dataclass

from . import ast as A
from .bmv2_forms import primitive_param
from .constfold import constant_expression, fold
from .lower_expr import Env, ExprLowerer, Unsupported, const, instance_of, op
from .storage import (DynamicElement, FieldRef, HeaderInst, RuntimeData, StackStore,
                      StructStore, UnionStore)
from .types import BOOL, BitT, StructT, VarbitT, bit_width, is_bool


@dataclass(eq=False)
class ExternRef:
    """An extern instance as lowered: its JSON name and what it is."""
    name: str
    kind: str  # counter, direct_counter, meter, direct_meter, register, action_profile, ...
    decl: A.InstanceDecl
    block_path: tuple | None = None   # its place in p4c's block tree (Env.block_path)


TO_ACTION_END = {"type": "hexstr", "value": "0x0", "to_action_end": True}

HASH_ALGOS = {"crc32", "crc32_custom", "crc16", "crc16_custom", "random", "identity", "csum16",
              "xor16"}


class StatementLowerer:
    """Emits the primitives of one action body into `self.prims`."""

    def __init__(self, ctx, prims: list):
        self.ctx = ctx
        self.x = ExprLowerer(ctx)
        self.prims = prims
        self.return_target = None  # where an inlined function's return value goes
        self.return_jumps = None   # jumps of `return` to patch to the end of the current body
        self.loops: list = []      # per enclosing run-time loop: its (break, continue) jumps
        # per enclosing inlined sub-control (the context's, outermost first) and action: the
        # copy-outs an `exit` makes first
        self.exit_copy_outs: list = [self._copy_out_of(*c)
                                     for c in getattr(ctx, "exit_copy_outs", ())]

    # ---- helpers ---------------------------------------------------------------------------
    def emit(self, name: str, params: list, node) -> None:
        prim = {"op": name, "parameters": [wrap_param(p) for p in params]}
        info = self.ctx.source_info(node)
        if info:
            prim["source_info"] = info
        self.prims.append(prim)

    def arg_value(self, e: A.Expr, env: Env, node) -> dict:
        """A primitive argument: a field, constant or runtime data, else a temporary."""
        v = fold(e)
        if v is not None:
            return const(v, bit_width(e.type) if isinstance(e.type, BitT) else None)
        if e in self.ctx.call_results:  # a hoisted call, or a value taken before a call
            return self.ctx.call_results[e].json()
        s = self._location(e, env)
        if isinstance(s, (FieldRef, RuntimeData)):
            return s.json()
        tmp = self.ctx.layout.temp(e.type if isinstance(e.type, BitT) else BitT(32))
        self.emit("assign", [tmp.json(), self.x.data(e, env)], node)
        return tmp.json()

    def value_in_field(self, e: A.Expr, env: Env, node) -> dict:
        """`e` as a plain field (what calculations and field lists take): a temporary holds
        any other value."""
        s = self._location(e, env)
        if type(s) is FieldRef and e not in self.ctx.call_results:
            return s.json()
        tmp = self.ctx.layout.temp(e.type if _is_value(e) else BitT(32))
        self.emit("assign", [tmp.json(), self.x.data(e, env)], node)
        return tmp.json()

    def _location(self, e, env):
        if isinstance(e, (A.Name, A.Member, A.Index)):
            try:
                return self.x.resolve(e, env)
            except Unsupported:
                return None
        return None

    def out_field(self, e: A.Expr, env: Env, node):
        """Where a primitive writes an extern's out argument: the field itself, or a temporary
        that `copy_back()` then writes into `e` (a slice, a run-time stack index or a stack's
        `.last` field: BMv2's register_read and execute_meter write plain fields only)."""
        if isinstance(e, A.Slice):
            tmp = self.ctx.layout.temp(e.type)
            return tmp.json(), lambda: self.assign_slice_value(e, tmp.json(), env, node)
        s = self._location(e, env)
        if type(s) is FieldRef:
            return s.json(), lambda: None
        if not isinstance(s, (FieldRef, tuple)):
            raise Unsupported(e, "expected a field (a bit<>/int<>/bool location) here")
        tmp = self.ctx.layout.temp(e.type)
        return tmp.json(), lambda: self.emit("assign", [self.x._location_json(e, env),
                                                        tmp.json()], node)

    def field_target(self, e: A.Expr, env: Env) -> FieldRef:
        s = self.x.resolve(e, env)
        if not isinstance(s, FieldRef):
            raise Unsupported(e, "expected a field (a bit<>/int<>/bool location) here")
        return s

    # ---- statements ------------------------------------------------------------------------
    def stmts(self, stmts, env: Env) -> None:
        for st in stmts:
            self.stmt(st, env)

    def hoist_calls(self, e, env: Env, node, skip_root: bool = False) -> None:
        """Inline function calls nested in `e` into temporaries the expression then reads.
        Calls under `&&`, `||` and `?:` run only when P4's evaluation order reaches them."""
        if not isinstance(e, A.Node):
            return
        if isinstance(e, A.Binary) and e.op in ("&&", "||") and has_calls(e.right):
            self.hoist_calls(e.left, env, node)
            tmp = self.ctx.layout.temp(BOOL)
            self.emit("assign", [tmp.json(), op("b2d", None, self.x.boolean(e.left, env))], node)
            guard = op("d2b", None, tmp.json())
            if e.op == "||":
                guard = op("not", None, guard)
            skip = self.jump_if_false(guard, node)
            self.hoist_calls(e.right, env, node)
            self.emit("assign", [tmp.json(), op("b2d", None, self.x.boolean(e.right, env))], node)
            self.land(skip)
            self.ctx.call_results[e] = tmp
            return
        if isinstance(e, A.Ternary) and (has_calls(e.then) or has_calls(e.other)):
            self.hoist_calls(e.cond, env, node)
            cond = self.ctx.layout.temp(BOOL)
            self.emit("assign", [cond.json(), op("b2d", None, self.x.boolean(e.cond, env))], node)
            result = self.ctx.layout.temp(e.type)
            to_else = self.jump_if_false(op("d2b", None, cond.json()), node)
            self.hoist_calls(e.then, env, node)
            self.emit("assign", [result.json(), self.x.data(e.then, env)], node)
            to_end = self.jump(node)
            self.land(to_else)
            self.hoist_calls(e.other, env, node)
            self.emit("assign", [result.json(), self.x.data(e.other, env)], node)
            self.land(to_end)
            self.ctx.call_results[e] = result
            return
        operands = _operands(e)
        for i, child in enumerate(operands):
            self.hoist_calls(child, env, node)
            if any(has_calls(later) for later in operands[i + 1:]):
                self.capture(child, env, node)
        callee = getattr(e, "callee", None)
        if isinstance(e, A.Call) and isinstance(callee, A.FunctionDecl) and not skip_root:
            tmp = self.ctx.layout.temp(e.type) if _is_value(e) else \
                self.ctx.layout.allocate(e.type, "tmp", "tmp")
            self.inline_function(callee, e, env, tmp)
            self.ctx.call_results[e] = tmp

    def capture(self, e, env: Env, node) -> None:
        """Operands are evaluated left to right (the P4_16 spec's evaluation order): the value
        of `e` is taken now, into a temporary, because a call to its right may change what
        `e` reads."""
        if e in self.ctx.call_results or fold(e) is not None or not _is_value(e):
            return
        if not isinstance(e, (A.Name, A.Member, A.Index, A.Slice, A.Binary, A.Unary, A.Cast,
                              A.Ternary)):
            return
        tmp = self.ctx.layout.temp(e.type)
        self.emit("assign", [tmp.json(), self.x.data(e, env)], node)
        self.ctx.call_results[e] = tmp

    # ---- branches: BMv2's _jump_if_zero / _jump, as p4c uses inside actions -----------------
    def jump_if_false(self, cond: dict, node) -> dict:
        """Emit a jump taken when the boolean `cond` is false; `land()` sets its target."""
        self.emit("_jump_if_zero", [op("b2d", None, cond), const(0)], node)
        return self.prims[-1]

    def jump(self, node) -> dict:
        self.emit("_jump", [const(0)], node)
        return self.prims[-1]

    def land(self, jump: dict) -> None:
        """Make `jump` continue at the next primitive emitted (or the end of the action)."""
        jump["parameters"][-1] = const(len(self.prims))

    def stmt(self, st, env: Env) -> None:
        if getattr(self.ctx, "tracker", None) is not None:
            self.ctx.tracker.at(st)
        if isinstance(st, A.Assign):
            self.hoist_calls(st.rhs, env, st, skip_root=True)
        elif isinstance(st, A.CallStmt):
            self.hoist_calls(st.call, env, st, skip_root=True)
        elif isinstance(st, A.If):
            self.hoist_calls(st.cond, env, st)
        elif isinstance(st, A.VarDecl) and st.init is not None:
            self.hoist_calls(st.init, env, st, skip_root=True)
        elif isinstance(st, A.Return) and st.value is not None:
            self.hoist_calls(st.value, env, st, skip_root=True)
        if isinstance(st, A.Block):
            self.stmts(st.stmts, Env(env))
        elif isinstance(st, A.Assign):
            self.assign(st.lhs, st.rhs, env, st)
        elif isinstance(st, A.VarDecl):
            self.ctx.declare_local(st, env)
            if st.init is not None:
                self.assign(A.Name(st.loc, st.name), st.init, env, st, decl=st)
        elif isinstance(st, A.CallStmt):
            self.call(st.call, env, st)
        elif isinstance(st, A.If):
            self.branch_if(st, env)
        elif isinstance(st, A.Exit):
            # the copy-outs of the enclosing inlined actions and sub-controls still happen
            # (P4_16 12.5): before the exit, innermost first, as p4c places them. BMv2's `exit`
            # only flags the packet: the action's later primitives would still run, so jump
            # to the action's end (set by LoweringContext.add_action), as p4c does
            for copy_out in reversed(self.exit_copy_outs):
                copy_out(st)
            self.emit("exit", [], st)
            self.emit("_jump", [dict(TO_ACTION_END)], st)
        elif isinstance(st, A.Return):
            if st.value is not None and self.return_target is not None:
                self.assign_to(self.return_target, st.value, env, st)
            if self.return_jumps is not None:
                self.return_jumps.append(self.jump(st))
        elif isinstance(st, A.Empty):
            pass
        elif isinstance(st, A.For) and getattr(st, "run_time", False):
            self.run_time_loop(st, env)
        elif isinstance(st, (A.Break, A.Continue)) and self.loops:
            breaks, continues = self.loops[-1]
            (breaks if isinstance(st, A.Break) else continues).append(self.jump(st))
        elif isinstance(st, A.Switch):
            prelude, subject = switch_subject(st)
            for d in prelude:
                self.stmt(d, env)
            chain = switch_as_ifs(st, subject)
            if chain is not None:
                self.stmt(chain, env)
        else:
            raise Unsupported(st, f"{type(st).__name__} is not supported here")

    def run_time_loop(self, st: A.For, env: Env) -> None:
        """A loop with run-time bounds (in an action or function) as BMv2's jumps, the form
        p4c gives it: init; top: test (`_jump_if_zero` out); body; update; `_jump` to top.
        `continue` jumps to the update, `break` out."""
        loop_env = Env(env)
        self.stmts(st.init, loop_env)
        top = len(self.prims)
        self.stmts(st.cond_prelude, loop_env)
        leave = []
        if st.cond is not None:
            self.hoist_calls(st.cond, loop_env, st)
            leave.append(self.jump_if_false(self.x.boolean(st.cond, loop_env), st))
        breaks, continues = [], []
        self.loops.append((breaks, continues))
        try:
            self.stmt(st.body, Env(loop_env))
        finally:
            self.loops.pop()
        for jump in continues:
            self.land(jump)
        self.stmts(st.update, loop_env)
        self.emit("_jump", [const(top)], st)
        for jump in leave + breaks:
            self.land(jump)

    def assign(self, lhs: A.Expr, rhs: A.Expr, env: Env, node, decl=None) -> None:
        if decl is not None:
            target = env.lookup(decl)
        elif isinstance(lhs, A.Slice):
            self.assign_slice(lhs, rhs, env, node)
            return
        else:
            target = self.x.resolve(lhs, env)
        if target is None:
            raise Unsupported(lhs, "cannot assign to this expression")
        self.assign_to(target, rhs, env, node)

    def assign_to(self, target, rhs: A.Expr, env: Env, node) -> None:
        hoisted = self.ctx.call_results.get(rhs)
        if hoisted is not None and not isinstance(target, FieldRef):
            self.copy_storage(target, hoisted, node)  # a header/struct a call returned
            return
        if isinstance(rhs, A.Call) and hoisted is None and \
                lower_call_value(self, rhs, env, node, target):
            return
        if isinstance(target, FieldRef):
            if isinstance(rhs, A.DontCare):
                return
            if isinstance(getattr(rhs, "type", None), VarbitT):  # copies the length too
                self.emit("assign_VL", [target.json(), self.x.data(rhs, env)], node)
                return
            self.emit("assign", [target.json(), self.x.data(rhs, env)], node)
            return
        if isinstance(target, (HeaderInst, DynamicElement)):
            if isinstance(rhs, (A.ListExpr, A.StructExpr)) and isinstance(target, HeaderInst):
                self.emit("add_header", [{"type": "header", "value": target.name}], node)
                self.assign_fields(target, rhs, env, node)
                return
            src = self.x.resolve(rhs, env)
            if isinstance(src, tuple) and src[0] == "last":
                raise Unsupported(rhs, "a stack's .last cannot be copied as a whole header "
                                       "(simple_switch aborts on p4c's JSON for it): copy its "
                                       "fields, or the element at lastIndex")
            if not isinstance(src, (HeaderInst, DynamicElement)):
                raise Unsupported(rhs, "expected a header")
            self.emit("assign_header", [header_param(target), header_param(src)], node)
            return
        if isinstance(target, StackStore):
            src = self.x.resolve(rhs, env)
            if not isinstance(src, StackStore):
                raise Unsupported(rhs, "expected a header stack")
            self.emit("assign_header_stack", [{"type": "header_stack", "value": target.name},
                                              {"type": "header_stack", "value": src.name}], node)
            return
        if isinstance(target, UnionStore):
            src = self.x.resolve(rhs, env)
            if not isinstance(src, UnionStore):
                raise Unsupported(rhs, "expected a header union")
            self.copy_storage(target, src, node)
            return
        if isinstance(target, StructStore):
            if not isinstance(rhs, (A.ListExpr, A.StructExpr)) and \
                    isinstance(constant_expression(rhs), (A.ListExpr, A.StructExpr)):
                rhs = constant_expression(rhs)   # a struct constant, written as its value
            if isinstance(rhs, (A.ListExpr, A.StructExpr)):
                self.assign_fields(target, rhs, env, node)
                return
            src = self.x.resolve(rhs, env)
            if _metadata_struct_pair(target, src):
                self.copy_storage(target, src, node)
                return
            if not isinstance(src, StructStore):
                raise Unsupported(rhs, "expected a struct value")
            for name, sub in target.fields.items():
                self.copy_storage(sub, src.fields[name], node)
            return
        raise Unsupported(node, "cannot assign to this location")

    def copy_storage(self, dst, src, node) -> None:
        if isinstance(dst, FieldRef):
            self.emit("assign", [dst.json(), src.json()], node)
        elif _metadata_struct_pair(dst, src):   # standard_metadata, copied in or out
            for name in _field_names(dst):
                self.copy_storage(_field_of(dst, name), _field_of(src, name), node)
        elif isinstance(dst, (HeaderInst, DynamicElement)):
            self.emit("assign_header", [header_param(dst), header_param(src)], node)
        elif isinstance(dst, StructStore):
            for name, sub in dst.fields.items():
                self.copy_storage(sub, src.fields[name], node)
        elif isinstance(dst, StackStore):
            self.emit("assign_header_stack", [{"type": "header_stack", "value": dst.name},
                                              {"type": "header_stack", "value": src.name}], node)
        elif isinstance(dst, UnionStore):
            # member by member, as p4c does: simple_switch's assign_union copies stale values
            # (a union argument does not make BMv2 keep its members' field values up to date)
            for name, member in dst.members.items():
                self.copy_storage(member, src.members[name], node)

    def assign_fields(self, target, rhs, env, node) -> None:
        names = ([n for n, _, _ in target.type.fields])
        if isinstance(rhs, A.StructExpr):
            pairs = rhs.fields
        else:
            if len(rhs.items) != len(names):
                raise Unsupported(rhs, f"expected {len(names)} values for {target.type.describe()}")
            pairs = list(zip(names, rhs.items))
        for name, value in pairs:
            sub = target.field(name) if isinstance(target, HeaderInst) else target.fields[name]
            if isinstance(value.type, type(None)):
                continue
            ft = target.type.field_type(name)
            if hasattr(value, "type") and value.type.__class__.__name__ == "IntT":
                value.type = ft
                if hasattr(value, "folded"):
                    del value.folded
            self.assign_to(sub, value, env, node)

    def assign_slice(self, lhs: A.Slice, rhs: A.Expr, env: Env, node) -> None:
        if isinstance(rhs, A.Call) and rhs not in self.ctx.call_results and \
                isinstance(getattr(rhs, "type", None), BitT):   # `f[7:0] = g(x)`: g's result first
            tmp = self.ctx.layout.temp(rhs.type)
            if lower_call_value(self, rhs, env, node, tmp):
                self.assign_slice_value(lhs, tmp.json(), env, node)
                return
        self.assign_slice_value(lhs, self.x.data(rhs, env), env, node)

    def assign_slice_value(self, lhs: A.Slice, value: dict, env: Env, node) -> None:
        """`f[hi:lo] = value` (value in BMv2 JSON): the other bits of f are kept."""
        target = self.field_target(lhs.expr, env)
        hi, lo = fold(lhs.hi), fold(lhs.lo)
        width = bit_width(target.type)
        field_mask = (1 << width) - 1
        slice_mask = ((1 << (hi - lo + 1)) - 1) << lo
        kept = op("&", target.json(), const(field_mask ^ slice_mask, width))
        new = op("&", op("<<", value, const(lo)), const(slice_mask, width))
        self.emit("assign", [target.json(), op("|", kept, new)], node)

    # ---- if and return inside an action: jumps ---------------------------------------------
    def branch_if(self, st: A.If, env: Env) -> None:
        c = fold(st.cond)
        if c is not None:
            branch = st.then if c else st.other
            if branch is not None:
                self.stmt(branch, Env(env))
            return
        to_else = self.jump_if_false(self.x.boolean(st.cond, env), st)
        self.stmt(st.then, Env(env))
        if st.other is None:
            self.land(to_else)
            return
        to_end = self.jump(st)
        self.land(to_else)
        self.stmt(st.other, Env(env))
        self.land(to_end)

    def body(self, stmts, env: Env, result=None) -> None:
        """An action or function body; its `return`s jump to the body's end."""
        saved = self.return_target, self.return_jumps
        self.return_target, self.return_jumps = result, []
        self.stmts(stmts, env)
        if self.return_jumps and self.prims and self.prims[-1] is self.return_jumps[-1]:
            # a final `return` jumps to where it already is: drop it (a jump that lands on
            # its index now lands on the end, the same place)
            self.prims.pop()
            self.return_jumps.pop()
        for j in self.return_jumps:
            self.land(j)
        self.return_target, self.return_jumps = saved

    # ---- calls ------------------------------------------------------------------------------
    def call(self, call: A.Call, env: Env, node) -> None:
        f = call.func
        if isinstance(f, A.Name):
            decl = f.decl
            if isinstance(decl, A.ActionDecl):
                self.inline_action(decl, call, env)
                return
            callee = getattr(call, "callee", None)
            if isinstance(callee, A.FunctionDecl):
                self.inline_function(callee, call, env, None)
                return
            if isinstance(callee, A.ExternFunctionDecl):
                self.ctx.externs.function_call(self, callee.name, call, env, node)
                return
        if isinstance(f, A.Member):
            name = f.name
            if name in ("setValid", "setInvalid"):
                target = self.x.resolve(f.expr, env)
                if not isinstance(target, (HeaderInst, DynamicElement)):
                    raise Unsupported(f, f"{name}() needs a header")
                self.emit("add_header" if name == "setValid" else "remove_header",
                          [header_param(target)], node)
                return
            if name in ("push_front", "pop_front"):
                target = self.x.resolve(f.expr, env)
                element = target.type.element
                kind = "header_union_stack" if isinstance(element, StructT) and \
                    element.kind == "header_union" else "header_stack"
                self.emit("push" if name == "push_front" else "pop",
                          [{"type": kind, "value": target.name},
                           const(fold(call.args[0].value))], node)
                return
            if name == "isValid":
                return
            if isinstance(f.expr, A.Name) and isinstance(f.expr.decl, (A.InstanceDecl, A.Param)):
                inst = instance_of(f.expr, env)
                if isinstance(inst, ExternRef):
                    self.ctx.externs.method_call(self, inst, name, call, env, node)
                    return
        raise Unsupported(call, "this call is not supported here")

    def _copy_out_of(self, copies, env: Env, call):
        """The copy-outs of one inlined call, to make where an `exit` is (`at`)."""
        from .lower_calls import CallBinder
        return lambda at: CallBinder(self).copy_out(copies, env, at)

    def action_body(self, stmts, inner: Env, binder, copies, env: Env, node) -> None:
        """An inlined action's body, then its copy-outs; an `exit` inside it copies out first
        (`stmt`'s Exit)."""
        self.exit_copy_outs.append(self._copy_out_of(copies, env, node))
        try:
            self.body(stmts, inner)
        finally:
            self.exit_copy_outs.pop()
        binder.copy_out(copies, env, node)

    def inline_action(self, act: A.ActionDecl, call: A.Call, env: Env) -> None:
        self.run_action(act, act.params, call.args, env, self.ctx.decl_env(act, env), call)

    def run_action(self, act: A.ActionDecl, params, args, env: Env, parent: Env, node) -> None:
        """`act`'s body with `params` given `args` (copy-in/copy-out where they alias), then
        its copy-outs: a direct call, or a table's action with its actions list's arguments."""
        from .lower_calls import CallBinder
        stmts = act.body.stmts

        def run_body(prims, inner):
            StatementLowerer(self.ctx, prims).body(stmts, inner)

        binder = CallBinder(self)
        inner, copies = binder.bind(params, args, env, parent, node, run_body)
        self.action_body(stmts, inner, binder, copies, env, node)

    def inline_function(self, fn: A.FunctionDecl, call: A.Call, env: Env, result) -> None:
        from .lower_calls import CallBinder
        stmts = fn.body.stmts
        if result is None:
            result = None if fn.type.describe() == "void" else \
                self.ctx.layout.allocate(fn.type, "tmp", "tmp")

        def run_body(prims, inner):
            StatementLowerer(self.ctx, prims).body(stmts, inner, result)

        final = None
        if result is not None and any(p.direction in ("out", "inout") for p in fn.params):
            # the call's value is assigned after its arguments are copied out (which may
            # write the same location): return into a temporary, assign it last
            final, result = result, self.ctx.layout.allocate(fn.type, "tmp", "tmp")
        binder = CallBinder(self)
        inner, copies = binder.bind(fn.params, call.args, env, self.ctx.decl_env(fn, env),
                                    call, run_body)
        self.body(stmts, inner, result)
        binder.copy_out(copies, env, call)
        if final is not None:
            self.copy_storage(final, result, call)


def header_param(s) -> dict:
    """A header as a primitive argument: by name, or (a run-time stack index) as an
    expression BMv2 evaluates to the element."""
    if isinstance(s, DynamicElement):
        return s.json()
    return {"type": "header", "value": s.name}


def switch_subject(st: A.Switch):
    """(statements to run first, the expression the cases compare with). A switch expression
    with calls is evaluated once, into a local, not once per case label."""
    if not has_calls(st.expr):
        return [], st.expr
    decl = A.VarDecl(st.expr.loc, None, "switch_value", st.expr)
    decl.type = st.expr.type
    name = A.Name(st.expr.loc, decl.name)
    name.decl, name.type = decl, st.expr.type
    return [decl], name


def switch_as_ifs(st: A.Switch, subject=None):
    """A switch on a value as the equivalent if/else chain (labels without a body fall through
    to the next body; `default` is the final else); the cases compare with `subject`."""
    subject = st.expr if subject is None else subject
    groups, pending, default = [], [], None
    for case in st.cases:
        pending.extend(case.labels)
        if case.body is None:
            continue
        values = [lb for lb in pending if not isinstance(lb, A.Default)]
        if len(values) != len(pending):
            default = case.body
        if values:
            groups.append((values, case.body))
        pending = []
    chain = default
    for values, body in reversed(groups):
        cond = None
        for lb in values:
            test = A.Binary(lb.loc, "==", subject, lb)
            test.type = BOOL
            if cond is None:
                cond = test
            else:
                cond = A.Binary(lb.loc, "||", cond, test)
                cond.type = BOOL
        chain = A.If(values[0].loc, cond, body, chain)
    return chain


def _operands(e) -> list:
    """The sub-expressions of `e` in P4's evaluation order (left to right; arguments in order)."""
    out = []
    for child in vars(e).values():
        if isinstance(child, A.Argument):
            out.append(child.value)
        elif isinstance(child, A.Expr):
            out.append(child)
        elif isinstance(child, list):
            out += [item.value if isinstance(item, A.Argument) else item for item in child
                    if isinstance(item, (A.Expr, A.Argument))]
    return out


def _is_value(e) -> bool:
    """A scalar value (bit/int/bool/enum/error) that a temporary can hold."""
    from .types import ERROR, EnumT
    t = getattr(e, "type", None)
    return isinstance(t, (BitT, EnumT)) or is_bool(t) or t == ERROR


def has_calls(e) -> bool:
    """Does expression `e` call a user function (whose inlining has effects)?"""
    if isinstance(e, A.Call) and isinstance(getattr(e, "callee", None), A.FunctionDecl):
        return True
    if not isinstance(e, A.Node):
        return False
    for child in vars(e).values():
        if isinstance(child, A.Argument) and has_calls(child.value):
            return True
        if isinstance(child, A.Expr) and has_calls(child):
            return True
        if isinstance(child, list) and any(
                has_calls(i.value if isinstance(i, A.Argument) else i) for i in child
                if isinstance(i, (A.Expr, A.Argument))):
            return True
    return False


def wrap_param(p: dict) -> dict:
    """A primitive parameter in BMv2's form (see bmv2_forms.primitive_param): an expression is
    wrapped in one more {"type": "expression"} object and is never boolean."""
    return primitive_param(p)


def lower_call_value(lowerer: StatementLowerer, call: A.Call, env: Env, node, target) -> bool:
    """`x = f(...)` where f is a function or a value-returning extern: writes into `target`."""
    callee = getattr(call, "callee", None)
    if isinstance(callee, A.FunctionDecl):
        lowerer.inline_function(callee, call, env, target)
        return True
    f = call.func
    if isinstance(callee, A.MethodDecl) and isinstance(f, A.Member) and isinstance(f.expr, A.Name):
        inst = env.lookup(f.expr.decl)
        if isinstance(inst, ExternRef) and inst.kind == "Checksum16" and f.name == "get":
            if not isinstance(target, FieldRef):
                raise Unsupported(node, "Checksum16.get() must be assigned to a field")
            lowerer.ctx.externs.checksum16_get(lowerer, call.args[0].value, env, node, target)
            return True
    return False


__all__ = ["StatementLowerer", "ExternRef", "wrap_param", "switch_as_ifs", "switch_subject",
           "TO_ACTION_END"]


def _metadata_struct_pair(a, b) -> bool:
    """A struct's storage and standard_metadata's (a struct type the JSON keeps as a metadata
    header), in either order: copied field by field."""
    return {type(a), type(b)} == {StructStore, HeaderInst} and \
        getattr(a if isinstance(a, HeaderInst) else b, "metadata", False)


def _field_names(store) -> list:
    return list(store.fields) if isinstance(store, StructStore) else \
        [name for name, _, _ in store.type.fields]


def _field_of(store, name: str):
    return store.fields[name] if isinstance(store, StructStore) else store.field(name)
