"""Random v1model programs, valid by construction, with an STF test to run them.

`generate_case(seed)` is deterministic in its seed. The program has 1-4 headers (mixed widths,
signed fields, byte-aligned), a parser that selects on header fields (exact and masked keysets,
one or two keys) and may assign metadata, ingress and egress controls with registers, counters,
actions with parameters, tables with const or control-plane entries, and apply blocks built by
`stmts.py`. A fraction of seeds (`invalid_rate`) is turned invalid by `mutations.py`.
"""

from __future__ import annotations

import random

from . import mutations
from .case import Case
from .exprs import ExprGen
from .model import (Action, Control, Counter, Header, ParserState, Program, Register, SelectCase,
                    Table, TableKey)
from .ptypes import BOOL, bit, interesting_value, random_scalar
from .render import render_program
from .scope import Scope, Var
from .stf import render_stf
from .stmts import NameSource, StmtGen, bound_arguments

INVALID_RATE = 0.08
# Known, still open findings the generator steers around by default, so that each bug does not
# swamp the results and hide the next one (docs/difftest.md; pass avoid=frozenset() to
# generate them anyway). "F5" (also covers F9): a select keyset of only wildcards before other
# cases; "F8": an lpm key whose width is not a whole number of bytes (BMv2 counts the prefix
# over the padded width); "F10": egress reading `packet_length` or counting bytes (the runtime
# keeps the ingress length); "F21": `return` in a `switch` case (p4c drops every statement after
# that switch).
AVOID = frozenset({"F5", "F8", "F10", "F15", "F21", "F26", "F27", "F39"})
# what programs may use beyond the first generator's forms: "directional" action parameters,
# sub-controls, the `hash` extern, checksums verified and updated (`verify_checksum`,
# `update_checksum`, the `checksum_error` ingress then reads), a header stack parsed in a loop,
# select keys read ahead (`pkt.lookahead`) and bytes skipped (`pkt.advance`), parser errors
# (`verify`, `reject`, the program's own errors) that ingress reads in `parser_error`, a
# header ending in a `varbit` field extracted with a length from the packet
FEATURES = frozenset({"directional", "subcontrol", "hash", "checksum", "stack", "lookahead",
                      "parser_error", "varbit"})
# the errors core.p4 declares; the first five are those the generated parsers reach on their own
# (truncated packets, select misses, a full stack, a varbit overflow), besides any `verify`
_CORE_ERRORS = ["NoError", "PacketTooShort", "NoMatch", "StackOutOfBounds", "HeaderTooShort",
                "ParserTimeout", "ParserInvalidArgument"]
_PARSER_ENDS = _CORE_ERRORS[:5]
_STANDARD_IN = [("sm.ingress_port", bit(9)), ("sm.instance_type", bit(32)),
                ("sm.packet_length", bit(32))]
_STANDARD_EG = _STANDARD_IN + [("sm.egress_port", bit(9)), ("sm.egress_rid", bit(16))]


def generate_case(seed: int, invalid_rate: float = INVALID_RATE,
                  avoid: frozenset[str] = AVOID, features: frozenset[str] = FEATURES) -> Case:
    rng = random.Random(seed)
    gen = _Generator(rng, avoid, features)
    program = gen.program()
    source = render_program(program)
    stf = render_stf(program, rng, gen.field_pools)
    if rng.random() < invalid_rate:
        source, what = mutations.mutate(source, program, rng)
        return Case(seed=seed, source=source, stf=stf, expect_valid=False, mutation=what)
    return Case(seed=seed, source=source, stf=stf, expect_valid=True)


