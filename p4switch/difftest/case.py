"""One differential test case: a P4 program and the STF test that exercises it."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Case:
    seed: int
    source: str                 # P4_16 program (v1model)
    stf: str                    # STF commands, no `expect` lines: the four runs are compared
    expect_valid: bool = True   # False: a mutation made it invalid on purpose
    mutation: str | None = None  # what the mutation did
