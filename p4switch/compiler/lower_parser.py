"""Lowering, part 7: the P4 parser to a BMv2 parse graph.

Each state's statements become parser ops (`extract`, `extract_VL`, `set`, `verify`, `advance`,
`primitive`); `select` becomes a transition key plus value/mask transitions whose values are the
byte-padded concatenation of the key fields. Ranges are expanded into value/mask pairs.
Sub-parsers are inlined as extra states named `<instance>.<state>`.
"""

from __future__ import annotations

from dataclasses import dataclass

from . import ast as A
from .constfold import fold
from .lower_expr import (Bound, Env, Unsupported, bind_constructor_arguments, const, fold_in,
                         hexstr, instance_of, is_extern_param, mask_of, op)
from .bmv2_forms import parser_length, parser_set_source
from .lower_calls import CallBinder, header_json, headers_in
from .lower_stmt import StatementLowerer, has_calls
from .storage import FieldRef, HeaderInst, StackStore, StructStore
from .types import BOOL, BitT, StructT, bit_width


# what a parser state may run besides its own ops: assignments, header validity and stack
# operations, log_msg (p4c's backends/bmv2/common/parser.cpp converts no other call)
PARSER_PRIMITIVES = frozenset({"assign", "assign_VL", "assign_header", "assign_header_stack",
                               "assign_union", "assign_union_stack", "add_header",
                               "remove_header", "push", "pop", "log_msg"})


@dataclass(eq=False)
class ParserInstance:
    """A sub-parser instance: its type, name and constructor arguments (read in `env`)."""
    decl: A.ParserDecl
    name: str
    args: list = ()
    env: Env | None = None


def range_to_masks(low: int, high: int, width: int) -> list[tuple[int, int]]:
    """Cover [low, high] with value/mask pairs (prefix blocks)."""
    out = []
    full = (1 << width) - 1
    while low <= high:
        size = low & -low if low else 1 << width
        while size > high - low + 1:
            size >>= 1
        out.append((low, full & ~(size - 1)))
        low += size
    return out


