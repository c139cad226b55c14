"""Random statements for action bodies and apply blocks, each valid P4 in its context.

`StmtGen.block` returns indented lines. Tables are applied at most once per control (inaemu and
p4c-bm2-ss both refuse a second apply); `exit`/`return` are rare so the rest of the code runs.
Egress ports stay within the ports the STF test listens on (0-3) or the drop port.
"""

from __future__ import annotations

import random

from .exprs import ExprGen
from .model import Action, Control, Table
from .ptypes import BOOL, bit, interesting_value, literal, random_scalar
from .scope import Scope, Var

PORTS = (0, 1, 2, 3)
MC_GROUPS = (1, 2)
CLONE_SESSIONS = (5, 6)
# v1model's deterministic hash algorithms with fixed parameters (the `_custom` ones take theirs
# from the control plane, `random` is not a function of the data)
HASH_ALGORITHMS = ("crc16", "crc32", "csum16", "xor16", "identity")


class StmtGen:
    def __init__(self, rng: random.Random, control: Control, names: "NameSource",
                 max_depth: int = 2, avoid: frozenset[str] = frozenset(),
                 features: frozenset[str] = frozenset()):
        self.rng = rng
        self.avoid = avoid
        self.features = features
        self._switch_cases = 0     # how many switch cases the statement being made is inside
        self.exprs = ExprGen(rng)
        self.control = control
        self.names = names
        self.max_depth = max_depth
        self.unapplied: list[Table] = []
        self.not_called: set[str] = set()   # actions never called directly (see generator)
        self.allow_exit = True   # False in a sub-control while F26 is avoided

    # --- blocks ---
    def block(self, scope: Scope, count: int, indent: int, *, in_action: bool,
              depth: int = 0) -> list[str]:
        scope = scope.child()
        lines: list[str] = []
        for _ in range(count):
            lines += self.statement(scope, indent, in_action=in_action, depth=depth)
        return lines

    def statement(self, scope: Scope, indent: int, *, in_action: bool, depth: int) -> list[str]:
        rng = self.rng
        pad = "    " * indent
        kinds = ["assign"] * 6 + ["slice_assign", "if", "if", "local", "valid", "extern",
                                  "extern", "forward"]
        if depth < self.max_depth:
            kinds += ["if"]
            if not in_action:    # p4c-bm2-ss: "switch statements not supported in actions"
                kinds.append("switch_value")
        if not in_action:
            kinds += ["apply"] * (4 * len(self.unapplied)) + ["call"] * 2
        if not (self._switch_cases and "F27" in self.avoid):   # p4c then loses headers
            kinds += ["exit"] * (1 if rng.random() < 0.3 and self.allow_exit else 0)
        if not (self._switch_cases and "F21" in self.avoid):   # p4c drops what follows
            kinds += ["return"] * (1 if rng.random() < 0.2 else 0)
        kind = rng.choice(kinds)
        if kind in ("if", "switch_value", "apply") and depth >= self.max_depth:
            kind = "assign"
        return getattr(self, "_" + kind)(scope, pad, indent, in_action, depth)

    # --- simple statements ---
    def _assign(self, scope: Scope, pad: str, indent: int, in_action: bool, depth: int):
        var = scope.pick(self.rng, writable=True)
        if var is None:
            return []
        return [f"{pad}{var.name} = {self.exprs.expr(var.ty, scope)};"]

    def _slice_assign(self, scope: Scope, pad: str, indent: int, in_action: bool, depth: int):
        pool = [v for v in scope.writable() if v.ty.kind == "bit" and v.ty.width >= 2]
        if not pool:
            return self._assign(scope, pad, indent, in_action, depth)
        var = self.rng.choice(pool)
        low = self.rng.randrange(0, var.ty.width)
        high = self.rng.randrange(low, var.ty.width)
        value = self.exprs.expr(bit(high - low + 1), scope)
        return [f"{pad}{var.name}[{high}:{low}] = {value};"]

    def _local(self, scope: Scope, pad: str, indent: int, in_action: bool, depth: int):
        ty = BOOL if self.rng.random() < 0.15 else random_scalar(self.rng)
        name = self.names.fresh("l")
        line = f"{pad}{ty.p4()} {name} = {self.exprs.expr(ty, scope)};"
        scope.add(Var(name, ty))
        return [line]

    def _valid(self, scope: Scope, pad: str, indent: int, in_action: bool, depth: int):
        headers = sorted({v.header for v in scope.vars if v.header})
        if not headers:
            return []
        sizes: dict[str, int] = {}      # a stack's elements: push_front and pop_front
        for header in headers:
            if header.endswith("]"):
                stack, index = header[:-1].split("[")
                sizes[stack] = max(sizes.get(stack, 0), int(index) + 1)
        if sizes and self.rng.random() < 0.4:
            stack = self.rng.choice(sorted(sizes))
            op = self.rng.choice(["push_front", "pop_front"])
            return [f"{pad}{stack}.{op}({self.rng.randrange(1, sizes[stack] + 1)});"]
        op = self.rng.choice(["setValid", "setInvalid", "setValid"])
        return [f"{pad}{self.rng.choice(headers)}.{op}();"]

    def _index(self, size: int, scope: Scope, in_range: bool = False) -> str:
        """A bit<32> index, mostly in range (an out-of-range one is ignored by BMv2).

        `in_range`: always in range — what a register read returns for an index past the end
        is unspecified (v1model.p4), and p4c's dead-store elimination assumes it writes (F14)."""
        rng = self.rng
        if in_range and (size == 1 or size & (size - 1)):   # a constant index
            return f"32w{rng.randrange(0, size)}"
        if rng.random() < 0.3:
            overflow = 1 if rng.random() < 0.2 and not in_range else 0
            return f"32w{rng.randrange(0, size + overflow)}"
        bits = max(1, (size - 1).bit_length())
        if rng.random() < 0.15 and not in_range:
            bits += 1
        return f"((bit<32>){self.exprs.expr(bit(bits), scope, depth=1)})"

    def _extern(self, scope: Scope, pad: str, indent: int, in_action: bool, depth: int):
        rng = self.rng
        c = self.control
        options = []
        if c.registers:
            options += ["read", "write"]
        if c.counters:
            options.append("count")
        if c.ingress and rng.random() < 0.5:
            options.append("digest")
        if "hash" in self.features:
            options += ["hash", "hash"]
        if not options:
            return self._assign(scope, pad, indent, in_action, depth)
        what = rng.choice(options)
        if what == "digest":
            return self._digest(scope, pad)
        if what == "hash":
            return self._hash(scope, pad)
        if what == "count":
            counter = rng.choice(c.counters)
            return [f"{pad}{counter.name}.count({self._index(counter.size, scope)});"]
        reg = rng.choice(c.registers)
        index = self._index(reg.size, scope, in_range=what == "read")
        if what == "write":
            return [f"{pad}{reg.name}.write({index}, {self.exprs.expr(reg.elem, scope)});"]
        dest = scope.pick(rng, reg.elem, writable=True)
        if dest is None:
            name = self.names.fresh("l")
            scope.add(Var(name, reg.elem))
            return [f"{pad}{reg.elem.p4()} {name} = {literal(rng, reg.elem)};",
                    f"{pad}{reg.name}.read({name}, {index});"]
        return [f"{pad}{reg.name}.read({dest.name}, {index});"]

    def _digest(self, scope: Scope, pad: str) -> list[str]:
        """`digest` of 1-3 values, each call of its own struct type (so that simple_switch's
        learn lists, named after the type, are told apart by name)."""
        rng = self.rng
        types = [BOOL if rng.random() < 0.1 else random_scalar(rng, high=64)
                 for _ in range(rng.randrange(1, 4))]
        name = self.names.fresh("dg") + "_t"
        self.control.digests.append((name, types))
        values = ", ".join(self.exprs.expr(ty, scope, depth=1) for ty in types)
        return [f"{pad}digest<{name}>(32w1, {{{values}}});"]

    def _hash(self, scope: Scope, pad: str) -> list[str]:
        """`hash(result, algorithm, base, {data}, max)`: data of any widths (the packing of
        fields that are not whole bytes is where targets differ), base and max as constants or
        variables, max 0 now and then (the result is then the base)."""
        rng = self.rng
        dest = scope.pick(rng, writable=True)
        if dest is None or dest.ty.kind != "bit":
            pool = [v for v in scope.writable() if v.ty.kind == "bit"]
            if not pool:
                return []
            dest = rng.choice(pool)
        data = ", ".join(self.exprs.expr(self.exprs.some_type(scope), scope, depth=2)
                         for _ in range(rng.randrange(1, 5)))
        base_ty = bit(rng.choice([dest.ty.width, 8, 16, 32]))
        max_ty = bit(rng.choice([dest.ty.width, 8, 16, 32, 64]))
        base = self.exprs.leaf(base_ty, scope) if rng.random() < 0.3 else \
            literal(rng, base_ty, rng.choice([0, 0, 1, interesting_value(rng, base_ty.width)]))
        maximum = self.exprs.leaf(max_ty, scope) if rng.random() < 0.2 else \
            literal(rng, max_ty, rng.choice([0, 1, 2, 7, 16, 1000, 1 << 16,
                                            interesting_value(rng, max_ty.width)]))
        algorithm = rng.choice(HASH_ALGORITHMS)
        return [f"{pad}hash({dest.name}, HashAlgorithm.{algorithm}, {base}, {{{data}}}, "
                f"{maximum});"]

    def _forward(self, scope: Scope, pad: str, indent: int, in_action: bool, depth: int):
        rng = self.rng
        ingress = self.control.ingress
        if self.control.params is not None:   # a sub-control: no standard_metadata
            return self._assign(scope, pad, indent, in_action, depth)
        choices = ["drop"]
        if ingress:
            choices += ["port", "port", "port_expr", "mcast", "clone"]
        elif rng.random() < 0.3:
            choices.append("clone")
        what = rng.choice(choices)
        if what == "drop":
            return [f"{pad}mark_to_drop(sm);"]
        if what == "port":
            return [f"{pad}sm.egress_spec = 9w{rng.choice(PORTS)};"]
        if what == "port_expr":
            return [f"{pad}sm.egress_spec = (bit<9>){self.exprs.expr(bit(2), scope, depth=1)};"]
        if what == "mcast":
            return [f"{pad}sm.mcast_grp = 16w{rng.choice(MC_GROUPS + (0,))};"]
        session = rng.choice(CLONE_SESSIONS)
        if ingress:
            return [f"{pad}clone(CloneType.I2E, 32w{session});"]
        # an E2E clone runs egress again: cloning only normal packets keeps it finite
        # (simple_switch would clone clones for ever)
        return [f"{pad}if (sm.instance_type == 32w0) {{",
                f"{pad}    clone(CloneType.E2E, 32w{session});", f"{pad}}}"]

    def _exit(self, scope: Scope, pad: str, indent: int, in_action: bool, depth: int):
        return [f"{pad}exit;"] if depth > 0 or self.rng.random() < 0.3 else []

    def _return(self, scope: Scope, pad: str, indent: int, in_action: bool, depth: int):
        return [f"{pad}return;"] if depth > 0 or self.rng.random() < 0.3 else []

    def _call(self, scope: Scope, pad: str, indent: int, in_action: bool, depth: int):
        callable_ = [a for a in self.control.actions if a.name not in self.not_called]
        if not callable_:
            return []
        action = self.rng.choice(callable_)
        args = [self.exprs.expr(ty, scope, depth=1) for _, ty in action.params]
        if action.bound:
            bound = bound_arguments(self.rng, action, scope)
            if bound is None:
                return []
            args.insert(0, bound)
        return [f"{pad}{action.name}({', '.join(args)});"]

    # --- compound statements ---
    def _if(self, scope: Scope, pad: str, indent: int, in_action: bool, depth: int):
        rng = self.rng
        cond = self.exprs.expr(BOOL, scope)
        lines = [f"{pad}if ({cond}) {{"]
        lines += self.block(scope, rng.randrange(1, 4), indent + 1, in_action=in_action,
                            depth=depth + 1)
        if rng.random() < 0.5:
            lines.append(f"{pad}}} else {{")
            lines += self.block(scope, rng.randrange(1, 3), indent + 1, in_action=in_action,
                                depth=depth + 1)
        lines.append(f"{pad}}}")
        return lines

    def _switch_value(self, scope: Scope, pad: str, indent: int, in_action: bool, depth: int):
        rng = self.rng
        ty = self.exprs.some_type(scope, kind="bit")
        subject = self.exprs.expr(ty, scope, depth=1)
        space = min(1 << ty.width, 16)
        labels = sorted(rng.sample(range(space), rng.randrange(1, min(space, 3) + 1)))
        lines = [f"{pad}switch ({subject}) {{"]
        self._switch_cases += 1
        for label in labels:
            lines.append(f"{pad}    {label}: {{")
            lines += self.block(scope, rng.randrange(0, 3), indent + 2, in_action=in_action,
                                depth=depth + 1)
            lines.append(f"{pad}    }}")
        if rng.random() < 0.6:
            lines.append(f"{pad}    default: {{")
            lines += self.block(scope, rng.randrange(1, 3), indent + 2, in_action=in_action,
                                depth=depth + 1)
            lines.append(f"{pad}    }}")
        self._switch_cases -= 1
        lines.append(f"{pad}}}")
        return lines

    def _apply(self, scope: Scope, pad: str, indent: int, in_action: bool, depth: int):
        rng = self.rng
        if not self.unapplied:
            return self._assign(scope, pad, indent, in_action, depth)
        table = self.unapplied.pop(rng.randrange(len(self.unapplied)))
        form = rng.choice(["plain", "plain", "hit", "miss", "switch"])
        if form == "plain":
            return [f"{pad}{table.name}.apply();"]
        if form in ("hit", "miss"):
            lines = [f"{pad}if ({table.name}.apply().{form}) {{"]
            lines += self.block(scope, rng.randrange(1, 3), indent + 1, in_action=False,
                                depth=depth + 1)
            if rng.random() < 0.4:
                lines.append(f"{pad}}} else {{")
                lines += self.block(scope, 1, indent + 1, in_action=False, depth=depth + 1)
            lines.append(f"{pad}}}")
            return lines
        lines = [f"{pad}switch ({table.name}.apply().action_run) {{"]
        labels = rng.sample(table.actions, rng.randrange(1, len(table.actions) + 1))
        for label in labels:
            lines.append(f"{pad}    {label}: {{")
            lines += self.block(scope, rng.randrange(0, 3), indent + 2, in_action=False,
                                depth=depth + 1)
            lines.append(f"{pad}    }}")
        if len(labels) < len(table.actions) and rng.random() < 0.5:
            lines.append(f"{pad}    default: {{")
            lines += self.block(scope, 1, indent + 2, in_action=False, depth=depth + 1)
            lines.append(f"{pad}    }}")
        lines.append(f"{pad}}}")
        return lines


class NameSource:
    """Fresh names per prefix: l0, l1, ..."""

    def __init__(self):
        self.counts: dict[str, int] = {}

    def fresh(self, prefix: str) -> str:
        n = self.counts.get(prefix, 0)
        self.counts[prefix] = n + 1
        return f"{prefix}{n}"


def bound_arguments(rng: random.Random, action: Action, scope: Scope) -> str | None:
    """Arguments for `action`'s directional parameters, as a table's actions list or a call
    gives them: a writable variable of the type for `inout`, a variable or a literal for `in`;
    None when `scope` has no variable an `inout` one can take."""
    args = []
    for _, direction, ty in action.bound:
        pool = scope.writable(ty) if direction == "inout" else scope.readable(ty)
        if direction == "in" and (not pool or rng.random() < 0.25):
            args.append(literal(rng, ty, interesting_value(rng, ty.width)))
            continue
        if not pool:
            return None
        args.append(rng.choice(pool).name)
    return ", ".join(args)
