"""Which core runs a simulation's per-frame work: "python" (the reference: events.py, link.py,
switch_node.py, host_node.py as they are) or "native" (inaemu/sim/native: C parts with the same
contract; so far the event loop). Both give the same trace and records for the same arguments
(tests/sim/test_cores.py); scripts/bench_sim_cores.py measures them side by side.
"""

from __future__ import annotations

from inaemu.sim.events import EventLoop

CORES = ("python", "native")


class CoreUnavailable(Exception):
    """The native core was asked for and cannot be built here (the message says why)."""


def make_loop(core: str, trace: list[str] | None = None):
    """The event loop of `core`."""
    if core == "python":
        return EventLoop(trace)
    if core != "native":
        raise ValueError(f"core must be one of {', '.join(CORES)}, got {core!r}")
    from inaemu.sim.native import native_loop_class, why_not
    loop_class = native_loop_class()
    if loop_class is None:
        raise CoreUnavailable(f"the native simulator core is not available: {why_not()}")
    return loop_class(trace)
