"""Exact sums of seeded draws without the GIL, for the ring check's verdicts on a drawing
thread: a block of every rank drawn and added in one C call (`add_drawn`, in
`fastnormals.c`), where NumPy took ~6 calls per rank, each waiting for the GIL
(docs/sim-native.md, "The ring's draws on the drawing thread"). It draws with the checked C
normals of `fast_normals` (NumPy's very values), or with NumPy's own routine where those
checks did not pass. And `add_values`: one rank's values added to the sums in one vectorized
pass, for the INA check, which sums what the workers quantize.

Never a requirement: `add_drawn()` and `add_values()` are None without a compiler, without
NumPy's random library, or with `INAEMU_NATIVE=0`, and the check then draws (and adds) with
NumPy.
"""

from __future__ import annotations

from inaemu.sim.native import fast_normals


def add_drawn():
    """`add_drawn(capsules, count, magnitude, total, abs_total)` (fastnormals.c), or None."""
    built = fast_normals.module()
    return None if built is None else built.add_drawn


def add_values():
    """`add_values(values, total, abs_total)`: `hosts.agent.add_exact` in one vectorized C
    pass (fastnormals.c; NumPy's add converts the float32 values in buffered chunks first),
    the same float64 sums; None where the module is not built (then add_exact itself)."""
    built = fast_normals.module()
    return None if built is None else built.add_values
