"""Stage 3 (continued): `for` loops (P4_16 1.2.4), unrolled while checking.

BMv2 has no loops in a control, so a loop must become straight-line code. Both forms are unrolled:
`for (init; cond; update)` by running init, cond and update at compile time (they may only involve
the variables the loop declares, and the body may not assign them), and `for (T x in c)` over a
range `a .. b`, a list `{...}` or a header stack. In each copy of the body the loop variable is a
constant (a stack element is copied into a local), so a loop index is a constant stack index.
`break` and `continue` become boolean flags that guard the rest of the body and later iterations.

A C-form loop that cannot be unrolled (bounds known only at run time, a body assigning the loop
variable, too many iterations) is kept, checked, inside an action or function: lowering turns it
into BMv2's `_jump_if_zero`/`_jump` primitives (lower_stmt.py), as p4c does in actions. In an
apply block it is refused: BMv2's table/conditional graph cannot loop.

p4c 1.2.5's BMv2 back end accepts the C form but, in a control's apply block (and a function
inlined there), drops the loop: the body runs once with the variable uninitialised, or not at
all. It refuses the `in` form ("BMV2 does not support for-in loops"). Both forms are valid P4_16,
and the unrolled code is plain BMv2 JSON.
"""

from __future__ import annotations

from . import ast as A
from .constfold import fold
from .types import BOOL, INT, BitT, IntT, StackT

MAX_ITERATIONS = 1024


