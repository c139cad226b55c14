"""Stage 3 (continued): rewrites the checker makes so that code generation sees only simple forms.

* `==`/`!=` on whole headers, header unions, structs and stacks become field-wise comparisons
  (P4_16 §8.9: two headers are equal when both are invalid, or both valid with equal fields; two
  unions when their members are pairwise equal headers).
* A header union's `isValid()` (true when some member is valid) becomes the `||` of its members'.
* Values code generation can only take from a statement of their own are hoisted into a fresh
  local declared just before the statement: a call inside a header-stack index, `t.apply().hit`
  /`.miss` nested in an expression, `lookahead<T>()` inside an expression or as a statement, and
  the don't-care argument `_` (a fresh, unused local).
"""

from __future__ import annotations

from . import ast as A
from .types import (BOOL, BitT, EnumT, IntT, NewBitT, NewBoolT, StackT, StructT, TupleT, Type,
                    VarbitT)


class Desugarer:
    """The rewrites of one `checker.Checker`, which holds it and calls it where a form needs
    rewriting. Each rewrite builds plain nodes and has that checker check them; it uses only the
    checker's public services: `fail`, `expr`, `stmt`, `var_decl`, `decl_type`,
    `check_instance`, its hoisting (`hoist`, `hoist_statement`, `fresh_local`, `trial_type`:
    the statements placed before the one being checked, and the local names taken) and the
    program and top-level scope it checks (`program`, `top`: a varbit box is a new top-level
    header type). The desugarer keeps no state of its own."""

    def __init__(self, checker):
        self.checker = checker

    def fail(self, node, message: str):
        """The error to raise: reported through the checker's reporter."""
        return self.checker.fail(node, message)

    # ---- whole-value equality ---------------------------------------------------------------
    def expand_equality(self, e: A.Binary, t: Type, s) -> None:
        for side in (e.left, e.right):
            if has_call(side):
                raise self.fail(side, "comparing whole headers/structs: this operand contains a "
                                      "call, which the field-wise comparison would repeat; assign "
                                      "it to a variable first")
        eq = _equal(e.left, e.right, t, e.loc)
        new = eq if e.op == "==" else A.Unary(e.loc, "!", eq)
        self.checker.expr(new, s, BOOL)
        A.become(e, new)

    def expand_union_valid(self, e: A.Call, union: StructT, s) -> None:
        """`u.isValid()` on a header union: is some member valid."""
        target = e.func.expr
        new = _any(e.loc, [_valid(A.Member(e.loc, A.clone(target), name), e.loc)
                           for name, _, _ in union.fields])
        self.checker.expr(new, s, BOOL)
        source = A.Call(e.loc, e.func, [], [])  # p4c names the key `u.$valid$`
        A.become(e, new)
        e.display = source

    # ---- tuple-typed variables ---------------------------------------------------------------
    def flatten_tuple_variable(self, d: A.VarDecl, t: TupleT, s) -> list:
        """`tuple<A, B> t = {a, b};` is two variables `t_0`, `t_1` (BMv2 has no tuple storage);
        `t` then reads as the list `{t_0, t_1}` and `t[k]` as `t_k`."""
        if d.init is None:
            items = [None] * len(t.items)
        else:
            items = self.tuple_items(self.checker.defaults.expand(d.init, t), len(t.items), s)
        decls = []
        for k, (item_type, init) in enumerate(zip(t.items, items)):
            name = self.checker.fresh_local(s, f"{d.name}_{k}")
            var = A.VarDecl(d.loc, _type_ref(item_type, d.loc), name, init)
            self.checker.var_decl(var, s)
            decls.append(var)
        d.type = t
        d.elements = [v.name for v in decls]
        s.names[d.name] = d
        return decls

    def tuple_items(self, e: A.Expr, n: int, s) -> list:
        if isinstance(e, A.Name) and hasattr(s.lookup(e.name), "elements"):
            return [A.Name(e.loc, name) for name in s.lookup(e.name).elements]
        if isinstance(e, A.ListExpr) and len(e.items) == n:
            return e.items
        raise self.fail(e, f"a tuple variable takes a list of {n} values or another tuple "
                           "variable here")

    def tuple_assignment(self, st: A.Assign, s):
        """`t = {x, y}` for a flattened tuple variable t: one assignment per element."""
        d = s.lookup(st.lhs.name) if isinstance(st.lhs, A.Name) else None
        if not hasattr(d, "elements"):
            return None
        items = self.tuple_items(self.checker.defaults.expand(st.rhs, d.type), len(d.elements), s)
        return A.Block(st.loc, [A.Assign(st.loc, A.Name(st.lhs.loc, name), item)
                                for name, item in zip(d.elements, items)])

    # ---- varbit-typed variables --------------------------------------------------------------
    def boxed_varbit_variable(self, d: A.VarDecl, t: VarbitT, s) -> list:
        """`varbit<W> v = e;` lives in a local header with one varbit field (BMv2 keeps varbit
        fields only in headers): `v` reads and writes that field."""
        box = self.varbit_box(t.max_width, d.loc)
        var = A.VarDecl(d.loc, A.NamedTypeRef(d.loc, box.name), d.name, None, d.annotations)
        self.checker.var_decl(var, s)
        var.varbit_box = True
        out = [var]
        if d.init is not None:
            init = A.Assign(d.loc, A.Name(d.loc, d.name), d.init)
            self.checker.stmt(init, s, False)
            out.append(init)
        return out

    def varbit_box(self, width: int, loc) -> A.StructLikeDecl:
        name = f"varbit_{width}_box_t"
        top = self.checker.top
        existing = top.lookup(name)
        if isinstance(existing, A.StructLikeDecl):
            return existing
        n = 0
        while top.lookup(name) is not None:
            n += 1
            name = f"varbit_{width}_box_{n}_t"
        decl = A.StructLikeDecl(loc, name, "header", [
            A.FieldDecl(loc, "value", A.VarbitTypeRef(loc, A.IntLit(loc, width)))])
        decl.varbit_box = True         # the compiler's own: any width (partial_byte_headers)
        top.names[name] = decl
        self.checker.program.decls.insert(0, decl)
        self.checker.decl_type(decl)
        return decl

    # ---- direct application of a control or parser type --------------------------------------
    def implicit_instance(self, name: A.Name, s, enclosing):
        """`C.apply(...)` with C a control or parser type: an instance named C, local to the
        calling control or parser (P4_16 §15.1, direct type invocation; p4c names the instance
        after the type). `enclosing`: (that ControlDecl or ParserDecl, its scope)."""
        owner, scope = enclosing
        inst = A.InstanceDecl(name.loc, name.name, A.NamedTypeRef(name.loc, name.name), [])
        self.checker.check_instance(inst, scope)
        owner.locals.append(inst)   # after the declared locals, in call order, as p4c
        return self.checker.expr(name, s)

    # ---- hoisting ---------------------------------------------------------------------------
    def hoisted_value(self, e: A.Expr, t: Type, s, base: str) -> A.Name:
        """Declares `T tmp = e;` before the current statement and returns a use of `tmp`."""
        name = self.checker.fresh_local(s, base)
        decl = A.VarDecl(e.loc, _type_ref(t, e.loc), name, e)
        self.checker.hoist(decl, s)
        use = A.Name(e.loc, name)
        self.checker.expr(use, s)
        return use

    def hoist_table_results(self, e, s, in_action: bool) -> None:
        """Values code generation computes in statements of their own, inside `e` (an expression
        of an assignment, declaration, call or return): `t.apply().hit`/`.miss`, and a call in a
        stack index or `f().field` where `&&`, `||` or `?:` may skip it. The largest expression
        around one made of `&&`, `||`, `!` and `?:` branches is computed first, by ifs in
        short-circuit order, into a local: `bool hit = false; if (x && t.apply().hit) hit = true;`
        (a hoisted call elsewhere is hoisted alone at check time)."""
        while True:
            parents = {}
            found = None
            for node, parent in _nodes_with_parents(e, None):
                parents[id(node)] = parent
            for node, _ in _nodes_with_parents(e, None):
                if self._is_apply_result(node, s) or \
                        _is_hoisted(node) and _conditional_top(node, parents) is not None:
                    found = node
                    break
            if found is None:
                return
            top = found if self._is_apply_result(found, s) else _conditional_top(found, parents)
            while True:
                parent = parents.get(id(top))
                if isinstance(parent, A.Binary) and parent.op in ("&&", "||") or \
                        isinstance(parent, A.Unary) and parent.op == "!" or \
                        isinstance(parent, A.Ternary) and parent.cond is not top:
                    top = parent
                else:
                    break
            t = BOOL if top is found else self.checker.trial_type(top, s)
            base = ("hit" if found.name == "hit" else "miss") if top is found else "value"
            name = self.checker.fresh_local(s, base if t != BOOL or top is found else "cond")
            loc = top.loc
            self.checker.hoist(A.VarDecl(loc, _type_ref(t, loc), name, None), s)
            for st in self._value_into(A.clone(top), name, t, s):
                checked = self.checker.stmt(st, s, in_action)
                self.checker.hoist_statement(st if checked is None else checked)
            A.become(top, A.Name(loc, name))

    def needs_split(self, e, s) -> bool:
        """Must the condition `e` be computed by ifs (several table applies, or a hoisted call
        where short-circuit evaluation may skip it)?"""
        if self.applies_in(e, s) >= 2:
            return True
        parents = {id(n): p for n, p in _nodes_with_parents(e, None)}
        return any(_is_hoisted(n) and _conditional_top(n, parents) is not None
                   for n, _ in _nodes_with_parents(e, None))

    def split_applies(self, st: A.If, s):
        """An `if` whose condition applies two or more tables (BMv2 applies one table per
        condition) is computed first into a boolean by nested ifs, one apply each, keeping
        short-circuit order: `bool cond = ...; if (cond) ...`."""
        name = self.checker.fresh_local(s, "cond")
        loc = st.cond.loc
        stmts = [A.VarDecl(loc, A.SimpleTypeRef(loc, "bool"), name, A.BoolLit(loc, False))]
        stmts += self._condition_into(st.cond, name, s)
        stmts.append(A.If(st.loc, A.Name(loc, name), st.then, st.other))
        return A.Block(st.loc, stmts)

    def _condition_into(self, e, name: str, s) -> list:
        """Statements that set the bool variable `name` to the value of `e`."""
        loc = e.loc
        var = A.Name(loc, name)

        def set_to(value):
            return A.Assign(loc, A.Name(loc, name), value)
        split = self.needs_split(e, s)
        if split and isinstance(e, A.Binary) and e.op in ("&&", "||"):
            test = var if e.op == "&&" else A.Unary(loc, "!", var)
            return self._condition_into(e.left, name, s) + [
                A.If(loc, test, A.Block(loc, self._condition_into(e.right, name, s)), None)]
        if split and isinstance(e, A.Binary) and e.op in ("==", "!="):
            sides, out = [], []
            for operand in (e.left, e.right):
                t = self.checker.trial_type(operand, s)
                side = self.checker.fresh_local(s, "cond" if t == BOOL else "value")
                sides.append(side)
                out.append(A.VarDecl(loc, _type_ref(t, loc), side, None))
                out += self._value_into(operand, side, t, s)
            return out + [set_to(A.Binary(loc, e.op, A.Name(loc, sides[0]),
                                          A.Name(loc, sides[1])))]
        if split and isinstance(e, A.Unary) and e.op == "!":
            return self._condition_into(e.expr, name, s) + [set_to(A.Unary(loc, "!", var))]
        if split and isinstance(e, A.Ternary):
            inner = self.checker.fresh_local(s, "cond")
            return [A.VarDecl(loc, A.SimpleTypeRef(loc, "bool"), inner, A.BoolLit(loc, False))] \
                + self._condition_into(e.cond, inner, s) + [
                    A.If(loc, A.Name(loc, inner),
                         A.Block(loc, self._condition_into(e.then, name, s)),
                         A.Block(loc, self._condition_into(e.other, name, s)))]
        return [set_to(A.BoolLit(loc, False)),
                A.If(loc, e, A.Block(loc, [set_to(A.BoolLit(loc, True))]), None)]

    def _value_into(self, e, name: str, t, s) -> list:
        """Statements that set the variable `name` (of type t) to `e`, one apply per if."""
        if t == BOOL:
            return self._condition_into(e, name, s)
        if isinstance(e, A.Ternary) and self.needs_split(e, s):
            inner = self.checker.fresh_local(s, "cond")
            return [A.VarDecl(e.loc, A.SimpleTypeRef(e.loc, "bool"), inner, None)] \
                + self._condition_into(e.cond, inner, s) + [
                    A.If(e.loc, A.Name(e.loc, inner),
                         A.Block(e.loc, self._value_into(e.then, name, t, s)),
                         A.Block(e.loc, self._value_into(e.other, name, t, s)))]
        return [A.Assign(e.loc, A.Name(e.loc, name), e)]

    def applies_in(self, e, s) -> int:
        return sum(1 for n in A.walk(e) if self._is_apply_result(n, s))

    @staticmethod
    def _is_apply_result(node, s) -> bool:
        return (isinstance(node, A.Member) and node.name in ("hit", "miss")
                and isinstance(node.expr, A.Call) and isinstance(node.expr.func, A.Member)
                and node.expr.func.name == "apply" and isinstance(node.expr.func.expr, A.Name)
                and isinstance(s.lookup(node.expr.func.expr.name), A.TableDecl))

    def hoist_lookaheads(self, st, s):
        """In a parser state: `pkt.lookahead<T>()` inside an expression is read into a local
        first (BMv2 only sets a field from a lookahead); as a statement it becomes such a read
        (it still fails with PacketTooShort on a short packet). Returns a replacement or None."""
        if isinstance(st, A.CallStmt) and _is_lookahead(st.call):
            name = self.checker.fresh_local(s, "lookahead")
            return A.VarDecl(st.loc, st.call.type_args[0], name, st.call)
        value = st.rhs if isinstance(st, A.Assign) else st.init if isinstance(st, A.VarDecl) \
            else st.call if isinstance(st, A.CallStmt) else None
        for node in list(A.walk(value)):
            if node is value or not _is_lookahead(node):
                continue
            name = self.checker.fresh_local(s, "lookahead")
            self.checker.hoist(A.VarDecl(node.loc, node.type_args[0], name, A.clone(node)), s)
            A.become(node, A.Name(node.loc, name))
        return None

    def select_lookaheads(self, select: list, s) -> list:
        """In a transition's select: a `pkt.lookahead<T>()` inside a key (a slice of it, say)
        becomes a local read at the end of the state, where the select reads the packet; a key
        that is the lookahead itself is BMv2's own lookahead key and stays. Returns the
        declarations to append to the state's statements."""
        reads = []
        for key in select:
            for node in list(A.walk(key)):
                if node is key or not _is_lookahead(node):
                    continue
                name = self.checker.fresh_local(s, "lookahead")
                reads.append(A.VarDecl(node.loc, node.type_args[0], name, A.clone(node)))
                A.become(node, A.Name(node.loc, name))
        return reads

    def dont_care_local(self, e: A.DontCare, t: Type, s) -> A.Name:
        """`_` as an argument: a fresh uninitialised local, whose value nobody reads."""
        name = self.checker.fresh_local(s, "dontcare")
        self.checker.hoist(A.VarDecl(e.loc, _type_ref(t, e.loc), name, None), s)
        return A.Name(e.loc, name)

