"""Every stored corpus input through its harness, with plain Python (no atheris): what CI runs
of the fuzzing (docs/fuzzing.md). A harness lets out only its target's documented error types,
so any exception here is a finding coming back."""

from __future__ import annotations

import pytest

from fuzz.targets import TARGETS, corpus_dir, harness


@pytest.mark.parametrize("target", sorted(TARGETS))
def test_corpus_replays_cleanly(target):
    files = sorted(p for p in corpus_dir(target).iterdir() if p.is_file())
    assert files, f"fuzz/corpus/{target} is empty (scripts/fuzz.py --seed writes the seeds)"
    test_one_input = harness(target)
    for path in files:
        try:
            test_one_input(path.read_bytes())
        except Exception as exc:
            exc.add_note(f"replaying fuzz/corpus/{target}/{path.name}")
            raise
