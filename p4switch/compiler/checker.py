"""Stage 3: name resolution and type checking.

Walks the syntax tree once, binds every `Name` to its declaration (`.decl`), gives every
expression a type (`.type`), resolves widths and sizes by constant folding, and reports what is
wrong with its location. Later stages can then trust the tree: code generation does no checks.
"""

from __future__ import annotations

from . import ast as A
from .constfold import fold
from .check_exprs import ExpressionChecker
from .declared_types import DeclaredTypes
from .default_values import DefaultValues
from .desugar import Desugarer, drop_unused_locals
from .check_tables import TableChecker
from .header_structs import HeaderStructs
from .loops import LoopUnroller
from .errors import CompileError, Reporter
from .p4c_rules import parser_can_end
from .types import (BOOL, DONTCARE, ERROR, INT, STRING, VOID, BitT, EnumT, IntT, MethodT, NamedT,
                    StackT, StructT, TupleT, Type, TypeVarT, VarbitT, NewBitT, NEW_TYPES)

BODIES = (A.ParserDecl, A.ControlDecl, A.FunctionDecl)
MAX_REPORTED = 10


class Scope:
    def __init__(self, parent: "Scope | None" = None):
        self.parent = parent
        self.names: dict[str, object] = {}

    def lookup(self, name: str):
        s = self
        while s is not None:
            if name in s.names:
                return s.names[name]
            s = s.parent
        return None


