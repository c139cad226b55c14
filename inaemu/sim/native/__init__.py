"""The simulator's native core (docs/sim.md, "Cores"): C built at first use by the switch
runtime's route (`p4switch.runtime.cgen.nativebuild.load_source`: the machine's `cc`, Python's
headers, a cache keyed by the source's hash), never a requirement.

So far the event loop (`eventloop.c`, the contract of `inaemu/sim/events.py`'s EventLoop);
links, switch ports, host framing and the sessions' per-packet paths are still Python.
`native_loop_class()` is the C loop with the Python parts of the contract added, or None with
`why_not()` saying why (no compiler, no headers, `INAEMU_NATIVE=0`).
"""

from __future__ import annotations

from pathlib import Path

from inaemu.sim.events import Event

SOURCE = Path(__file__).with_name("eventloop.c")
PREFIX = "inaemu_sim_native_"
_why_not: list[str] = []
_class: list = []


def _module():
    from p4switch.runtime.cgen import nativebuild
    if not nativebuild.enabled():
        _why_not[:] = ["INAEMU_NATIVE=0"]
        return None
    module = nativebuild.load_source(PREFIX, SOURCE.read_text())
    if module is None:
        _why_not[:] = [next(iter(nativebuild.why_not.values()), "the build failed")]
    return module


def native_loop_class():
    """The native EventLoop class, or None (then `why_not()`)."""
    if _class:
        return _class[0]
    module = _module()
    if module is None:
        return None

    class NativeEventLoop(module.Loop):
        """`events.EventLoop`'s contract with the heap and `run` in C."""

        def __init__(self, trace: list[str] | None = None):
            super().__init__(trace, Event)

        def record(self, line: str) -> None:
            """Add one line to the trace (prefixed with the time), if tracing."""
            if self.trace is not None:
                self.trace.append(f"{self.now:.9f} {line}")

    _class.append(NativeEventLoop)
    return NativeEventLoop


def why_not() -> str | None:
    """Why the native core is not available (None: it is, or it was not tried yet)."""
    return _why_not[0] if _why_not else None
