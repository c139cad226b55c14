"""Coverage-guided fuzzing harnesses (docs/fuzzing.md).

One module per input surface; each target is a `TestOneInput(data: bytes)` that feeds the
bytes to the real entry point and lets out only that entry point's documented error types
(anything else, or a `Finding` an oracle raises, is a bug). `fuzz.targets.TARGETS` names them.
The harnesses need no fuzzer: `tests/fuzz/test_corpus_replay.py` calls them on the stored
corpus with plain Python; `scripts/fuzz.py` runs them under atheris (the `fuzz` extra).
"""
