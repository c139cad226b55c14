"""scripts/profile_sim.py reads a profile per code object: every switch runs its own copy of
the generated fast path under one (file, line, name), and pstats kept only one copy's time,
which once made the switch runtime 1.7 % of a run that spent 30 % in it."""

from __future__ import annotations

import cProfile
import pstats

from tests.conftest import load_script


SOURCE = """
def fast(n):
    total = 0
    for i in range(n):
        total += i * i
    return total
"""


def copies(count: int):
    """`count` functions of one name from one source, each its own code object, as the
    switches' fast paths are."""
    functions = []
    for _ in range(count):
        namespace: dict = {}
        exec(compile(SOURCE, "<p4switch fast path>", "exec"), namespace)  # noqa: S102
        functions.append(namespace["fast"])
    return functions


def test_code_copies_add_up_and_count_as_the_runtime():
    script = load_script("profile_sim")
    functions = copies(8)
    profiler = cProfile.Profile()
    profiler.enable()
    for function in functions:
        function(20000)
    profiler.disable()
    ours = script.CodeStats(profiler)
    mine = [key for key in ours.stats if key[2] == "fast"]
    assert len(mine) == 8                                   # one entry per copy
    assert sum(ours.stats[key][1] for key in mine) == 8     # eight calls in all
    merged = [key for key in pstats.Stats(profiler).stats if key[2] == "fast"]
    assert len(merged) == 1                                 # what pstats keeps: one copy
    assert pstats.Stats(profiler).stats[merged[0]][1] == 1
    totals = script.attribute(ours)
    own = sum(ours.stats[key][2] for key in mine)
    assert totals.get("switch runtime", 0.0) >= 0.99 * own > 0
