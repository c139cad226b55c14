"""Differential testing in CI: a fixed-seed batch of generated programs through real p4c +
simple_switch and through inaemu (compiler and runtime), compared (docs/difftest.md).

Every disagreement in the batch must be a known one (`KNOWN`: seed -> kinds, each tied to an
entry of the findings list); a new disagreement fails the test with the case's details. A known
one that disappears (fixed) is fine. Skipped only where the reference toolchain is absent.
"""

from __future__ import annotations

import random

import pytest

from p4switch.difftest.batch import run_batch, summarize
from p4switch.difftest.exprs import ExprGen
from p4switch.difftest.outcome import UNSPECIFIED
from p4switch.difftest.ptypes import BOOL, bit, sint
from p4switch.difftest.runner import compile_with_p4c
from p4switch.difftest.scope import Scope, Var
from p4switch.reference import find_toolchain

from .known import KNOWN
from .test_generator import _WRAPPER

TOOLCHAIN = find_toolchain()
needs_p4ref = pytest.mark.skipif(TOOLCHAIN is None, reason="reference toolchain not installed")

# 300 cases take about 2 minutes on 2 cores (pytest's limit is 300 s per test): a case waits
# mostly on simple_switch (start, packets), so 4 worker processes keep the 2 cores busier
BATCH = range(0, 300)
PROCESSES = 4


@needs_p4ref
@pytest.mark.timeout(900)   # ~2-4 min; beside the parallel suite's other worker it passed 300 s
def test_fixed_seed_batch_has_only_known_disagreements():
    reports = sorted(run_batch(BATCH, processes=PROCESSES, bmv2=True), key=lambda r: r.seed)
    counts = summarize(reports)
    unknown = []
    for r in reports:
        new = [(k, d) for k, d in zip(r.kinds, r.details)
               if k not in UNSPECIFIED and k not in KNOWN.get(r.seed, ())]
        unknown += [f"seed {r.seed}: {k}\n{d[:1500]}" for k, d in new]
    assert not unknown, ("new disagreements (reproduce: scripts/difftest.py --seed N -n 1):\n"
                         + "\n\n".join(unknown))
    # the generator stays useful: p4c accepts nearly all cases meant valid, and rejects every
    # case made invalid on purpose
    valid = counts["valid by construction"]
    assert counts["both reject a case meant valid (generator)"] <= valid // 20, counts
    assert counts["p4c accepts a mutation (generator)"] == 0, counts
    assert counts["invalid on purpose"] > 0 and valid > 0.85 * len(BATCH)
    # and the oracle ran nearly every case (else nothing was compared)
    oracle_errors = [f"seed {r.seed}: {r.oracle_error[:300]}" for r in reports if r.oracle_error]
    assert counts["simple_switch could not run the STF on p4c's JSON (not compared)"] \
        <= len(BATCH) // 20, (counts, oracle_errors)     # why each could not: the texts


_TYPES = [bit(1), bit(8), bit(13), bit(64), bit(100), sint(8), sint(33), BOOL]


@needs_p4ref
@pytest.mark.parametrize("seed", range(4))
def test_p4c_accepts_generated_expressions(seed, tmp_path):
    """The expression generator's typing rules are p4c's: deep expressions of every type,
    assigned to variables of that type, compile with p4c."""
    rng = random.Random(seed)
    scope = Scope([Var(f"meta.v{i}", ty) for i, ty in enumerate(_TYPES)])
    gen = ExprGen(rng, max_depth=4)
    lines = [f"meta.v{i} = {gen.expr(ty, scope)};" for _ in range(4)
             for i, ty in enumerate(_TYPES)]
    fields = " ".join(f"{ty.p4()} v{i};" for i, ty in enumerate(_TYPES))
    source = _WRAPPER.replace("FIELDS", fields).replace("BODY", "\n        ".join(lines))
    compiled = compile_with_p4c(source, tmp_path, TOOLCHAIN)
    assert compiled.accepted, compiled.message
