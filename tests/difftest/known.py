"""Disagreements the fixed-seed CI batch is known to show: seed -> kinds. Each is an open entry
in the findings list (F-numbers, /work/coord/difftest_findings.md and docs/difftest.md). Remove
an entry when its bug is fixed; regenerate with `scripts/difftest.py -n 200 --seed 0` whenever
the generator changes (a different generator makes different programs from the same seeds)."""

KNOWN: dict[int, tuple[str, ...]] = {
    # beyond the CI batch (0-299) but found with the same generator: `-n 500 --seed 0`
    # F15: p4c's bug, not inaemu's: `_` on a range key of >= 32 bits in const entries gets a
    # wrong upper end in p4c's JSON (inaemu's JSON is right: tests/compiler/test_range_dont_care)
    210: ("miscompile",),
}