class Checker(ExpressionChecker):
    """Checks one program (`run`). Its expression half, the core of the same recursion over
    the tree, is `check_exprs.ExpressionChecker`, a base class in a file of its own; the
    separate concepts are objects it holds and calls, each given the checker as the service
    that checks what they build: `unroller` (for loops, loops.py), `desugarer` (rewrites and
    hoisting into simpler forms, desugar.py), `header_structs` (structs inside headers,
    header_structs.py)."""

    def __init__(self, program: A.Program, reporter: Reporter, tracker=None):
        self.tracker = tracker
        self.program = program
        self.r = reporter
        self.top = Scope()
        self.errors: dict[str, int] = {}
        self.match_kinds: set[str] = set()
        self.type_params: list[set[str]] = []
        self.current_return: Type | None = None
        self.loop_names: set[str] = set()  # local names `fresh_local` has given out
        self.enclosing = None  # (ParserDecl or ControlDecl, its scope) while checking its body
        self.preludes: list[list] = []  # statements hoisted before the one being checked
        self.run_time_loops = 0  # depth of loops kept for run time (break/continue allowed)
        self.unroller = LoopUnroller(self)
        self.desugarer = Desugarer(self)
        self.defaults = DefaultValues(self)
        self.types = DeclaredTypes(self)
        self.header_structs = HeaderStructs(self)
        self.tables = TableChecker(self)

    # ---- entry ------------------------------------------------------------------------------
    def run(self) -> None:
        for d in self.program.decls:
            self.declare_top(d)
        # keep going after an error inside a parser, control or function body (nothing else
        # refers to those by name), so one run reports several independent problems
        found: list = []
        for d in list(self.program.decls):  # checking may add declarations (varbit boxes)
            try:
                self.check_top(d)
            except CompileError as exc:
                found.extend(exc.parts)
                if not isinstance(d, BODIES) or len(found) >= MAX_REPORTED:
                    break
        if found:
            raise CompileError(found)

    def fail(self, node, message: str):
        return self.r.error(node.loc, message)

    def declare_top(self, d) -> None:
        if isinstance(d, A.ErrorDecl):
            for name, _ in d.members:
                self.errors.setdefault(name, len(self.errors))
            return
        if isinstance(d, A.MatchKindDecl):
            for name, _ in d.members:
                self.match_kinds.add(name)
                self.top.names[name] = d
            return
        if isinstance(d, A.ExternFunctionDecl):
            existing = self.top.names.get(d.name)
            if isinstance(existing, list):
                existing.append(d)
            else:
                self.top.names[d.name] = [d]
            return
        if isinstance(d, (A.ParserDecl, A.ControlDecl)) and d.name in self.top.names:
            prev = self.top.names[d.name]
            if getattr(prev, "is_type", False) and not d.is_type:
                self.top.names[d.name] = d
                return
        if d.name in self.top.names and not isinstance(d, A.ExternDecl):
            first = getattr(self.top.names[d.name], "loc", None)
            where = f" (first at {first})" if first is not None else ""
            raise self.fail(d, f"'{d.name}' is declared twice{where}")
        self.top.names[d.name] = d

    def check_top(self, d) -> None:
        if self.tracker is not None:
            self.tracker.at(d)
        if isinstance(d, A.ConstDecl):
            self.check_const(d, self.top)
        elif isinstance(d, A.StructLikeDecl) and d.type_params:
            pass   # a generic struct or header: checked in each specialization (`specialized`)
        elif isinstance(d, (A.StructLikeDecl, A.EnumDecl, A.TypedefDecl)):
            self.decl_type(d)
        elif isinstance(d, A.ActionDecl):
            self.check_action(d, self.top)
        elif isinstance(d, A.FunctionDecl):
            self.check_function(d, self.top)
        elif isinstance(d, A.ParserDecl) and not d.is_type and not d.type_params:
            self.check_parser(d)
        elif isinstance(d, A.ControlDecl) and not d.is_type and not d.type_params:
            self.check_control(d)
        elif isinstance(d, A.InstanceDecl):
            self.check_instance(d, self.top)

    # ---- types (declared_types.DeclaredTypes) -----------------------------------------------
    def resolve_type(self, ref: A.TypeRef, scope: Scope) -> Type:
        """The type a written type stands for."""
        return self.types.resolve_type(ref, scope)

    def decl_type(self, d) -> Type:
        """The type a struct, header, union, enum or typedef declaration makes."""
        return self.types.decl_type(d)

    def const_int(self, e: A.Expr, scope: Scope, what: str) -> int:
        self.expr(e, scope)
        v = fold(e)
        if v is None or isinstance(v, bool):
            raise self.fail(e, f"{what} must be a compile-time integer constant")
        return v

    def const_bool(self, e: A.Expr, scope: Scope, what: str) -> bool:
        self.expr(e, scope, expected=BOOL)
        v = fold(e)
        if not isinstance(v, bool):
            raise self.fail(e, f"{what} must be a compile-time boolean constant (true or false)")
        return v

    # ---- declarations -----------------------------------------------------------------------
    def check_const(self, d: A.ConstDecl, scope: Scope) -> None:
        t = self.resolve_type(d.type_ref, scope)
        d.type = t
        self.expr(d.value, scope, expected=t)
        self.assignable(t, d.value, d.value)
        if fold(d.value) is None and not isinstance(t, (StructT, TupleT)) and \
                not (t == STRING and isinstance(d.value, A.StrLit)):
            raise self.fail(d.value, f"the value of constant '{d.name}' is not a compile-time constant")
        scope.names[d.name] = d

    def params_scope(self, params, parent: Scope) -> Scope:
        s = Scope(parent)
        for p in params:
            p.type = self.resolve_type(p.type_ref, parent)
            if p.type == INT and p.direction:
                raise self.fail(p, f"parameter '{p.name}' of type int cannot have a direction "
                                   f"('{p.direction}'): an int is a compile-time value")
            if p.name in s.names:
                raise self.fail(p, f"parameter '{p.name}' is declared twice")
            if p.default is not None:   # typed once here; calls without the argument take it
                self.expr(p.default, parent, expected=p.type)
                self.assignable(p.type, p.default, p.default)
            s.names[p.name] = p
        return s

    def check_action(self, d: A.ActionDecl, scope: Scope) -> None:
        s = self.params_scope(d.params, scope)
        for p in d.params:
            if not p.direction and not isinstance(p.type, (BitT, BOOL.__class__, EnumT)):
                if not isinstance(p.type, BitT) and p.type != BOOL and not isinstance(p.type, EnumT):
                    raise self.fail(p, f"action data parameter '{p.name}' must be bit<>/int<>/bool, "
                                       f"not {p.type.describe()}")
        self.block(d.body, s, in_action=True)
        scope.names[d.name] = d

    def check_function(self, d: A.FunctionDecl, scope: Scope) -> None:
        self.type_params.append(set(d.type_params))
        d.type = self.resolve_type(d.return_type, scope)
        s = self.params_scope(d.params, scope)
        saved, self.current_return = self.current_return, d.type
        exit_stmt = next((n for n in A.walk(d.body) if isinstance(n, A.Exit)), None)
        if exit_stmt is not None:
            raise self.fail(exit_stmt, f"'exit' is not allowed in a function ('{d.name}'), as "
                                       "p4c refuses it: return instead, or exit in an action")
        self.block(d.body, s, in_action=True)
        self.current_return = saved
        self.type_params.pop()

    def check_instance(self, d: A.InstanceDecl, scope: Scope) -> None:
        t = self.resolve_type(d.type_ref, scope)
        d.type = t
        if not isinstance(t, NamedT) or t.category not in ("extern", "parser", "control", "package"):
            raise self.fail(d, f"cannot instantiate {t.describe()}")
        if t.category in ("parser", "control"):
            if scope is self.top:   # P4_16 10.3.1; p4c: "cannot instantiate at top-level"
                raise self.fail(d, f"a {t.category} cannot be instantiated at the top level: "
                                   f"instantiate '{t.name}' in the package's arguments or "
                                   "inside a parser or control")
            self.constructor_arguments(d, t.decl, scope)
        else:
            if t.category == "package" and any(a.name for a in d.args):
                self.order_named_arguments(d, t.decl.params)
            for a in d.args:
                self.expr(a.value, scope)
        if t.category == "extern" and t.name == "register" and t.type_args and \
                not isinstance(t.type_args[0], BitT) and \
                not (isinstance(t.type_args[0], EnumT) and t.type_args[0].underlying):
            raise self.fail(d, f"register of {t.type_args[0].describe()}: BMv2 registers hold "
                               "only bit<> or int<> values (as p4c requires)")
        if t.category == "extern":
            ctors = [m for m in t.decl.methods if m.return_type is None]
            if ctors and not any(len(c.params) == len(d.args) for c in ctors):
                counts = sorted({len(c.params) for c in ctors})
                raise self.fail(d, f"{t.name} takes {' or '.join(map(str, counts))} constructor "
                                   f"arguments, not {len(d.args)}")
        scope.names[d.name] = d

    def order_named_arguments(self, d: A.InstanceDecl, params: list) -> None:
        """`V1Switch(p = P(), ig = I(), vr = V(), ...)`: named arguments in any order, put in
        the package's parameter order (P4_16 8.20.1; all named or none)."""
        names = [p.name for p in params]
        if not all(a.name for a in d.args):
            raise self.fail(d, "arguments must be all named or all positional")
        for a in d.args:
            if a.name not in names:
                raise self.fail(a, f"'{d.type.name}' has no parameter named '{a.name}'")
        given = {a.name: a for a in d.args}
        if len(given) != len(d.args):
            raise self.fail(d, "an argument is named twice")
        missing = [n for n in names if n not in given]
        if missing:
            raise self.fail(d, f"no argument for parameter '{missing[0]}' of '{d.type.name}'")
        d.args[:] = [given[n] for n in names]

    def check_parser(self, d: A.ParserDecl) -> None:
        s = self.params_scope(d.params + d.ctor_params, self.top)
        for p in d.ctor_params:   # compile-time values, which may be passed on as arguments
            p.is_constructor = True
        d.locals = self.local_decls(d.locals, s)
        states = {st.name: st for st in d.states}
        if "start" not in states:
            raise self.fail(d, f"parser '{d.name}' has no 'start' state")
        for st in d.states:
            if st.name in ("accept", "reject"):
                raise self.fail(st, f"state '{st.name}' is built in and cannot be redefined")
        self.enclosing = (d, s)
        try:
            self.check_states(d, s, states)
        finally:
            self.enclosing = None
        if not parser_can_end(states):
            raise self.fail(d, f"parser '{d.name}' never reaches the accept or reject state "
                               "(as p4c refuses it)")
        d.scope = s

    def check_states(self, d: A.ParserDecl, s: Scope, states: dict) -> None:
        for st in d.states:
            ss = Scope(s)
            st.stmts = self.statements(st.stmts, ss, in_action=False, in_parser=True)
            tr = st.transition
            if tr is None:
                continue
            targets = [tr.state] if tr.select is None else [c.state for c in tr.cases]
            for t in targets:
                if t not in states and t not in ("accept", "reject"):
                    raise self.fail(tr, f"transition to unknown state '{t}'")
            if tr.select is not None:
                reads = self.desugarer.select_lookaheads(tr.select, ss)
                if reads:
                    st.stmts += self.statements(reads, ss, in_action=False, in_parser=True)
                for e in tr.select:
                    if isinstance(self.expr(e, ss), NEW_TYPES):
                        raise self.fail(e, f"a select cannot match on {e.type.describe()}, a type "
                                           "made by 'type' (as p4c refuses it): cast it")
                    if e.type == ERROR:
                        raise self.fail(e, "a select cannot match on an error value (as p4c "
                                           "refuses it): compare it in an if instead")
                for c in tr.cases:
                    self.tables.keyset(c.keyset, tr.select, ss)

    def check_control(self, d: A.ControlDecl) -> None:
        s = self.params_scope(d.params + d.ctor_params, self.top)
        for p in d.ctor_params:   # compile-time values, which may be passed on as arguments
            p.is_constructor = True
        d.locals = self.local_decls(d.locals, s)
        self.enclosing = (d, s)
        try:
            self.block(d.apply, s, in_action=False)
        finally:
            self.enclosing = None
        if any(isinstance(p.type, NamedT) and p.type.name == "packet_out" for p in d.params):
            drop_unused_locals(d.apply)
        d.scope = s

    def local_decls(self, decls: list, s: Scope) -> list:
        """A control's or parser's declarations, checked. A `varbit` or `tuple` variable is
        replaced by what stands for it (see desugar.py): variables, and for a varbit variable's
        initialiser an assignment, kept in declaration order among the other initialised
        variables, which lowering runs in that order on every entry."""
        out = []
        for d in decls:
            t = self.resolve_type(d.type_ref, s) if isinstance(d, A.VarDecl) else None
            if isinstance(t, (VarbitT, TupleT)) and not getattr(d, "is_const", False):
                name = d.name
                if name in s.names:
                    raise self.fail(d, f"'{name}' is declared twice in this scope")
                if isinstance(t, VarbitT):
                    out.extend(self.desugarer.boxed_varbit_variable(d, t, s))
                else:
                    out.extend(self.desugarer.flatten_tuple_variable(d, t, s))
                continue
            self.local_decl(d, s)
            out.append(d)
        return out

    def local_decl(self, d, s: Scope) -> None:
        name = getattr(d, "name", None)
        if name is not None and name in s.names:
            raise self.fail(d, f"'{name}' is declared twice in this scope")
        if isinstance(d, A.ActionDecl):
            self.check_action(d, s)
        elif isinstance(d, A.TableDecl):
            self.tables.check_table(d, s)
        elif isinstance(d, A.InstanceDecl):
            self.check_instance(d, s)
        elif isinstance(d, A.ConstDecl):
            self.check_const(d, s)
        elif isinstance(d, A.VarDecl):
            self.var_decl(d, s)
        elif isinstance(d, A.ValueSetDecl):
            d.type = self.resolve_type(d.type_ref, s)
            for fname, ft, _ in (d.type.fields if isinstance(d.type, StructT) else ()):
                if not isinstance(ft, BitT) or isinstance(ft, NEW_TYPES) or ft.signed:
                    raise self.fail(d, f"value set '{d.name}': field '{fname}' of "
                                       f"{d.type.describe()} is {ft.describe()}; P4Runtime (and "
                                       "so p4c) needs every field of a value set's struct to be "
                                       "bit<W>")
            d.size_value = self.const_int(d.size, s, "a value_set size")
            s.names[d.name] = d
        else:
            raise self.fail(d, f"unsupported declaration here: {type(d).__name__}")

    def var_decl(self, d: A.VarDecl, s: Scope) -> None:
        t = self.resolve_type(d.type_ref, s)
        d.type = t
        if d.init is not None:
            d.init.typed_by_context = True
            self.expr(d.init, s, expected=t)
            self.assignable(t, d.init, d.init)
        if d.name in s.names and s.parent is not None:
            raise self.fail(d, f"'{d.name}' is already declared in this scope")
        s.names[d.name] = d

    def action_call_args(self, act: A.ActionDecl, call: A.Call, s: Scope, partial: bool) -> None:
        """Check a call of an action; `partial` (in an actions list) binds directional params only."""
        params = [p for p in act.params if p.direction] if partial else act.params
        if partial and len(call.args) > len(params):
            raise self.fail(call, f"action '{act.name}' has {len(params)} directional parameters")
        if not partial:
            self.argument_count(call, params, f"action '{act.name}'")
        call.func.decl = act
        call.func.type = NamedT("action", act.name, act)
        call.type = VOID
        for p, a in zip(params, call.args):   # (missing ones take their defaults when lowered)
            self.expr(a.value, s, expected=p.type)
            self.assignable(p.type, a.value, a.value, literal_to_new_type=False)
            if p.direction in ("out", "inout") and not isinstance(a.value, A.DontCare):
                self.lvalue(a.value)

    # ---- statements -------------------------------------------------------------------------
    def block(self, b: A.Block, s: Scope, in_action: bool, in_parser: bool = False) -> None:
        self.block_in(b, Scope(s), in_action, in_parser)

    def block_in(self, b: A.Block, inner: Scope, in_action: bool, in_parser: bool = False) -> None:
        b.stmts = self.statements(b.stmts, inner, in_action, in_parser)

    def statements(self, stmts: list, s: Scope, in_action: bool, in_parser: bool = False) -> list:
        """Checks statements in order; a statement may be replaced (a loop by its unrolled
        copies) or preceded by statements hoisted out of it (`self.preludes`)."""
        out = []
        for st in stmts:
            self.preludes.append([])
            try:
                new = self.stmt(st, s, in_action, in_parser)
                if new is None:
                    new = self.header_structs.header_struct_uses(st, s, in_action, in_parser)
            finally:
                hoisted = self.preludes.pop()
            out.extend(hoisted)
            out.extend(new if isinstance(new, list) else [st if new is None else new])
        return out

    def hoist(self, decl: A.VarDecl, s: Scope) -> None:
        """Declares (and checks) `decl` just before the statement being checked."""
        self.var_decl(decl, s)
        self.preludes[-1].append(decl)

    def hoist_statement(self, st) -> None:
        """Places the (checked) statement `st` just before the statement being checked."""
        self.preludes[-1].append(st)

    def can_hoist(self) -> bool:
        """Whether a statement is being checked (so `hoist` has a place to put things)."""
        return bool(self.preludes)

    def trial_type(self, e, s, expected=None, keep=False):
        """The type of (a copy of) `e`, hoisting nothing: for the type of a temporary, or a
        compile-time evaluation (`keep`: type `e` itself)."""
        saved, self.preludes = self.preludes, []
        try:
            return self.expr(e if keep else A.clone(e), s, expected)
        finally:
            self.preludes = saved

    def fresh_local(self, s: Scope, base: str) -> str:
        """A local name based on `base`, unused in `s` and never given out before."""
        n = 0
        name = base
        while s.lookup(name) is not None or name in self.loop_names:
            n += 1
            name = f"{base}_{n}"
        self.loop_names.add(name)
        return name

    def stmt(self, st, s: Scope, in_action: bool, in_parser: bool = False):
        if self.tracker is not None:
            self.tracker.at(st)
        if isinstance(st, (A.Assign, A.VarDecl, A.CallStmt, A.Return, A.Switch)) and \
                not in_parser:
            value = {A.Assign: "rhs", A.VarDecl: "init", A.CallStmt: "call", A.Return: "value",
                     A.Switch: "expr"}
            self.desugarer.hoist_table_results(getattr(st, value[type(st)]), s, in_action)
        if in_parser and isinstance(st, (A.Assign, A.VarDecl, A.CallStmt)):
            new = self.desugarer.hoist_lookaheads(st, s)
            if new is not None:
                self.stmt(new, s, in_action, in_parser)
                return new
        if isinstance(st, A.Block):
            self.block(st, s, in_action, in_parser)
        elif isinstance(st, (A.For, A.ForIn)):
            if in_parser:
                raise self.fail(st, "a for loop is not allowed in a parser state (P4_16 allows "
                                    "loops in controls, actions and functions)")
            if isinstance(st, A.For):
                return self.unroller.unroll_for(st, s, in_action)
            return self.unroller.unroll_for_in(st, s, in_action)
        elif isinstance(st, (A.Break, A.Continue)) and self.run_time_loops:
            pass  # lowered to a jump out of, or to the update of, the innermost loop
        elif isinstance(st, (A.Break, A.Continue)):
            kind = "break" if isinstance(st, A.Break) else "continue"
            raise self.fail(st, f"'{kind}' outside a for loop")
        elif isinstance(st, A.Assign) and self.desugarer.tuple_assignment(st, s) is not None:
            block = self.desugarer.tuple_assignment(st, s)
            self.stmt(block, s, in_action, in_parser)
            return block
        elif isinstance(st, A.Assign):
            self.expr(st.lhs, s)
            self.lvalue(st.lhs)
            replaced = self.invalidating_assignment(st, s, in_action, in_parser)
            if replaced is not None:
                return replaced
            st.rhs.typed_by_context = True
            self.expr(st.rhs, s, expected=st.lhs.type)
            self.assignable(st.lhs.type, st.rhs, st.rhs)
        elif isinstance(st, A.CallStmt):
            self.expr(st.call, s)
            if getattr(st.call, "folded", None) is True:   # a static_assert that holds
                return A.Empty(st.loc)
            f = st.call.func
            ftype = getattr(f, "type", None)
            if in_parser and isinstance(ftype, NamedT) and ftype.category == "action":
                raise self.fail(st, f"action '{ftype.name}' cannot be called in a parser (p4c: "
                                    "action calls are not allowed within parsers)")
            if in_action and isinstance(f, A.Member) and f.name == "apply" and \
                    isinstance(getattr(f, "type", None), MethodT):
                raise self.fail(st, f"a {f.type.owner} cannot be applied inside an action "
                                    "or function")
        elif isinstance(st, A.If) and not in_parser and self.desugarer.needs_split(st.cond, s):
            block = self.desugarer.split_applies(st, s)
            self.stmt(block, s, in_action, in_parser)
            return block
        elif isinstance(st, A.If):
            self.expr(st.cond, s, expected=BOOL)
            if st.cond.type != BOOL:
                raise self.fail(st.cond, f"condition must be bool, not {st.cond.type.describe()}")
            if not isinstance(st.then, A.Block):
                st.then = A.Block(st.then.loc, [st.then])
            self.stmt(st.then, s, in_action, in_parser)
            if st.other is not None:
                if not isinstance(st.other, A.Block):
                    st.other = A.Block(st.other.loc, [st.other])
                self.stmt(st.other, s, in_action, in_parser)
        elif isinstance(st, A.VarDecl) and getattr(st, "is_const", False):
            # a local constant is folded wherever it is used: it needs no storage
            c = A.ConstDecl(st.loc, st.name, st.type_ref, st.init, annotations=st.annotations)
            if c.name in s.names and s.parent is not None:
                raise self.fail(st, f"'{c.name}' is already declared in this scope")
            self.check_const(c, s)
            if fold(c.value) is not None:
                return A.Empty(st.loc)
            self.var_decl(st, s)
        elif isinstance(st, A.VarDecl) and isinstance(self.resolve_type(st.type_ref, s), VarbitT):
            return self.desugarer.boxed_varbit_variable(st, self.resolve_type(st.type_ref, s), s)
        elif isinstance(st, A.VarDecl) and self.stack_list(st.init) is not None and \
                isinstance(self.resolve_type(st.type_ref, s), StackT):
            # `H[2] s = {a, b};`: the stack, then one assignment per element
            init, st.init = self.stack_list(st.init), None
            self.var_decl(st, s)
            fill = A.Assign(init.loc, A.Name(st.loc, st.name), init)
            return [st] + self.statements([fill], s, in_action, in_parser)
        elif isinstance(st, A.VarDecl) and isinstance(self.resolve_type(st.type_ref, s), TupleT):
            return self.desugarer.flatten_tuple_variable(st, self.resolve_type(st.type_ref, s), s)
        elif isinstance(st, A.VarDecl):
            self.var_decl(st, s)
            if st.type == INT:
                raise self.fail(st, f"variable '{st.name}' cannot have type int (only constants "
                                    "can, as in p4c): give it a width, e.g. bit<32>")
        elif isinstance(st, A.Switch):
            in_function = self.current_return is not None  # p4c accepts a switch there
            if (in_action and not in_function) or in_parser:
                where = "a parser state" if in_parser else "an action"
                raise self.fail(st, f"a switch statement is not allowed in {where} (P4_16 §12: "
                                    "switch statements are only supported in control blocks)")
            self.switch(st, s, in_action)
        elif isinstance(st, A.Return):
            if st.value is not None:
                if self.current_return is None:
                    raise self.fail(st, "only functions can return a value")
                st.value.typed_by_context = True
                self.expr(st.value, s, expected=self.current_return)
                self.assignable(self.current_return, st.value, st.value)
        elif isinstance(st, (A.Exit, A.Empty)):
            if in_parser and isinstance(st, A.Exit):
                raise self.fail(st, "'exit' is not allowed in a parser")
        elif isinstance(st, A.InstanceDecl):
            self.check_instance(st, s)
        else:
            raise self.fail(st, f"unsupported statement {type(st).__name__}")

    def invalidating_assignment(self, st: A.Assign, s: Scope, in_action: bool, in_parser: bool):
        """`h = {#}` (or `h = ...`) for a header `h` is `h.setInvalid()`; a list assigned to a
        header stack is one assignment per element. The checked replacement, or None."""
        t = st.lhs.type
        rhs = st.rhs
        if isinstance(t, StackT) and self.stack_list(rhs) is not None:
            rhs = self.stack_list(rhs)
        if isinstance(rhs, (A.InvalidValue, A.DefaultValue)) and isinstance(t, StructT) and \
                t.kind == "header":
            call = A.CallStmt(st.loc, A.Call(st.loc, A.Member(rhs.loc, st.lhs, "setInvalid"),
                                             [], []))
            self.stmt(call, s, in_action, in_parser)
            return call
        if isinstance(rhs, A.ListExpr) and isinstance(t, StackT):
            for item in rhs.items:
                if isinstance(item, A.InvalidValue):   # p4c types a bare {#} in no list
                    raise self.fail(item, f"'{{#}}' in a list needs a cast to say its type, as "
                                          f"p4c requires: ({t.element.describe().split()[-1]})"
                                          "{#}")
            self.defaults.expand(rhs, t)
            if len(rhs.items) != t.size:
                raise self.fail(rhs, f"a list of {len(rhs.items)} values cannot initialise "
                                     f"{t.describe()}: give one per element (or end with '...')")
            block = A.Block(st.loc, [A.Assign(item.loc, A.Index(st.lhs.loc, A.clone(st.lhs),
                                                                A.IntLit(item.loc, k)), item)
                                     for k, item in enumerate(rhs.items)])
            self.stmt(block, s, in_action, in_parser)
            return block
        return None

    @staticmethod
    def stack_list(e):
        """The list of `{a, b}` or `(H[2]){a, b}` (a header stack expression), else None."""
        if isinstance(e, A.Cast) and isinstance(e.type_ref, A.StackTypeRef):
            e = e.expr
        return e if isinstance(e, A.ListExpr) else None

    def switch(self, st: A.Switch, s: Scope, in_action: bool) -> None:
        self.expr(st.expr, s)
        t = st.expr.type
        table = t.decl if isinstance(t, NamedT) and t.category == "action_run" else None
        if table is None and not isinstance(t, (BitT, EnumT)):
            raise self.fail(st.expr, "switch needs a table's action_run, a bit<> or an enum value")
        seen = set()
        default = None          # p4c: one 'default', and no label after it
        for c in st.cases:
            for label in c.labels:
                if isinstance(label, A.Default):
                    if default is not None:
                        raise self.fail(label, "switch has more than one 'default' label")
                    default = label
                    continue
                if default is not None:
                    raise self.fail(label, "switch label after the 'default' label")
                if table is not None:
                    if not isinstance(label, A.Name):
                        raise self.fail(label, "expected an action name")
                    act = s.lookup(label.name)
                    if act not in {a for a, _ in table.action_decls}:
                        raise self.fail(label, f"'{label.name}' is not an action of table "
                                               f"'{table.name}'")
                    label.decl = act
                    key = act
                else:
                    self.expr(label, s, expected=t)
                    key = fold(label)
                    if key is None:
                        raise self.fail(label, "switch labels must be constants")
                if key in seen:
                    raise self.fail(label, "duplicate switch label")
                seen.add(key)
            if c.body is not None:
                self.block(c.body, s, in_action)

    def lvalue(self, e: A.Expr) -> None:
        if isinstance(e, A.Name):
            d = e.decl
            if isinstance(d, A.Param) and d.direction in ("in", ""):
                raise self.fail(e, f"cannot assign to read-only parameter '{d.name}'")
            if isinstance(d, (A.VarDecl, A.Param)):
                return
            raise self.fail(e, f"cannot assign to '{e.name}'")
        if isinstance(e, (A.Member, A.Index, A.Slice)):
            self.lvalue(e.expr)
            return
        raise self.fail(e, "this expression cannot be assigned to")

    def assignable(self, target: Type, e: A.Expr, where, literal_to_new_type=True) -> None:
        """Refuse `e` where a `target` value is wanted. A literal becomes a type made by `type`
        only by assignment, an initializer or a return (not as an argument), as in p4c."""
        src = e.type
        if isinstance(target, TypeVarT) or isinstance(src, TypeVarT) or target == DONTCARE:
            return
        if isinstance(e, A.DontCare):
            return
        if isinstance(target, NamedT) and target.category == "extern":   # packet_in, a counter
            if not (isinstance(src, NamedT) and src.category == "extern" and
                    src.name == target.name):
                raise self.fail(where, f"expected an instance of extern {target.name}, not "
                                       f"{src.describe()}")
            return
        problem = self.value_problem(e)
        if problem is not None:
            raise self.fail(e, problem)
        if isinstance(target, NEW_TYPES) or isinstance(src, NEW_TYPES):
            if src == target:
                return
            if isinstance(target, NewBitT) and isinstance(src, IntT) and literal_to_new_type:
                self._retype_literal(e, target)
                return
            raise self.fail(where, f"cannot {'assign' if literal_to_new_type else 'pass'} "
                                   f"{src.describe()} {'to' if literal_to_new_type else 'as'} "
                                   f"{target.describe()} (use a cast)")
        if isinstance(target, BitT) and isinstance(src, IntT):
            return
        if isinstance(target, BitT) and isinstance(src, BitT):
            if target != src:
                raise self.fail(where, f"cannot assign {src.describe()} to {target.describe()} "
                                       f"(use a cast)")
            return
        if isinstance(target, BitT) and not (isinstance(src, EnumT) and src.underlying == target):
            castable = src == BOOL or isinstance(src, EnumT)
            raise self.fail(where, f"cannot assign {src.describe()} to {target.describe()}"
                                   + (" (use a cast)" if castable else ""))
        if isinstance(target, StructT) and isinstance(src, TupleT):
            return
        if isinstance(target, StructT) and src is not target and not isinstance(src, TupleT):
            raise self.fail(where, f"expected {target.describe()}, not {src.describe()}")
        if isinstance(target, StackT) and src != target:
            raise self.fail(where, f"expected {target.describe()}, not {src.describe()}")
        if target == BOOL and src != BOOL:
            raise self.fail(where, f"cannot assign {src.describe()} to bool")
        if isinstance(target, EnumT) and isinstance(src, IntT) and target.underlying:
            return
        if isinstance(target, EnumT) and src is not target:
            raise self.fail(where, f"cannot assign {src.describe()} to {target.describe()}")



def check(program: A.Program, reporter: Reporter, tracker=None) -> Checker:
    c = Checker(program, reporter, tracker)
    c.run()
    return c