def _type_ref(t: Type, loc) -> A.TypeRef:
    """A written type for a checked type (for declarations the desugaring creates)."""
    if isinstance(t, NewBitT):
        return A.NamedTypeRef(loc, t.name)
    if isinstance(t, NewBoolT):
        return A.NamedTypeRef(loc, t.name)
    if isinstance(t, BitT):
        return A.BitTypeRef(loc, A.IntLit(loc, t.width), t.signed)
    if t == BOOL:
        return A.SimpleTypeRef(loc, "bool")
    if isinstance(t, (StructT, EnumT)):
        return A.NamedTypeRef(loc, t.name)
    if isinstance(t, IntT):
        return A.SimpleTypeRef(loc, "int")
    if isinstance(t, StackT):
        return A.StackTypeRef(loc, _type_ref(t.element, loc), A.IntLit(loc, t.size))
    if isinstance(t, VarbitT):
        return A.VarbitTypeRef(loc, A.IntLit(loc, t.max_width))
    if isinstance(t, TupleT):
        return A.TupleTypeRef(loc, [_type_ref(item, loc) for item in t.items])
    return A.SimpleTypeRef(loc, t.describe())


def has_call(e) -> bool:
    if isinstance(e, A.Call):
        return True
    if isinstance(e, A.Node):
        return any(has_call(getattr(e, f)) for f in e.__dataclass_fields__)
    if isinstance(e, list):
        return any(has_call(x) for x in e)
    return False


