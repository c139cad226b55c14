"""Exact sums of seeded draws without the GIL (`exactsums.c`), for the ring check's verdicts
on a drawing thread: a block of every rank drawn and added in one C call, where NumPy took ~6
calls per rank, each waiting for the GIL (docs/sim-native.md, "The ring's draws on the
drawing thread").

Built at first use like the native core (`nativebuild.load_source`), linked with NumPy's
`libnpyrandom.a` (the library NumPy ships for C code that draws as its generators do). Never
a requirement: `add_drawn()` is None without a compiler, without that library, or with
`INAEMU_NATIVE=0`, and the check then draws with NumPy.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np

PREFIX = "inaemu_exact_sums_"
_loaded: list = []


def libraries() -> tuple[str, ...] | None:
    """The linker's arguments for NumPy's random library, or None when NumPy has none."""
    random_lib = Path(np.__file__).parent / "random" / "lib"
    if not (random_lib / "libnpyrandom.a").exists():
        return None
    link = [f"-L{random_lib}", "-lnpyrandom"]
    for core in ("_core", "core"):                    # (NumPy 2's name, then 1's)
        math_lib = Path(np.__file__).parent / core / "lib"
        if (math_lib / "libnpymath.a").exists():
            link += [f"-L{math_lib}", "-lnpymath"]
            break
    return (*link, "-lm")


def add_drawn():
    """`add_drawn(capsules, count, magnitude, total, abs_total)` (exactsums.c), or None."""
    if not _loaded:
        _loaded.append(_load())
    return _loaded[0]


def _load():
    from p4switch.runtime.cgen import nativebuild
    link = libraries()
    if link is None or not nativebuild.enabled():
        return None
    source = (Path(__file__).parent / "exactsums.c").read_text()
    module = nativebuild.load_source(PREFIX, source, link)
    return None if module is None else module.add_drawn
