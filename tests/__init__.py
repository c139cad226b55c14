"""The test suite (a package, so `tests` is never another distribution's `tests`: IPython ships one
that p4runtime-shell's shell puts on sys.path)."""
