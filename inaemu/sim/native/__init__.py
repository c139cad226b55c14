"""The simulator's native core (docs/sim.md, "Cores"): C built at first use by the switch
runtime's route (`p4switch.runtime.cgen.nativebuild.load_source`: the machine's `cc`, Python's
headers, a cache keyed by the source's hash), never a requirement.

So far the event loop (`eventloop.c`, the contract of `inaemu/sim/events.py`'s EventLoop), the
hosts' timers (`hosttimer.c`, `host_node.py`'s Timer), the link directions (`link.c`, `link.py`'s LinkDirection), the switches' ports and service queue
(`switchports.c`, `switch_node.py`'s SwitchNode), host framing (`frames.c`, `frames.py`) and
the hosts' interfaces (`hostport.c`, `host_node.py`'s receive and send), built together as one
module (`module.c`); so are an INA worker's common RESULT (`inasession.c`, `inaworker.c`: the
host's UDP 48879 listener) and the ring's per-segment path (`ringpath.c`), both over the Python
sessions' own fields (`attrs.c`); the rest of the protocols is Python.
`native_classes()` gives the C types with the Python parts of their contract added, or None
with `why_not()` saying why (no compiler, no headers, `INAEMU_NATIVE=0`).
"""

from __future__ import annotations

from pathlib import Path
from typing import NamedTuple

from inaemu.sim.events import Event

# in this order: each part uses what the ones before it define
SOURCES = ("eventloop.c", "hosttimer.c", "link.c", "attrs.c", "switchlock.c", "switchports.c",
           "frames.c", "hostport.c", "ringpath.c", "timerheap.c", "joblanes.c", "inasession.c", "inaworker.c", "module.c")
PREFIX = "inaemu_sim_native_"
# built once per machine, so at -O2 (~2.3 s against -O1's ~1.4 s): 6 % fewer instructions in
# its functions, 1.6 % of a simulated run's (callgrind, 64 x 1 MiB INA)
BUILD_FLAGS = ("-O2",)
_why_not: list[str] = []
_classes: list = []


class NativeClasses(NamedTuple):
    """The native core's event loop, link direction, switch node and host node classes."""

    loop: type
    link: type
    switch: type
    host: type


def source() -> str:
    """The module's C: the parts joined in order (each uses what the ones before define)."""
    here = Path(__file__).parent
    return "\n".join((here / name).read_text() for name in SOURCES)


def native_module():
    """The built C module (its types and frames.c's functions), or None (then `why_not()`)."""
    from p4switch.runtime.cgen import nativebuild
    if not nativebuild.enabled():
        _why_not[:] = ["INAEMU_NATIVE=0"]
        return None
    module = nativebuild.load_source(PREFIX, source(), flags=BUILD_FLAGS)
    if module is None:
        _why_not[:] = [next(iter(nativebuild.why_not.values()), "the build failed")]
    return module


def native_classes() -> NativeClasses | None:
    """The native core's classes, or None (then `why_not()`)."""
    if _classes:
        return _classes[0]
    module = native_module()
    if module is None:
        return None
    from p4switch.runtime.cgen import nativebuild

    from inaemu.sim.native.host import native_host_class
    from inaemu.sim.native.link import native_link_class
    from inaemu.sim.native.switch import native_switch_class

    class NativeEventLoop(module.Loop):
        """`events.EventLoop`'s contract with the heap and `run` in C."""

        def __init__(self, trace: list[str] | None = None):
            super().__init__(trace, Event)

        def record(self, line: str) -> None:
            """Add one line to the trace (prefixed with the time), if tracing."""
            if self.trace is not None:
                self.trace.append(f"{self.now:.9f} {line}")

    # the switches' packets are built into the frames the loop let go of, as the hosts' are
    nativebuild.use_frame_source(module.frame_source)
    _classes.append(NativeClasses(NativeEventLoop, native_link_class(module.Link),
                                  native_switch_class(module.SwitchPorts, module.Ingress,
                                                      getattr(module, "SwitchLock", None)),
                                  native_host_class(module)))
    return _classes[0]


def native_loop_class():
    """The native EventLoop class, or None (then `why_not()`)."""
    classes = native_classes()
    return None if classes is None else classes.loop


def why_not() -> str | None:
    """Why the native core is not available (None: it is, or it was not tried yet)."""
    return _why_not[0] if _why_not else None