def _valid(target: A.Expr, loc) -> A.Expr:
    return A.Call(loc, A.Member(loc, target, "isValid"), [], [])


def _all(loc, items: list) -> A.Expr:
    if not items:
        return A.BoolLit(loc, True)
    e = items[0]
    for x in items[1:]:
        e = A.Binary(loc, "&&", e, x)
    return e


def _any(loc, items: list) -> A.Expr:
    if not items:
        return A.BoolLit(loc, False)
    e = items[0]
    for x in items[1:]:
        e = A.Binary(loc, "||", e, x)
    return e


def _field_of(e: A.Expr, name: str, position: int) -> A.Expr:
    """Field `name` (at `position`) of a struct value: a list's item, a struct expression's
    named value, else `e.name`."""
    if isinstance(e, A.ListExpr):
        return A.clone(e.items[position])
    if isinstance(e, A.StructExpr):
        return A.clone(next(v for n, v in e.fields if n == name))
    if name is None:   # a tuple's item
        return A.Index(e.loc, A.clone(e), A.IntLit(e.loc, position))
    return A.Member(e.loc, A.clone(e), name)


def _equal(a: A.Expr, b: A.Expr, t: Type, loc) -> A.Expr:
    """`a == b` for values of type t, as comparisons of fields (fresh, unchecked trees)."""
    if isinstance(t, StackT):
        return _all(loc, [_equal(A.Index(loc, a, A.IntLit(loc, k)),
                                 A.Index(loc, b, A.IntLit(loc, k)), t.element, loc)
                          for k in range(t.size)])
    if isinstance(t, TupleT):
        return _all(loc, [_equal(_field_of(a, None, k), _field_of(b, None, k), it, loc)
                          for k, it in enumerate(t.items)])
    if isinstance(t, StructT):
        parts = [_equal(_field_of(a, n, k), _field_of(b, n, k), ft, loc)
                 for k, (n, ft, _) in enumerate(t.fields)]
        if t.kind != "header":
            return _all(loc, parts)
        va, vb = _valid(A.clone(a), loc), _valid(A.clone(b), loc)
        both_invalid = A.Binary(loc, "&&", A.Unary(loc, "!", va), A.Unary(loc, "!", vb))
        both_valid = A.Binary(loc, "&&", A.clone(va), A.clone(vb))
        return A.Binary(loc, "||", both_invalid, _all(loc, [both_valid] + parts))
    return A.Binary(loc, "==", A.clone(a), A.clone(b))


