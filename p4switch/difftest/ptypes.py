"""The P4 types the generator uses (bit<W>, int<W>, bool) and values of them as P4 literals."""

from __future__ import annotations

import random
from dataclasses import dataclass


@dataclass(frozen=True)
class Ty:
    """`kind` is "bit", "int" or "bool"; `width` is 1 for bool."""
    kind: str
    width: int = 1

    @property
    def is_bool(self) -> bool:
        return self.kind == "bool"

    @property
    def signed(self) -> bool:
        return self.kind == "int"

    def p4(self) -> str:
        return "bool" if self.is_bool else f"{self.kind}<{self.width}>"


BOOL = Ty("bool")


def bit(width: int) -> Ty:
    return Ty("bit", width)


def sint(width: int) -> Ty:
    return Ty("int", width)


# Widths drawn for fields and expressions: small ones often (edge cases are dense there), the
# 32/64 boundaries, and some wider than a machine word (BMv2 uses big integers everywhere).
_WIDTHS = [1, 2, 3, 4, 5, 6, 7, 8, 8, 8, 9, 12, 15, 16, 16, 17, 24, 31, 32, 32, 33, 48, 63, 64,
           65, 72, 128]


def random_width(rng: random.Random, low: int = 1, high: int = 128) -> int:
    choices = [w for w in _WIDTHS if low <= w <= high]
    return rng.choice(choices) if choices else low


def random_scalar(rng: random.Random, low: int = 1, high: int = 128, signed_p: float = 0.25) -> Ty:
    """A bit<W> or int<W> type (int only for W >= 2: int<1> holds just -1 and 0)."""
    w = random_width(rng, low, high)
    if w >= 2 and rng.random() < signed_p:
        return sint(w)
    return bit(w)


def interesting_value(rng: random.Random, width: int) -> int:
    """An unsigned value of `width` bits, often one at an edge (0, 1, max, sign boundary)."""
    top = (1 << width) - 1
    edges = [0, 1, top, top - 1, 1 << (width - 1), (1 << (width - 1)) - 1, 2, 3]
    if rng.random() < 0.45:
        return rng.choice(edges) & top
    if rng.random() < 0.5:
        return rng.randrange(0, min(top, 255) + 1)
    return rng.getrandbits(width)


def literal(rng: random.Random, ty: Ty, value: int | None = None) -> str:
    """A typed P4 literal of `ty` (`8w5`, `(-8s3)`, `true`)."""
    if ty.is_bool:
        return rng.choice(["true", "false"])
    w = ty.width
    v = interesting_value(rng, w) if value is None else value & ((1 << w) - 1)
    if ty.signed:
        s = v - (1 << w) if v >> (w - 1) else v
        if s < 0:
            return f"(-{w}s{-s})" if -s < (1 << (w - 1)) else f"(-{w}s{(1 << (w - 1)) - 1} - 1)"
        return f"{w}s{s}"
    return f"{w}w{v:#x}" if v > 9 else f"{w}w{v}"