class ParserLowerer:
    def __init__(self, ctx):
        self.ctx = ctx
        self.states: list = []

    def lower(self, decl: A.ParserDecl, env: Env, prefix: str = "", accept_to=None) -> str:
        for local in decl.locals:
            if isinstance(local, A.VarDecl):
                self.ctx.declare_local(local, env)
            elif isinstance(local, A.InstanceDecl):
                self.ctx.bind_instance(local, env, prefix or decl.name)
            elif isinstance(local, A.ValueSetDecl):
                env.bind(local, self.ctx.value_set(local, prefix or decl.name))
        names = {st.name: (prefix + "." if prefix else "") + st.name for st in decl.states}
        # initialised parser-level variables are set on entry, before the start state's code
        inits = [d for d in decl.locals
                 if isinstance(d, A.Assign) or (isinstance(d, A.VarDecl) and d.init is not None)]
        for st in decl.states:
            self.state(st, env, names, accept_to, inits if st.name == "start" else [])
        return names["start"]

    def state(self, st: A.StateDecl, env: Env, names: dict, accept_to, prologue=()) -> None:
        senv = Env(env)
        for stmt in _var_decls(st.stmts):  # bound by declaration, so nested ones can share senv
            self.ctx.declare_local(stmt, senv)
        self.taken = getattr(self, "taken", set()) | set(names.values())
        tr = st.transition

        def target(n):
            if n == "accept":
                return accept_to
            if n == "reject":
                return None
            return names[n]

        def finish(state_json) -> None:
            ops = state_json["parser_ops"]
            if tr is None or tr.select is None:
                state_json["transitions"] = [_default(target(tr.state) if tr is not None else None)]
                return
            cases = _reachable_cases(tr.cases)
            if _matches_all(cases[0].keyset):  # the select does not depend on its key
                state_json["transitions"] = [_default(target(cases[0].state))]
                return
            key_json, widths = [], []
            for e in tr.select:
                key_json.append(self.key(e, senv, ops))
                widths.append(bit_width(e.type) if e.type != BOOL else 1)
            state_json["transition_key"] = key_json
            transitions = []
            for case in cases:
                transitions += self.case(case, widths, senv, target(case.state))
            state_json["transitions"] = transitions

        self.parts = 0
        self.base = names[st.name]
        self.statements_to_states(names[st.name], list(prologue) + list(st.stmts), senv, finish)

    def statements_to_states(self, name: str, stmts: list, env: Env, finish) -> None:
        """Emit state `name` running `stmts`, then `finish(last_state)` sets the transition.

        Two statements split a state. A sub-parser call jumps to the sub-parser's states, whose
        accept continues in a new state `<state>_<n>` (n counts per source state). An `if` (P4_16 allows it in parser states,
        BMv2 has no conditional parser op) ends the state with a select on the condition, kept
        in a temporary: 1 goes to `<name>_then`, anything else to `<name>_else` (or straight on
        without an else); both continue in `<name>_join`, which runs the rest of the state.
        A constant condition just keeps the branch taken."""
        state_json = self._new_state(name)
        ops = state_json["parser_ops"]
        pending = list(stmts)
        while pending:
            stmt = pending.pop(0)
            if isinstance(stmt, A.Block) and self._splits(stmt, env):
                pending[:0] = stmt.stmts
                continue
            if isinstance(stmt, A.If):
                value = fold(stmt.cond)
                if isinstance(value, bool):
                    branch = stmt.then if value else stmt.other
                    pending[:0] = [branch] if branch is not None else []
                    continue
                join = self._fresh(name + "_join")
                then_state = self._fresh(name + "_then")
                else_state = self._fresh(name + "_else") if stmt.other is not None else join
                test = _lookahead_test(stmt.cond)
                if test is not None:  # `lookahead<T>() == c`: select on the lookahead itself
                    peeked, value, equal = test
                    width = bit_width(peeked.type)
                    state_json["transition_key"] = [self.key(peeked, env, ops)]
                    hit, miss = (then_state, else_state) if equal else (else_state, then_state)
                    state_json["transitions"] = [
                        {"type": "hexstr", "value": hexstr(value & ((1 << width) - 1), width),
                         "mask": None, "next_state": hit}, _default(miss)]
                else:
                    state_json["transition_key"] = [self.key(stmt.cond, env, ops)]
                    state_json["transitions"] = [
                        {"type": "hexstr", "value": "0x01", "mask": None,
                         "next_state": then_state}, _default(else_state)]

                def to_join(sj, join=join):
                    sj["transitions"] = [_default(join)]

                self.statements_to_states(then_state, [stmt.then], env, to_join)
                if stmt.other is not None:
                    self.statements_to_states(else_state, [stmt.other], env, to_join)
                self.statements_to_states(join, pending, env, finish)
                return
            sub = self._subparser_call(stmt, env)
            if sub is not None:
                self.parts += 1
                cont = self._fresh(f"{self.base}_{self.parts}")
                parser_decl, inst_name = sub.decl, sub.name
                inner = Env(self.ctx.global_env)
                bind_constructor_arguments(parser_decl, sub.args, sub.env, inner)
                copy_out = self.bind_subparser_args(parser_decl.params, stmt.call.args, env,
                                                    inner, ops, stmt)
                inner.prefix = inst_name
                self.sub_count = getattr(self, "sub_count", 0) + 1
                sub_prefix = inst_name if self.sub_count == 1 else f"{inst_name}_{self.sub_count}"
                sub_start = self.lower(parser_decl, inner, sub_prefix, accept_to=cont)
                state_json["transitions"] = [_default(sub_start)]
                self.statements_to_states(cont, pending, env, finish)
                cont_state = next(st for st in self.states if st["name"] == cont)
                cont_state["parser_ops"][0:0] = copy_out
                return
            self.statement(stmt, env, ops)
        finish(state_json)

    def bind_subparser_args(self, params, args, env: Env, inner: Env, ops: list, node) -> list:
        """A sub-parser's parameters are locals copied in before it starts and copied back
        when it accepts (as p4c does: a sub-parser that rejects copies nothing back); out
        headers start invalid. Returns the copy-back ops, for the state after the accept."""
        copy_in: list = []
        copy_back: list = []
        lowerer = StatementLowerer(self.ctx, copy_in)
        back = StatementLowerer(self.ctx, copy_back)
        for p, a in zip(params, args):
            if is_extern_param(p):   # an extern passed in is the caller's
                inner.bind(p, instance_of(a.value, env))
                continue
            if getattr(p.type, "name", None) == "packet_in" or fold(a.value) is not None \
                    or isinstance(a.value, A.DontCare):
                inner.bind(p, Bound(a.value, env))
                continue
            tmp = self.ctx.layout.allocate(p.type, "tmp", "tmp")
            inner.bind(p, tmp)
            if p.direction in ("in", "inout", ""):
                lowerer.assign_to(tmp, a.value, env, node)
            else:
                for h in headers_in(tmp):  # out parameters start uninitialized: invalid
                    lowerer.emit("remove_header", [header_json(h)], node)
            if p.direction in ("out", "inout"):
                CallBinder(back).copy_out([(a.value, tmp)], env, node)
        self.no_jumps(copy_in + copy_back, node)
        ops.extend(self.as_parser_ops(copy_in))
        return self.as_parser_ops(copy_back)

    def as_parser_ops(self, prims: list) -> list:
        """Primitives as parser ops: an assignment to a field is a `set`."""
        out = []
        for p in prims:
            params = p["parameters"]
            if p["op"] == "assign" and params[0].get("type") == "field":
                out.append({"parameters": [params[0], parser_set_source(params[1])],
                            "op": "set"})
            else:
                out.append(self.primitive(p["op"], params))
        return out

    def _splits(self, st, env) -> bool:
        """Does this statement contain an if or a sub-parser call, which split the state?"""
        if isinstance(st, A.If) or self._subparser_call(st, env) is not None:
            return True
        return isinstance(st, A.Block) and any(self._splits(s, env) for s in st.stmts)

    def _fresh(self, base: str) -> str:
        name, n = base, 0
        while name in self.taken:
            n += 1
            name = f"{base}_{n}"
        self.taken.add(name)
        return name

    def _new_state(self, name: str) -> dict:
        state_json = {"name": name, "id": 0, "parser_ops": [], "transitions": [],
                      "transition_key": []}
        self.states.append(state_json)
        return state_json

    def _subparser_call(self, stmt, env):
        if not (isinstance(stmt, A.CallStmt) and isinstance(stmt.call.func, A.Member)
                and stmt.call.func.name == "apply" and isinstance(stmt.call.func.expr, A.Name)):
            return None
        decl = stmt.call.func.expr.decl
        inst = env.lookup(decl)
        return inst if isinstance(inst, ParserInstance) else None

    def key(self, e: A.Expr, env: Env, ops) -> dict:
        # A lookahead is read into a temporary first, as p4c does: a `set` from a lookahead
        # raises PacketTooShort on a short packet, a lookahead transition key reads zeros.
        if _is_lookahead(e):
            return self._peek(bit_width(e.type), ops).json()
        if isinstance(e, A.Member) and _is_lookahead(e.expr) and isinstance(e.expr.type, StructT):
            self._peek(bit_width(e.expr.type), ops)   # the whole T must be in the packet
            offset = 0
            for fname, ft, _ in e.expr.type.fields:
                if fname == e.name:
                    return {"type": "lookahead", "value": [offset, bit_width(ft)]}
                offset += bit_width(ft)
        x = self.ctx.exprs
        if isinstance(e, (A.Name, A.Member, A.Index)):
            s = x.resolve(e, env)
            if type(s) is FieldRef:  # a run-time stack index is computed into a temporary
                return s.json()
            if isinstance(s, tuple) and s[0] == "last_field":
                return {"type": "stack_field", "value": [s[1].name, s[2]]}
        tmp = self.ctx.layout.temp(e.type if isinstance(e.type, BitT) else BitT(1))
        ops.append({"parameters": [tmp.json(), parser_set_source(x.data(e, env))], "op": "set"})
        return tmp.json()

    def _peek(self, width: int, ops: list):
        """A temporary set from `lookahead<bit<width>>()` at the end of `ops` (the one already
        there when only `set`s follow it: they do not move the packet position)."""
        peeks = self.__dict__.setdefault("peek_temps", {})   # id(set op) -> its temporary
        source = {"type": "lookahead", "value": [0, width]}
        for op in reversed(ops):
            if op.get("op") != "set":
                break
            if op["parameters"][1] == source and id(op) in peeks:
                return peeks[id(op)]
        tmp = self.ctx.layout.temp(BitT(width))
        ops.append({"parameters": [tmp.json(), source], "op": "set"})
        peeks[id(ops[-1])] = tmp
        return tmp

    def case(self, case: A.SelectCase, widths, env, next_state) -> list:
        k = case.keyset
        if _matches_all(k):
            return [{"type": "default", "value": None, "mask": None, "next_state": next_state}]
        if isinstance(k, A.Name) and isinstance(getattr(k, "decl", None), A.ValueSetDecl):
            vs = env.lookup(k.decl)
            return [{"type": "parse_vset", "value": vs, "mask": None, "next_state": next_state}]
        items = k.items if isinstance(k, A.ListExpr) else [k]
        # every component: list of (value, mask) alternatives
        alternatives = [self.component(item, w, env) for item, w in zip(items, widths)]
        combos = [([], [])]
        for alts, w in zip(alternatives, widths):
            combos = [(vals + [(v, w)], masks + [(m, w)]) for vals, masks in combos for v, m in alts]
        out = []
        for vals, masks in combos:
            value = "".join(hexstr(v & ((1 << w) - 1), w)[2:] for v, w in vals)
            full = all(m == (1 << w) - 1 for m, w in masks)
            mask = None if full else "0x" + "".join(hexstr(m, w)[2:] for m, w in masks)
            out.append({"type": "hexstr", "value": "0x" + value, "mask": mask,
                        "next_state": next_state})
        return out

    def component(self, item: A.Expr, width: int, env: Env) -> list[tuple[int, int]]:
        full = (1 << width) - 1
        if isinstance(item, (A.DontCare, A.Default)):
            return [(0, 0)]
        if isinstance(item, A.Mask):
            v, m = fold_in(item.value, env), fold_in(item.mask, env)
            if v is None or m is None:
                raise Unsupported(item, "select masks must be constants")
            return [(v & m & full, m & full)]
        if isinstance(item, A.Range):
            lo, hi = fold_in(item.low, env), fold_in(item.high, env)
            if lo is None or hi is None:
                raise Unsupported(item, "select ranges must be constants")
            return range_to_masks(lo & full, hi & full, width)
        v = fold_in(item, env)
        if v is None:
            raise Unsupported(item, "select case values must be compile-time constants")
        if isinstance(v, bool):
            v = int(v)
        return [(v & full, full)]

    # ---- statements -------------------------------------------------------------------------
    def statement(self, st, env: Env, ops: list) -> None:
        x = self.ctx.exprs
        if _has_calls(st):  # functions inlined: assignments become `set`, the rest primitives
            prims: list = []
            lowerer = StatementLowerer(self.ctx, prims)
            builtin = _parser_builtin(st)
            if builtin:  # verify/extract/advance: their arguments' calls first, then the op
                lowerer.hoist_calls(st.call, env, st, skip_root=True)
            else:
                lowerer.stmt(st, env)
            self.no_jumps(prims, st)
            ops.extend(self.as_parser_ops(prims))
            if not builtin:
                return
        if isinstance(st, A.CallStmt):
            call = st.call
            f = call.func
            if isinstance(f, A.Member) and f.name == "extract" and len(call.args) in (1, 2):
                ops.append(self.extract(call, env))
                return
            if isinstance(f, A.Member) and f.name == "advance":
                amount = call.args[0].value
                v = fold(amount)
                param = ({"type": "hexstr", "value": hexstr(v, 32)} if v is not None
                         else parser_length(x.data(amount, env)))
                ops.append({"parameters": [param], "op": "advance"})
                return
            if isinstance(f, A.Name) and f.name == "verify":
                cond, err = call.args[0].value, call.args[1].value
                code = fold(err)
                code = x.data(err, env) if code is None else \
                    {"type": "hexstr", "value": hexstr(code, 32)}
                ops.append({"parameters": [x.boolean(cond, env), code], "op": "verify"})
                return
        lookahead_init = isinstance(st, A.VarDecl) and _is_lookahead(st.init)
        if lookahead_init or isinstance(st, A.Assign) and _is_lookahead(st.rhs):
            target = env.lookup(st) if lookahead_init else x.resolve(st.lhs, env)
            rhs = st.init if lookahead_init else st.rhs
            if isinstance(target, (FieldRef, HeaderInst, StructStore)):
                self.set_from_lookahead(target, ops)
                return
        if isinstance(st, A.Assign):
            target = x.resolve(st.lhs, env) if not isinstance(st.lhs, A.Slice) else None
            if isinstance(target, FieldRef):
                ops.append({"parameters": [target.json(), parser_set_source(x.data(st.rhs, env))],
                            "op": "set"})
                return
        if isinstance(st, A.VarDecl):
            if st.init is not None:
                target = env.lookup(st)
                if isinstance(target, FieldRef):
                    ops.append({"parameters": [target.json(),
                                               parser_set_source(x.data(st.init, env))],
                                "op": "set"})
                    return
                prims: list = []
                StatementLowerer(self.ctx, prims).stmt(st, env)
                self.no_jumps(prims, st)
                ops.extend(self.primitive(p["op"], p["parameters"]) for p in prims)
            return
        if isinstance(st, A.Block):
            for s in st.stmts:
                self.statement(s, Env(env), ops)
            return
        prims: list = []
        StatementLowerer(self.ctx, prims).stmt(st, env)
        self.no_jumps(prims, st)
        ops.extend(self.primitive(p["op"], p["parameters"]) for p in prims)

    @staticmethod
    def no_jumps(prims: list, node) -> None:
        """Refuse what a parser state cannot run: jumps, and the primitives of extern calls,
        which p4c's BMv2 back end refuses in parsers ("not supported in parser on this
        target"): there only packet_in's methods, verify and log_msg are called."""
        if any(p["op"].startswith("_jump") for p in prims):
            raise Unsupported(node, "conditional code (an if or an early return, here through a "
                                    "call) is not supported in a parser state")
        for p in prims:
            if p["op"] not in PARSER_PRIMITIVES:
                raise Unsupported(node, f"this statement calls an extern ('{p['op']}') that "
                                        "cannot run in a parser: p4c's BMv2 back end supports "
                                        "only packet_in's methods, verify and log_msg there")

    def set_from_lookahead(self, target, ops: list) -> None:
        """`set` ops filling `target` (a field, a header, made valid, or a struct of them) from
        `lookahead<T>()`. As p4c does, the whole T is read into one temporary first and the
        fields are sliced out of it: simple_switch checks only a lookahead's width against the
        bytes left, not its offset, so reading each field at its offset would let a packet
        too short for T through (and read past its end)."""
        leaves: list = []

        def collect(store) -> None:
            if isinstance(store, FieldRef):
                leaves.append(store)
            elif isinstance(store, HeaderInst):
                ops.append(self.primitive("add_header", [{"type": "header", "value": store.name}]))
                for fname, _, _ in store.type.fields:
                    collect(store.field(fname))
            elif isinstance(store, StackStore):   # its elements, each made valid
                for element in store.elements:
                    collect(element)
            else:  # a StructStore, in field order
                for sub in store.fields.values():
                    collect(sub)

        collect(target)
        total = sum(bit_width(leaf.type) for leaf in leaves)
        if len(leaves) == 1:
            ops.append({"parameters": [leaves[0].json(), {"type": "lookahead", "value": [0, total]}],
                        "op": "set"})
            return
        whole = self._peek(total, ops).json()
        low = total
        for leaf in leaves:
            width = bit_width(leaf.type)
            low -= width
            value = op("&", op(">>", whole, const(low, 8)), const(mask_of(width), width))
            ops.append({"parameters": [leaf.json(), parser_set_source(value)], "op": "set"})

    @staticmethod
    def primitive(name: str, params: list) -> dict:
        return {"parameters": [{"op": name, "parameters": params}], "op": "primitive"}

    def extract(self, call: A.Call, env: Env) -> dict:
        x = self.ctx.exprs
        arg = call.args[0].value
        if isinstance(arg, A.Member) and arg.name == "next":
            stack = x.resolve(arg.expr, env)
            if not isinstance(stack, StackStore):
                raise Unsupported(arg, "'.next' needs a header stack")
            param = {"type": "stack", "value": stack.name}
        elif isinstance(arg, A.Member) and isinstance(arg.expr, A.Member) and \
                arg.expr.name == "next":  # a member of the next union of a union stack
            stack = x.resolve(arg.expr.expr, env)
            if not isinstance(stack, StackStore):
                raise Unsupported(arg, "'.next' needs a header stack")
            param = {"type": "union_stack", "value": [stack.name, arg.name]}
        else:
            target = x.resolve(arg, env)
            if not isinstance(target, HeaderInst):
                raise Unsupported(arg, "extract() needs a header")
            param = {"type": "regular", "value": target.name}
        if len(call.args) == 2:
            length = call.args[1].value
            value = x.data(length, env)
            if value["type"] != "expression":
                value = op("&", value, const(0xFFFFFFFF, 32))
            return {"parameters": [param, parser_set_source(value)], "op": "extract_VL"}
        return {"parameters": [param], "op": "extract"}


