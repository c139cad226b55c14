"""What a piece of generated code can name: variables with their types and whether they can be
assigned, plus the stateful objects (registers, counters, tables) of the enclosing control."""

from __future__ import annotations

import random
from dataclasses import dataclass, field

from .ptypes import Ty


@dataclass(frozen=True)
class Var:
    name: str           # as written in P4: "hdr.h0.f1", "meta.m2", "l3", "p0"
    ty: Ty
    writable: bool = True
    header: str | None = None   # "hdr.h0" for header fields (validity matters to the reader)


@dataclass
class Scope:
    vars: list[Var] = field(default_factory=list)

    def child(self) -> "Scope":
        return Scope(list(self.vars))

    def add(self, var: Var) -> None:
        self.vars.append(var)

    def readable(self, ty: Ty | None = None) -> list[Var]:
        return [v for v in self.vars if ty is None or v.ty == ty]

    def writable(self, ty: Ty | None = None) -> list[Var]:
        return [v for v in self.vars if v.writable and (ty is None or v.ty == ty)]

    def pick(self, rng: random.Random, ty: Ty | None = None, writable: bool = False) -> Var | None:
        pool = self.writable(ty) if writable else self.readable(ty)
        return rng.choice(pool) if pool else None
