"""Deliberately invalid programs: one bad statement (or declaration) put into a valid one.

Each mutation breaks a rule every P4_16 compiler must enforce, so p4c and inaemu must both
reject the result; `mutate` returns the new source and a short description of the mutation.
"""

from __future__ import annotations

import random

from .model import Program
from .ptypes import Ty


def mutate(source: str, program: Program, rng: random.Random) -> tuple[str, str]:
    fields = [(f"{e}.{f}", ty) for h in program.headers for e in h.elements()
              for f, ty in h.fields]
    fields += [(f"meta.{n}", ty) for n, ty in program.meta]
    kinds = [_undeclared, _width_mismatch, _sign_mismatch, _bad_slice, _non_bool_condition,
             _bool_arith, _unknown_action, _duplicate_local, _missing_semicolon,
             _signed_shift_amount, _unknown_table, _wrong_arity]
    for _ in range(20):
        line, what = rng.choice(kinds)(rng, fields, program)
        if line:
            return _insert_in_ingress(source, line), what
    return _insert_in_ingress(source, "undeclared_x = 1;"), "assignment to an undeclared name"


def _insert_in_ingress(source: str, line: str) -> str:
    start = source.index("control I(")
    apply_at = source.index("    apply {\n", start) + len("    apply {\n")
    return source[:apply_at] + "        " + line + "\n" + source[apply_at:]


def _scalar(fields, pred) -> list[tuple[str, Ty]]:
    return [(n, t) for n, t in fields if not t.is_bool and pred(t)]


def _undeclared(rng, fields, program):
    name = rng.choice(["undeclared_x", "meta.no_such_field", "hdr.no_such_header.f0"])
    return f"{name} = 1;", f"use of an undeclared name ({name})"


def _width_mismatch(rng, fields, program):
    pool = _scalar(fields, lambda t: True)
    if len(pool) < 2:
        return None, ""
    (a, ta), (b, tb) = rng.sample(pool, 2)
    if ta.width == tb.width:
        return None, ""
    return f"{a} = {b};", f"assignment between {ta.p4()} and {tb.p4()} without a cast"


def _sign_mismatch(rng, fields, program):
    pool = _scalar(fields, lambda t: t.width >= 2)
    if not pool:
        return None, ""
    name, ty = rng.choice(pool)
    other = ("int" if ty.kind == "bit" else "bit") + f"<{ty.width}>"
    return f"{name} = ({other})0;", f"assignment of {other} to {ty.p4()} without a cast"


def _bad_slice(rng, fields, program):
    pool = _scalar(fields, lambda t: t.kind == "bit")
    if not pool:
        return None, ""
    name, ty = rng.choice(pool)
    return f"{name}[{ty.width + 1}:0] = 0;", f"slice beyond the width of {ty.p4()}"


def _non_bool_condition(rng, fields, program):
    pool = _scalar(fields, lambda t: t.width > 1)
    if not pool:
        return None, ""
    name, ty = rng.choice(pool)
    return f"if ({name}) {{ mark_to_drop(sm); }}", f"{ty.p4()} used as a condition"


def _bool_arith(rng, fields, program):
    pool = _scalar(fields, lambda t: True)
    if not pool:
        return None, ""
    name, ty = rng.choice(pool)
    return f"{name} = {name} + true;", "arithmetic on a bool"


def _unknown_action(rng, fields, program):
    return "no_such_action();", "call of an undeclared action"


def _unknown_table(rng, fields, program):
    return "no_such_table.apply();", "apply of an undeclared table"


def _duplicate_local(rng, fields, program):
    return "bit<8> dup_local = 1; bit<8> dup_local = 2;", "a local declared twice"


def _missing_semicolon(rng, fields, program):
    pool = _scalar(fields, lambda t: True)
    if not pool:
        return None, ""
    name, _ = rng.choice(pool)
    return f"{name} = {name}", "missing semicolon (syntax error)"


def _signed_shift_amount(rng, fields, program):
    pool = _scalar(fields, lambda t: t.kind == "bit")
    signed = _scalar(fields, lambda t: t.kind == "int")
    if not pool or not signed:
        return None, ""
    (a, _), (b, _) = rng.choice(pool), rng.choice(signed)
    return f"{a} = {a} << {b};", "shift by a signed amount"


def _wrong_arity(rng, fields, program):
    actions = program.ingress.actions
    if not actions:
        return None, ""
    action = rng.choice(actions)
    args = ", ".join(["1"] * (len(action.bound) + len(action.params) + 1))
    return f"{action.name}({args});", "action called with one argument too many"