class LoopUnroller:
    """Unrolls the loops of one `checker.Checker`, which holds it: `unroll_for`/`unroll_for_in`
    return the checked Block. The unrolled copies are checked by that checker (its public
    services: `fail`, `resolve_type`, `const_int`, `expr`, `trial_type`, `assignable`,
    `fresh_local`, `var_decl`, `stmt`, `block_in`); the unroller keeps no state of its own."""

    def __init__(self, checker):
        self.checker = checker

    def fail(self, node, message: str):
        """The error to raise: reported through the checker's reporter."""
        return self.checker.fail(node, message)

    def unroll_for(self, st: A.For, s, in_action: bool):
        """The unrolled Block; or, in an action or function, when the bounds are known only at
        run time, the loop itself, checked, for lowering to BMv2's jumps (`run_time_for`)."""
        try:
            return self._unroll_for(st, s, in_action)
        except _NotUnrollable as exc:
            if not in_action:
                raise self.fail(exc.node, exc.message + " (in an action or function such a loop "
                                                        "runs as written)") from None
        return self.run_time_for(st, s, in_action)

    def run_time_for(self, st: A.For, s, in_action: bool) -> A.For:
        """A loop whose bounds are known only at run time, in an action or function: checked
        as written (its body may assign the loop variable, `break`/`continue` stay), and marked
        `run_time` for lowering. Statements hoisted out of the condition are kept in
        `st.cond_prelude`, to run before each test of the condition."""
        loop_scope = type(s)(s)
        st.init = self.checker.statements(st.init, loop_scope, in_action)
        if st.cond is not None:
            self.checker.preludes.append([])
            try:
                self.checker.expr(st.cond, loop_scope, expected=BOOL)
            finally:
                st.cond_prelude = self.checker.preludes.pop()
            if st.cond.type != BOOL:
                raise self.fail(st.cond, f"a for loop's condition must be bool, not "
                                         f"{st.cond.type.describe()}")
        else:
            st.cond_prelude = []
        if not isinstance(st.body, A.Block):
            st.body = A.Block(st.body.loc, [st.body])
        self.checker.run_time_loops += 1
        try:
            self.checker.block(st.body, loop_scope, in_action)
        finally:
            self.checker.run_time_loops -= 1
        st.update = self.checker.statements(st.update, loop_scope, in_action)
        st.run_time = True
        return st

    def _unroll_for(self, st: A.For, s, in_action: bool) -> A.Block:
        loop_scope = type(s)(s)
        values: dict[str, object] = {}
        decls: dict[str, tuple] = {}
        outer = []  # variables declared before the loop: they keep their final value
        for init in st.init:
            if isinstance(init, A.Assign) and isinstance(init.lhs, A.Name):
                d = s.lookup(init.lhs.name)
                if isinstance(d, A.VarDecl) and not getattr(d, "is_const", False):
                    init = A.VarDecl(init.loc, d.type_ref, d.name, init.rhs)
                    outer.append(d.name)
            if not isinstance(init, A.VarDecl) or init.init is None:
                raise _NotUnrollable(init, "for loop: inaemu unrolls loops in an apply block, so "
                                           "the initialisation may only declare or set the loop "
                                           "variables (`bit<8> i = 0`)")
            t = self.checker.resolve_type(init.type_ref, s)
            if not isinstance(t, (BitT, IntT)):
                raise _NotUnrollable(init, f"for loop: a loop variable must be a number, not "
                                           f"{t.describe()}")
            decls[init.name] = (t, init)
            values[init.name] = self._loop_constant(init.init, t, loop_scope, values, decls,
                                                    "its initial value")
        for name in decls:
            self._refuse_assignments(st.body, name)
        self._refuse_compile_time_uses(st.body, set(decls))
        for u in st.update:
            if not (isinstance(u, A.Assign) and isinstance(u.lhs, A.Name) and u.lhs.name in decls):
                raise _NotUnrollable(u, "for loop: inaemu unrolls loops in an apply block, so the "
                                        "update may only assign the loop variables")
        iterations = []
        while True:
            if st.cond is not None:
                go = self._loop_constant(st.cond, BOOL, loop_scope, values, decls,
                                         "its condition")
                if not go:
                    break
            iterations.append(dict(values))
            if len(iterations) > MAX_ITERATIONS:
                raise _NotUnrollable(st, f"for loop runs more than {MAX_ITERATIONS} times; inaemu "
                                         "unrolls loops in an apply block")
            for u in st.update:
                t = decls[u.lhs.name][0]
                values[u.lhs.name] = self._loop_constant(u.rhs, t, loop_scope, values, decls,
                                                         "its update")
        bindings = [[self._const_binding(st, name, decls[name][0], v) for name, v in it.items()]
                    for it in iterations]
        block = self._unrolled(st, bindings, s, in_action)
        for name in outer:
            final = A.Assign(st.loc, A.Name(st.loc, name), A.IntLit(st.loc, values[name]))
            self.checker.stmt(final, s, in_action)
            block.stmts.append(final)
        return block

    def unroll_for_in(self, st: A.ForIn, s, in_action: bool) -> A.Block:
        self._refuse_compile_time_uses(st.body, {st.name})
        t = self.checker.resolve_type(st.type_ref, s)
        c = st.collection
        assigned = self._assigns(st.body, st.name)
        bindings = []
        if isinstance(c, A.Range):
            lo = self.checker.const_int(c.low, s, "a loop range bound")
            hi = self.checker.const_int(c.high, s, "a loop range bound")
            if hi - lo >= MAX_ITERATIONS:
                raise self.fail(st, f"for loop runs more than {MAX_ITERATIONS} times; inaemu "
                                    "unrolls loops")
            items = [A.IntLit(c.loc, v) for v in range(lo, hi + 1)]
        elif isinstance(c, A.ListExpr):
            items = c.items
        else:
            ct = self.checker.expr(c, s)
            if not isinstance(ct, StackT):
                raise self.fail(c, f"for loop: cannot iterate over {ct.describe()} (a range "
                                   "`a .. b`, a list `{...}` or a header stack)")
            items = [A.Index(c.loc, A.clone(c), A.IntLit(c.loc, k)) for k in range(ct.size)]
        for item in items:
            if not assigned and isinstance(t, (BitT, IntT)):
                probe = A.clone(item)
                self.checker.trial_type(probe, s, t, keep=True)
                v = fold(probe)
                if v is not None and not isinstance(v, bool):
                    bindings.append([self._const_binding(st, st.name, t, v)])
                    continue
            var = A.VarDecl(st.loc, st.type_ref, st.name, A.clone(item))
            bindings.append([var])
        return self._unrolled(st, bindings, s, in_action)

    # ---- helpers ----------------------------------------------------------------------------
    def _loop_constant(self, e, t, loop_scope, values, decls, what):
        for name, v in values.items():
            loop_scope.names[name] = self._const_binding(e, name, decls[name][0], v)
        probe = A.clone(e)
        self.checker.trial_type(probe, loop_scope, t, keep=True)
        if t == BOOL and probe.type != BOOL:
            raise self.fail(e, f"a for loop's condition must be bool, not {probe.type.describe()}")
        self.checker.assignable(t, probe, probe)
        v = fold(probe)
        if v is None:
            raise _NotUnrollable(e, f"for loop: {what} is not a compile-time constant; inaemu "
                                    "unrolls loops in an apply block, so their bounds must be "
                                    "known when compiling")
        return v

    @staticmethod
    def _const_binding(node, name, t, value) -> A.ConstDecl:
        lit = A.IntLit(node.loc, value)
        lit.type = t if isinstance(t, BitT) else INT
        d = A.ConstDecl(node.loc, name, A.SimpleTypeRef(node.loc, "int"), lit)
        d.type = lit.type
        return d

    def _refuse_assignments(self, body, name) -> None:
        hit = self._assigns(body, name)
        if hit is not None:
            raise _NotUnrollable(hit, f"for loop: the body assigns the loop variable '{name}'; "
                                      "inaemu unrolls loops in an apply block, so it must change "
                                      "only in the update")

    def _refuse_compile_time_uses(self, body, names: set) -> None:
        """A loop variable is not compile-time known (P4_16 12.15; p4c: "slice bit index values
        must be constants"), even where inaemu's unrolling would know it: refuse it as a slice
        bound."""
        for node in A.walk(body):
            if not isinstance(node, A.Slice):
                continue
            for bound in (node.hi, node.lo):
                hit = next((n for n in A.walk(bound)
                            if isinstance(n, A.Name) and n.name in names), None)
                if hit is not None:
                    raise self.fail(hit, f"a slice's bounds must be compile-time known, and the "
                                         f"loop variable '{hit.name}' is not (as in p4c): "
                                         "shift and mask instead")

    def _assigns(self, node, name):
        """The first statement in `node` that assigns the variable `name` (or None)."""
        for st in _statements(node):
            if isinstance(st, A.Assign) and _root_name(st.lhs) == name:
                return st
            if isinstance(st, A.VarDecl) and st.name == name:
                return None  # shadowed from here on (approximation: scope ends with the block)
        return None

    def _unrolled(self, st, bindings, s, in_action) -> A.Block:
        """One block per iteration, each binding the loop variables, then checking the body."""
        jumps = _jumps(st.body)
        out = A.Block(st.loc, [])
        flags = {}
        for kind in ("break", "continue"):
            if kind in jumps:
                name = self.checker.fresh_local(s, f"loop_{kind}")
                flags[kind] = name
                decl = A.VarDecl(st.loc, A.SimpleTypeRef(st.loc, "bool"), name,
                                 A.BoolLit(st.loc, False))
                out.stmts.append(decl)
        outer = type(s)(s)
        for d in out.stmts:
            self.checker.var_decl(d, outer)
        for bound in bindings:
            iteration = A.Block(st.loc, [])
            scope = type(s)(outer)
            for b in bound:
                if isinstance(b, A.ConstDecl):
                    scope.names[b.name] = b
                else:
                    iteration.stmts.append(b)
            if "continue" in flags:
                iteration.stmts.append(_set(st.loc, flags["continue"], False))
            body = _guarded(A.clone(st.body), flags)
            if "break" in flags:
                body = A.If(st.loc, _not_flags(st.loc, [flags["break"]]), body, None)
            iteration.stmts.append(body)
            self.checker.block_in(iteration, scope, in_action)
            out.stmts.append(iteration)
        return out



