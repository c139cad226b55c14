"""A control node reached from several places is its own function; a short one is copied into
each place instead (controlgen.SMALL_NODE_LINES: a Python call costs as much as a few lines).
The copies must behave as the calls did: a conditional (whose code ends inside a branch) and
a node that continues to a further copied node."""

from __future__ import annotations

from p4switch.runtime import Switch

from .bmv2 import assign, const, eth_frame, ethernet_program, fld, op


def _program():
    prog = ethernet_program()
    prog.header_type("h_t", [("a", 8), ("b", 8), ("c", 8)])
    prog.header("h", "h_t")
    prog.state("start", [prog.extract("eth"), prog.extract("h")])
    a, b = fld("h", "a"), fld("h", "b")
    prog.run("set1", prog.action("set1", [assign(b, const(1))]), "mid")
    prog.run("set2", prog.action("set2", [assign(b, const(2))]), "mid")
    prog.run("set3", prog.action("set3", [assign(b, const(3))]), "mid")
    # shared and short: b == 1 goes on to `out` (shared and short too), else it ends there
    prog.conditional("mid", op("==", b, const(1)), "out", None)
    prog.run("out", prog.action("out", [assign(fld("h", "c"), const(9))]))
    prog.conditional("second", op("==", a, const(1)), "set2", "set3")
    prog.conditional("top", op("==", a, const(0)), "set1", "second")
    prog.start("top")
    return prog.build()


def test_copied_nodes_run_as_the_calls_did():
    sw = Switch(_program())
    source = sw.program.untraced.source
    ingress = source[source.index("def ingress"):].split("\ndef ")[0]
    assert "(f, v)" not in ingress.split(":", 1)[1]          # no call left: all copied
    for a, b, c in ((0, 1, 9), (1, 2, 0), (7, 3, 0)):
        frame = eth_frame(ether_type=0x1234, payload=bytes([a, 0, 0]))
        [(_, out)] = sw.receive(0, frame)
        assert tuple(out[14:17]) == (a, b, c)