def _lookahead_test(cond):
    """`lookahead<T>() == c` (or a field of it, or `!=`): (the lookahead, c, is it ==), else
    None. BMv2 can select on a lookahead but cannot compute with one."""
    if not (isinstance(cond, A.Binary) and cond.op in ("==", "!=")):
        return None
    for peeked, other in ((cond.left, cond.right), (cond.right, cond.left)):
        is_peek = _is_lookahead(peeked) or isinstance(peeked, A.Member) and \
            _is_lookahead(peeked.expr)
        value = fold(other)
        if is_peek and isinstance(value, int) and not isinstance(value, bool) and \
                isinstance(peeked.type, BitT):
            return peeked, value, cond.op == "=="
    return None


def _has_calls(st) -> bool:
    """Does this parser statement call a user function (which is inlined)?"""
    if isinstance(st, A.CallStmt):
        return has_calls(st.call) or isinstance(getattr(st.call, "callee", None),
                                                A.FunctionDecl)
    if isinstance(st, A.Assign):
        return has_calls(st.rhs)
    if isinstance(st, A.VarDecl):
        return st.init is not None and has_calls(st.init)
    return False


def _parser_builtin(st) -> bool:
    """Is this a call the parser lowers itself (verify, extract, advance)?"""
    if not isinstance(st, A.CallStmt):
        return False
    f = st.call.func
    return isinstance(f, A.Name) and f.name == "verify" or \
        isinstance(f, A.Member) and f.name in ("extract", "advance")