class _Generator:
    def __init__(self, rng: random.Random, avoid: frozenset[str] = AVOID,
                 features: frozenset[str] = FEATURES):
        self.rng = rng
        self.avoid = avoid
        self.features = features
        self.names = NameSource()
        self.field_pools: dict[str, list[int]] = {}   # field -> values worth putting in packets
        self.errors: list[str] = []                    # the program's own `error` members

    # --- data ---
    def program(self) -> Program:
        headers = [self._header(i) for i in range(self.rng.randrange(1, 5))]
        if "stack" in self.features and self.rng.random() < 0.35:
            # a header stack, last so that a parser loop can extract into it (never `start`)
            stack = self._header(len(headers))
            if any(ty.kind == "bit" for _, ty in stack.fields):
                stack.stack = self.rng.choice([2, 3, 4])
                headers.append(stack)
        if "varbit" in self.features and self.rng.random() < 0.3:
            self._varbit(headers)
        meta = [(f"m{i}", BOOL if self.rng.random() < 0.15 else random_scalar(self.rng))
                for i in range(self.rng.randrange(1, 5))]
        self.errors = [f"E{i}" for i in range(self.rng.choice([0, 0, 1, 2]))] \
            if "parser_error" in self.features else []
        states = self._parser(headers, meta)
        ingress = self._control("I", True, headers, meta)
        egress = self._control("E", False, headers, meta)
        order = [h.name for h in headers]
        if self.rng.random() < 0.2:
            self.rng.shuffle(order)
        program = Program(headers=headers, meta=meta, states=states, ingress=ingress,
                          egress=egress, emit_order=order, errors=self.errors)
        if "checksum" in self.features:
            program.verify = self._checksums("verify_checksum", headers, meta)
            program.compute = self._checksums("update_checksum", headers, meta)
        return program

    def _checksums(self, extern: str, headers: list[Header], meta) -> list[str]:
        """0-2 calls of `extern` (`verify_checksum` or `update_checksum`, or its `_with_payload`
        form): a condition, a list of header and metadata fields of any widths, a 16- or 32-bit
        header field to check or write, csum16 mostly (as IPv4's) and the CRCs now and then."""
        rng = self.rng
        if rng.random() < 0.4:
            return []
        fields = self._field_vars(headers, meta)
        data_pool = [v for v in fields if v.ty.kind == "bit"]
        lines = []
        for _ in range(rng.choice([1, 1, 2])):
            algorithm = rng.choice(["csum16"] * 4 + ["crc16", "crc32"])
            width = 32 if algorithm == "crc32" else 16
            targets = [v for v in fields if v.header and v.ty == bit(width)]
            if not targets or not data_pool:
                break
            target = rng.choice(targets)
            # (p4c's BMv2 back end refuses an update whose data reads the updated field)
            pool = [v for v in data_pool if v != target or extern == "verify_checksum"]
            if not pool:
                break
            data = rng.sample(pool, min(len(pool), rng.randrange(1, 5)))
            if rng.random() < 0.5:
                condition = f"{target.header}.isValid()"
            else:
                condition = ExprGen(rng, max_depth=1).expr(BOOL, Scope(fields))
            items = ", ".join(v.name for v in data)
            varbits = [h for h in headers if h.varbit]
            if varbits and rng.random() < 0.4:
                # a varbit field among the data (as IPv4's options in its checksum)
                items += f", hdr.{rng.choice(varbits).name}.opt"
            # a quarter over the payload too (the bytes the parser left)
            call = extern + "_with_payload" if rng.random() < 0.25 else extern
            lines.append(f"{call}({condition}, {{ {items} }}, {target.name}, "
                         f"HashAlgorithm.{algorithm});")
        return lines

    def _varbit(self, headers: list[Header]) -> None:
        """A header after the first (never a stack) gets a last field `varbit<W> opt`, its
        length in bytes the low 1-4 bits of a field of the first header (valid wherever a later
        state runs): up to 15 bytes into a W of 2-12 bytes, so some packets overflow it."""
        rng = self.rng
        owners = [h for h in headers[1:] if not h.stack]
        sources = [(f, ty) for f, ty in headers[0].fields if ty.kind == "bit" and ty.width >= 2]
        if not owners or not sources or headers[0].stack:
            return
        owner = rng.choice(owners)
        field, ty = rng.choice(sources)
        owner.varbit = 8 * rng.choice([2, 4, 5, 8, 12])
        owner.length_source = f"{headers[0].name}.{field}"
        owner.length_bits = rng.randint(1, min(4, ty.width))

    def _header(self, index: int) -> Header:
        rng = self.rng
        fields = [(f"f{j}", random_scalar(rng, high=64 if rng.random() < 0.9 else 128))
                  for j in range(rng.randrange(1, 5))]
        pad = -sum(ty.width for _, ty in fields) % 8
        if pad:
            fields.append((f"f{len(fields)}", bit(pad)))
        return Header(f"h{index}", fields)

    def _field_vars(self, headers: list[Header], meta) -> list[Var]:
        out = [Var(f"{element}.{f}", ty, header=element)
               for h in headers for element in h.elements() for f, ty in h.fields]
        out += [Var(f"meta.{name}", ty) for name, ty in meta]
        return out

    # --- parser ---
    def _parser(self, headers: list[Header], meta) -> list[ParserState]:
        rng = self.rng
        names = ["start"] + [f"parse_{h.name}" for h in headers[1:]]
        states = []
        stored: set[str] = set()      # metadata fields a parser state assigns
        for i, header in enumerate(headers):
            state = ParserState(names[i], header.name)
            later = names[i + 1:]
            # p4c drops a store that a later state overwrites after an extract that may fail
            # (F39): with F39 avoided, each field is assigned in one state only
            free = [(n, ty) for n, ty in meta if n not in stored or "F39" not in self.avoid]
            if free and rng.random() < 0.25:
                state.sets = self._parser_sets(headers[:i + 1], meta, free, stored)
            if "lookahead" in self.features and rng.random() < 0.15:
                state.advance = rng.choice([1, 2, 4])
            keyable = [(f, ty) for f, ty in header.fields if ty.kind == "bit"]
            if header.stack:
                # a loop: the element just extracted (`last`) says whether another follows;
                # more than the stack holds ends parsing with StackOutOfBounds
                picked = [rng.choice(keyable)]
                state.keys = [(f"hdr.{header.name}.last.{f}", ty.width) for f, ty in picked]
                state.cases = [self._select_case(state.keys, [names[i]])
                               for _ in range(rng.randrange(1, 3))]
                state.default = rng.choice(later + ["accept", "accept"])
            elif later and keyable and rng.random() < 0.85:
                picked = rng.sample(keyable, min(len(keyable), rng.choice([1, 1, 2])))
                state.keys = [(f"hdr.{header.name}.{f}", ty.width) for f, ty in picked]
                if "lookahead" in self.features and rng.random() < 0.25:
                    # a key read ahead of the packet's position (the next header's first bits)
                    width = rng.choice([1, 3, 8, 12, 16, 32])
                    state.keys[rng.randrange(len(state.keys))] = \
                        (f"pkt.lookahead<bit<{width}>>()", width)
                state.cases = [self._select_case(state.keys, later)
                               for _ in range(rng.randrange(1, 4))]
                state.default = rng.choice(later + ["accept", "accept"])
            else:
                state.default = later[0] if later and rng.random() < 0.8 else "accept"
            if "parser_error" in self.features:
                self._parser_errors(state, headers[:i + 1], meta)
            states.append(state)
        return states

    def _parser_errors(self, state: ParserState, headers: list[Header], meta) -> None:
        """Now and then a `verify` of the fields extracted so far with a core or the program's
        own error, and `reject` as a select's default or a case's target (the packet then
        goes on to ingress with `parser_error` set, as v1model does)."""
        rng = self.rng
        if rng.random() < 0.2:
            condition = ExprGen(rng, max_depth=2).expr(BOOL, Scope(self._field_vars(headers, meta)))
            error = rng.choice(_CORE_ERRORS + self.errors * 3)
            state.verify = f"verify({condition}, error.{error});"
        if rng.random() < 0.1:
            state.default = "reject"
        for case in state.cases:
            if rng.random() < 0.1:
                case.target = "reject"

    def _parser_sets(self, headers: list[Header], meta, targets, stored: set[str]) -> list[str]:
        """1-2 assignments to fields of `targets` (each then added to `stored`)."""
        scope = Scope(self._field_vars(headers, meta))
        exprs = ExprGen(self.rng, max_depth=2)
        lines = []
        for _ in range(self.rng.randrange(1, 3)):
            name, ty = self.rng.choice(targets)
            lines.append(f"meta.{name} = {exprs.expr(ty, scope)};")
            stored.add(name)
        return lines

    def _select_case(self, keys, targets: list[str]) -> SelectCase:
        rng = self.rng
        values, matches = [], []
        for field, width in keys:
            full = (1 << width) - 1
            value = interesting_value(rng, width)
            roll = rng.random()
            if roll < 0.6 or len(keys) == 1 and roll < 0.75:
                values.append(f"{value:#x}")
                matches.append((value, full))
            elif roll < 0.85:
                mask = rng.getrandbits(width) & full
                values.append(f"{value & mask:#x} &&& {mask:#x}")
                matches.append((value & mask, mask))
            else:
                values.append("_")
                matches.append((0, 0))
            self.field_pools.setdefault(field, []).append(value)
        if "F5" in self.avoid and all(mask == 0 for _, mask in matches):
            # all wildcards (`_` or `v &&& 0`): F5 (inaemu JSON) and F9 (p4c JSON)
            width = keys[0][1]
            value &= (1 << width) - 1
            values[0], matches[0] = f"{value:#x}", (value, (1 << width) - 1)
        return SelectCase(values, rng.choice(targets + ["accept"]), matches)

    # --- controls ---
    def _control(self, name: str, ingress: bool, headers, meta) -> Control:
        rng = self.rng
        control = Control(name, ingress)
        scope = Scope(self._field_vars(headers, meta))
        for sm_name, ty in (_STANDARD_IN if ingress else _STANDARD_EG):
            if not ingress and sm_name == "sm.packet_length" and "F10" in self.avoid:
                continue
            scope.add(Var(sm_name, ty, writable=False))
        if ingress and "checksum" in self.features:
            scope.add(Var("sm.checksum_error", bit(1), writable=False))
        if ingress and "parser_error" in self.features:
            # `error` values are compared only: each comparison is a boolean ingress can read
            for error in rng.sample(_PARSER_ENDS, 2) + self.errors:
                scope.add(Var(f"(sm.parser_error == error.{error})", BOOL, writable=False))
        prefix = name.lower()
        for _ in range(rng.choice([0, 1, 1, 2])):
            elem = random_scalar(rng, high=64, signed_p=0.15)
            control.registers.append(Register(self.names.fresh(prefix + "_reg"), elem,
                                              rng.choice([1, 2, 4, 8, 16, 5])))
        # an egress counter counts egress packet_length bytes (BMv2 counts bytes for every
        # counter type): F10 again
        counters = rng.choice([0, 1, 1, 2])
        for _ in range(counters if ingress or "F10" not in self.avoid else 0):
            kind = rng.choice(["packets", "bytes", "packets_and_bytes"])
            control.counters.append(Counter(self.names.fresh(prefix + "_ctr"),
                                            rng.choice([1, 4, 8, 3]), kind))
        stmts = StmtGen(rng, control, self.names, avoid=self.avoid, features=self.features)
        if rng.random() < 0.3:
            ty = random_scalar(rng)
            local = self.names.fresh(prefix + "_v")
            control.locals.append(f"{ty.p4()} {local} = {stmts.exprs.expr(ty, Scope())};")
            scope.add(Var(local, ty))
        for _ in range(rng.randrange(1, 5) if ingress else rng.randrange(0, 3)):
            control.actions.append(self._action(prefix, stmts, scope))
        for _ in range(rng.randrange(0, 4) if ingress else rng.randrange(0, 2)):
            if control.actions:
                control.tables.append(self._table(prefix, control, scope))
        stmts.unapplied = list(control.tables)
        # p4c gives a directly called action a second JSON action of the same name, and
        # simple_switch_CLI then cannot add entries for the table's copy (F11)
        stmts.not_called = {action for t in control.tables if t.runtime_entries
                            for _, action, _ in t.runtime_entries}
        lines = []
        if ingress and rng.random() < 0.7:
            lines.append(f"        sm.egress_spec = 9w{rng.randrange(0, 4)};")
        count = rng.randrange(3, 9) if ingress else rng.randrange(1, 5)
        lines += stmts.block(scope, count, 2, in_action=False)
        if ingress and "subcontrol" in self.features and rng.random() < 0.35:
            # a sub-control applied with arguments that may alias (copy-in/copy-out, an
            # exit inside it: F23), between two runs of statements
            sub, width = self._sub_control(len(control.subs), headers, meta)
            ty = bit(width)
            # arguments from headers only: with a metadata field beside `meta` itself, p4c's
            # JSON names fields simple_switch cannot find (F25)
            hdr_scope = Scope([v for v in scope.vars if v.name.startswith("hdr.")])
            out = hdr_scope.pick(rng, ty, writable=True)
            if out is not None:
                control.subs.append(sub)
                arg = stmts.exprs.expr(ty, hdr_scope, depth=1)
                lines.append(f"        {sub.name.lower()}.apply(hdr, meta, {arg}, {out.name});")
                lines += stmts.block(scope, rng.randrange(0, 4), 2, in_action=False)
        while stmts.unapplied:       # every table gets applied somewhere
            table = stmts.unapplied.pop(0)
            lines.append(f"        {table.name}.apply();")
        control.apply = lines
        return control

    def _sub_control(self, index: int, headers, meta) -> tuple[Control, int]:
        """A control `S<index>(inout headers_t hdr, inout meta_t meta, in bit<W> a, inout
        bit<W> b)`: actions and tables of constant entries (the STF cannot name what it
        holds), statements that may exit or return; W is the type of a variable ingress has."""
        rng = self.rng
        widths = [ty.width for _, ty in meta if ty.kind == "bit"] + \
            [ty.width for h in headers for _, ty in h.fields if ty.kind == "bit"]
        width = rng.choice(widths) if widths else 8
        control = Control(f"S{index}", False, params=f"in bit<{width}> a, inout bit<{width}> b")
        scope = Scope(self._field_vars(headers, meta))
        scope.add(Var("a", bit(width), writable=False))
        scope.add(Var("b", bit(width)))
        stmts = StmtGen(rng, control, self.names, avoid=self.avoid, features=self.features)
        # its arguments alias `hdr`, so p4c copies the headers in, and its JSON then skips
        # their copy-out after an exit (F26)
        stmts.allow_exit = "F26" not in self.avoid
        prefix = f"s{index}"
        for _ in range(rng.randrange(0, 3)):
            control.actions.append(self._action(prefix, stmts, scope))
        for _ in range(rng.randrange(0, 2)):
            if control.actions:
                table = self._table(prefix, control, scope)
                if table.const_entries is None:
                    table.const_entries = []
                table.runtime_entries = []
                control.tables.append(table)
        stmts.unapplied = list(control.tables)
        lines = stmts.block(scope, rng.randrange(1, 5), 2, in_action=False)
        while stmts.unapplied:
            lines.append(f"        {stmts.unapplied.pop(0).name}.apply();")
        control.apply = lines
        return control, width

    def _action(self, prefix: str, stmts: StmtGen, scope: Scope) -> Action:
        rng = self.rng
        params = [(f"p{i}", bit(rng.choice([1, 3, 8, 9, 16, 32, 48]))) for i in
                  range(rng.choice([0, 1, 1, 2]))]
        body_scope = scope.child()
        bound = []
        if "directional" in self.features:
            # directional parameters typed after variables a caller can pass: copy-in/copy-out
            # against p4c's (an `in` one read after the action wrote its source, an exit
            # between a write and the copy-out: F22, F23)
            for i in range(rng.choice([0, 0, 1, 2])):
                direction = rng.choice(["in", "inout"])
                pool = [v for v in scope.vars if v.ty.kind == "bit" and
                        (v.writable or direction == "in")]
                if pool:
                    bound.append((f"d{i}", direction, rng.choice(pool).ty))
        for pname, direction, ty in bound:
            body_scope.add(Var(pname, ty, writable=direction == "inout"))
        for pname, ty in params:
            body_scope.add(Var(pname, ty, writable=False))
        action = Action(self.names.fresh(prefix + "_a"), params, bound=bound)
        action.body = stmts.block(body_scope, rng.randrange(1, 5), 2, in_action=True)
        return action

    def _table(self, prefix: str, control: Control, scope: Scope) -> Table:
        rng = self.rng
        keys: list[TableKey] = []
        # (no stack element: the STF names a key by its field, and p4c's names for those vary)
        candidates = [v for v in scope.vars if v.ty.kind == "bit" and not v.name.startswith("sm.")
                      and v.ty.width <= 64 and "[" not in v.name]
        if control.params is None:    # a sub-control has no standard_metadata
            candidates.append(Var("sm.ingress_port", bit(9)))
        used: set[str] = set()
        for _ in range(rng.randrange(1, 4)):
            roll = rng.random()
            headers = sorted({v.header for v in scope.vars if v.header and "[" not in v.header})
            if roll < 0.1 and headers:
                keys.append(TableKey(f"{rng.choice(headers)}.isValid()", "exact", BOOL))
                continue
            var = rng.choice(candidates)
            if var.name in used:
                continue
            used.add(var.name)
            kinds = ["exact", "exact", "ternary", "range", "optional"]
            if not any(k.match == "lpm" for k in keys):
                kinds.append("lpm")
            if roll < 0.2 and var.ty.width >= 4:
                low = rng.randrange(0, var.ty.width - 2)
                high = rng.randrange(low + 1, var.ty.width)
                kind = rng.choice(kinds)
                if kind == "lpm" and "F8" in self.avoid and (high - low + 1) % 8:
                    kind = "exact"
                keys.append(TableKey(f"{var.name}[{high}:{low}]", kind, bit(high - low + 1)))
                continue
            kind = rng.choice(kinds)
            if kind == "lpm" and "F8" in self.avoid and var.ty.width % 8:
                kind = "ternary"
            keys.append(TableKey(var.name, kind, var.ty, stf_name=var.name))
        actions = rng.sample([a.name for a in control.actions],
                             rng.randrange(1, min(3, len(control.actions)) + 1))
        if rng.random() < 0.5:
            actions.append("NoAction")
        default_action = rng.choice(actions)
        table = Table(self.names.fresh(prefix + "_t"), keys, actions,
                      (default_action, self._args(control, default_action)))
        for name in actions:
            action = next((a for a in control.actions if a.name == name), None)
            if action is not None and action.bound:   # the control's own variables: never None
                table.bound_args[name] = bound_arguments(rng, action, scope)
        if rng.random() < 0.55:
            table.const_entries = self._entries(control, table, rng.randrange(1, 6), const=True)
        elif all(k.stf_name for k in keys):
            table.runtime_entries = self._entries(control, table, rng.randrange(0, 4),
                                                  const=False)
        return table

    def _args(self, control: Control, action_name: str) -> list[int]:
        if action_name == "NoAction":
            return []
        action = next(a for a in control.actions if a.name == action_name)
        return [interesting_value(self.rng, ty.width) for _, ty in action.params]

    def _entries(self, control: Control, table: Table, count: int, const: bool):
        rng = self.rng
        entries, seen = [], set()
        for _ in range(count):
            keysets = [self._keyset(k, const) for k in table.keys]
            if tuple(keysets) in seen:
                continue
            seen.add(tuple(keysets))
            action = rng.choice([a for a in table.actions if a != "NoAction"] or ["NoAction"])
            entries.append((keysets, action, self._args(control, action)))
        return entries

    def _keyset(self, key: TableKey, const: bool) -> str:
        """A const entry's keyset in P4 (`v &&& m`, `lo .. hi`, `_`), or a control-plane
        entry's key value in STF (`v&&&m`, `v/len`, `lo->hi`, `*` = wildcard)."""
        rng = self.rng
        if key.ty.is_bool:
            return rng.choice(["true", "false"])
        width = key.ty.width
        full = (1 << width) - 1
        value = interesting_value(rng, width)
        if key.stf_name:
            self.field_pools.setdefault(key.stf_name, []).append(value)
        if key.match == "exact" or rng.random() < 0.4:
            if key.match != "exact" and rng.random() < 0.25:
                # p4c's JSON ends a constant range `_` of 32 bits or more wrong (F15)
                if not (const and key.match == "range" and width >= 32 and "F15" in self.avoid):
                    return "_" if const else "*"
            return f"{value:#x}"
        and_ = " &&& " if const else "&&&"
        if key.match == "ternary":
            mask = rng.getrandbits(width) & full
            return f"{value & mask:#x}{and_}{mask:#x}"
        if key.match == "optional":
            return f"{value:#x}"
        if key.match == "lpm":
            prefix = rng.randrange(0, width + 1)
            mask = full ^ ((1 << (width - prefix)) - 1)
            if not const:
                return f"{value & mask:#x}/{prefix}"
            return f"{value & mask:#x} &&& {mask:#x}"
        other = interesting_value(rng, width)
        low, high = min(value, other), max(value, other)
        return f"{low:#x} .. {high:#x}" if const else f"{low:#x}->{high:#x}"

