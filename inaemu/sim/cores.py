"""Which core runs a simulation's per-frame work: "python" (the reference: events.py, link.py,
switch_node.py, host_node.py as they are) or "native" (inaemu/sim/native: C parts with the same
contract; so far the event loop, the link directions, the switches' ports and the hosts'
framing and interfaces). Both give the
same trace and records for the same arguments (tests/sim/test_cores.py);
scripts/bench_sim_cores.py measures them side by side.
"""

from __future__ import annotations

from typing import NamedTuple

from inaemu.sim.events import EventLoop
from inaemu.sim.host_node import HostNode
from inaemu.sim.link import LinkDirection
from inaemu.sim.switch_node import SwitchNode

CORES = ("python", "native", "auto")


class CoreUnavailable(Exception):
    """The native core was asked for and cannot be built here (the message says why)."""


class CoreClasses(NamedTuple):
    """What a core builds a network from."""

    loop: type
    link: type
    switch: type
    host: type


def core_classes(core: str) -> CoreClasses:
    """The event loop, link direction, switch node and host node classes of `core` ("auto":
    `chosen_core`'s choice)."""
    if core == "auto":
        core = chosen_core(core)[0]
    if core == "python":
        return CoreClasses(EventLoop, LinkDirection, SwitchNode, HostNode)
    if core != "native":
        raise ValueError(f"core must be one of {', '.join(CORES)}, got {core!r}")
    from inaemu.sim.native import native_classes, why_not
    classes = native_classes()
    if classes is None:
        raise CoreUnavailable(f"the native simulator core is not available: {why_not()}")
    return CoreClasses(*classes)


def chosen_core(core: str) -> tuple[str, str | None]:
    """`core` with "auto" resolved: (the core that will run, why not native when "auto" fell
    back to python). "auto" takes the native core where it builds (a C compiler and Python's
    headers: bootstrap.sh installs them), since both cores give the same trace and records,
    and the pure-Python one otherwise rather than failing."""
    if core != "auto":
        return core, None
    from inaemu.sim.native import native_classes, why_not
    if native_classes() is not None:
        return "native", None
    return "python", why_not()


def make_loop(core: str, trace: list[str] | None = None):
    """The event loop of `core`."""
    return core_classes(core).loop(trace)