def _var_decls(stmts):
    """Every variable declared in these statements, also inside blocks and if branches."""
    for st in stmts:
        if isinstance(st, A.VarDecl):
            yield st
        elif isinstance(st, A.Block):
            yield from _var_decls(st.stmts)
        elif isinstance(st, A.If):
            yield from _var_decls([st.then] + ([st.other] if st.other is not None else []))


def _matches_all(keyset) -> bool:
    """`default`, `_` or a tuple of `_`s: a keyset no packet can miss."""
    if isinstance(keyset, A.ListExpr):
        return all(isinstance(k, (A.DontCare, A.Default)) for k in keyset.items)
    return isinstance(keyset, (A.DontCare, A.Default))


def _reachable_cases(cases: list) -> list:
    """The cases up to the first one that matches everything (the later ones are unreachable).

    BMv2 takes a `default` transition only when no other one matches, so a catch-all case
    must end the list rather than become a `default` in the middle of it.
    """
    for i, case in enumerate(cases):
        if _matches_all(case.keyset):
            return cases[:i + 1]
    return cases


def _default(next_state) -> dict:
    return {"type": "default", "value": None, "mask": None, "next_state": next_state}


def _is_lookahead(e) -> bool:
    return isinstance(e, A.Call) and isinstance(e.func, A.Member) and e.func.name == "lookahead"


__all__ = ["ParserLowerer", "range_to_masks"]