def _is_lookahead(e) -> bool:
    return (isinstance(e, A.Call) and isinstance(e.func, A.Member) and e.func.name == "lookahead"
            and len(e.type_args) == 1 and not e.args)


def _nodes_with_parents(e, parent):
    if isinstance(e, A.Node):
        yield e, parent
        for f in e.__dataclass_fields__:
            yield from _nodes_with_parents(getattr(e, f), e)
    elif isinstance(e, (list, tuple)):
        for x in e:
            yield from _nodes_with_parents(x, parent)


def drop_unused_locals(block: A.Block) -> None:
    """Variables a deparser declares but never uses go (p4c removes them too): a BMv2 deparser
    is only a list of headers to emit."""
    used = {n.name for n in A.walk(block) if isinstance(n, A.Name)}
    block.stmts = [st for st in block.stmts
                   if not (isinstance(st, A.VarDecl) and st.name not in used
                           and not has_call(st.init))]


def _is_hoisted(node) -> bool:
    """Hoisted before its statement at check time: a call in an index, a field of a call."""
    return (isinstance(node, A.Index) and has_call(node.index)) or (
        isinstance(node, A.Member) and isinstance(node.expr, A.Call)
        and node.name not in ("hit", "miss", "action_run")
        and not (isinstance(node.expr.func, A.Member) and node.expr.func.name == "apply"))


def _conditional_top(node, parents):
    """The outermost `&&`, `||` or `?:` that may skip `node` (None: it always runs)."""
    top = None
    child, parent = node, parents.get(id(node))
    while parent is not None:
        if isinstance(parent, A.Binary) and parent.op in ("&&", "||") and child is parent.right \
                or isinstance(parent, A.Ternary) and child is not parent.cond:
            top = parent
        child, parent = parent, parents.get(id(parent))
    return top