class _NotUnrollable(Exception):
    """A loop that cannot be unrolled (bounds not known when compiling, a body assigning the
    loop variable, too many iterations): refused in an apply block, run as written elsewhere."""

    def __init__(self, node, message: str):
        super().__init__(message)
        self.node, self.message = node, message


def _statements(node):
    """Every statement under `node`, depth first, not entering nested loops' bodies."""
    if isinstance(node, A.Block):
        for st in node.stmts:
            yield from _statements(st)
    elif isinstance(node, A.If):
        yield node
        yield from _statements(node.then)
        if node.other is not None:
            yield from _statements(node.other)
    elif isinstance(node, A.Switch):
        yield node
        for c in node.cases:
            if c.body is not None:
                yield from _statements(c.body)
    elif isinstance(node, (A.For, A.ForIn)):
        yield node
        for init in getattr(node, "init", []) + getattr(node, "update", []):
            yield init
        yield from _statements(node.body)
    elif node is not None:
        yield node


def _jumps(body) -> set[str]:
    found = set()

    def walk(node):
        if isinstance(node, A.Break):
            found.add("break")
        elif isinstance(node, A.Continue):
            found.add("continue")
        elif isinstance(node, A.Block):
            for st in node.stmts:
                walk(st)
        elif isinstance(node, A.If):
            walk(node.then)
            walk(node.other)
        elif isinstance(node, A.Switch):
            for c in node.cases:
                walk(c.body)
    walk(body)
    return found


def _root_name(e):
    while isinstance(e, (A.Member, A.Index, A.Slice)):
        e = e.expr
    return e.name if isinstance(e, A.Name) else None


def _set(loc, name, value: bool) -> A.Assign:
    return A.Assign(loc, A.Name(loc, name), A.BoolLit(loc, value))


def _not_flags(loc, names) -> A.Expr:
    e = A.Name(loc, names[0])
    for n in names[1:]:
        e = A.Binary(loc, "||", e, A.Name(loc, n))
    return A.Unary(loc, "!", e)


def _may_jump(node) -> bool:
    return bool(_jumps(node))


def _guarded(node, flags):
    """`break`/`continue` set their flag; what follows a statement that may jump runs only if
    neither flag is set."""
    if not flags:
        return node
    if isinstance(node, A.Break):
        return _set(node.loc, flags["break"], True)
    if isinstance(node, A.Continue):
        return _set(node.loc, flags["continue"], True)
    if isinstance(node, A.If):
        node.then = _guarded(node.then, flags)
        if node.other is not None:
            node.other = _guarded(node.other, flags)
        return node
    if isinstance(node, A.Switch):
        for c in node.cases:
            if c.body is not None:
                c.body = _guarded(c.body, flags)
        return node
    if isinstance(node, A.Block):
        out = []
        for k, st in enumerate(node.stmts):
            jumps = _may_jump(st)
            out.append(_guarded(st, flags))
            rest = node.stmts[k + 1:]
            if jumps and rest:
                names = list(flags.values())
                out.append(A.If(st.loc, _not_flags(st.loc, names),
                                _guarded(A.Block(st.loc, rest), flags), None))
                break
        node.stmts = out
        return node
    return node


__all__ = ["LoopUnroller", "MAX_ITERATIONS"]
