"""The differential corpus holds every ina.p4 case: the tree case, built by tests/ina's STF
generator, was once dropped without a word when its import failed under pytest."""

from __future__ import annotations

from .corpus import all_cases


def test_every_ina_case_is_in_the_corpus():
    names = {case.name for case in all_cases()}
    assert {"p4src/ina_k4", "p4src/ina_tree_k4", "p4src/ina_k32"} <= names
